"""The bundled demo (``memloci/data/demo.jsonl`` loaded by ``memloci.interfaces.demo``):
it fills every kind of record the web UI shows, with no near-duplicate facts."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from memloci import Memory
from memloci.errors import ValidationError
from memloci.interfaces.demo import DEMO_USER, demo_records, load_demo
from memloci.models import EntityInfo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    memory = Memory(str(path), embedder="local")
    loaded = load_demo(memory)
    assert (loaded.turns, loaded.sessions, loaded.facts) == (36, 3, 12)
    assert (loaded.updates, loaded.corrections, loaded.procedures) == (1, 1, 2)
    memory.embed_pending()
    yield memory
    memory.close()


def test_every_kind_of_record_is_filled(demo: Memory) -> None:
    svc = demo.service
    facts = demo.list(type="semantic", limit=100)
    assert len(facts) == 12 and all(f.user == DEMO_USER for f in facts)
    assert len(demo.list(type="episodic", limit=100)) == 36
    procedures = demo.list(type="procedural", limit=10)
    assert sum(p.procedure is not None and bool(p.procedure.triggers) for p in procedures) == 1
    threads = demo._call(svc.records.list_threads())
    assert [(t.id, t.message_count) for t in threads] == [("telegram-sam-2024-04-06", 12)]
    sam = demo._call(svc.records.find_user("email", "sam.rivera@example.com"))
    assert sam is not None and sam.id == "sam" and set(sam.identifiers) == {"telegram", "email"}
    entities = demo._call(svc.records.list_entities(limit=50))
    kinds = {e.type.value for e in entities}
    assert {"person", "organization", "project", "place"} <= kinds and len(entities) == 8
    assert all(e.summary for e in entities)


def test_the_entities_form_a_graph_not_a_star(demo: Memory) -> None:
    svc = demo.service
    linked: dict[str, EntityInfo] = {}
    for name in ("Sam", "Solara", "Pixel", "Lisbon", "Marta Silva", "Skylark"):
        info = demo._call(svc.records.entity_info(name))
        linked[name] = info
        assert len(info.memories) >= 2, name  # each is linked to several memories
    solara_related = {r.entity.canonical_name for r in linked["Solara"].related}
    assert {"Sam", "Marta Silva", "Lisbon"} <= solara_related
    pixel_related = {r.entity.canonical_name for r in linked["Pixel"].related}
    assert {"Sam", "Sintra"} <= pixel_related


def test_facts_are_derived_from_their_turns(demo: Memory) -> None:
    manager = demo.lookup("manager", user=DEMO_USER)
    assert manager is not None
    explained = demo._call(demo.service.records.explain(manager.id))
    sources = [n.content for n in explained.sources]
    assert sources == ["My manager is Marta Silva, the head of data. She hired me while I was "
                       "still in Manchester."]  # fmt: skip


def test_one_fact_was_versioned_and_one_corrected(demo: Memory) -> None:
    job = demo.lookup("job", user=DEMO_USER)
    assert job is not None and job.version == 2
    versions = demo.history(job.id)
    contents = {v.content for v in versions}
    assert "Sam is a data engineer at Solara, a solar energy startup" in contents
    assert job.content in contents and len(contents) == 2
    office = demo.list(type="semantic", limit=100, include_forgotten=True)
    old = [n for n in office if n.key == "office" and n.valid_until is not None]
    new = demo.lookup("office", user=DEMO_USER)
    assert len(old) == 1 and "Cais do Sodré" in old[0].content
    assert new is not None and "Alcântara" in new.content


def test_no_two_current_facts_are_near_duplicates(demo: Memory) -> None:
    facts = demo.list(type="semantic", limit=100)
    embedder = demo.service.embedder
    assert embedder is not None
    vectors = embedder.embed([f.content for f in facts])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    worst = max(
        (float(vectors[i] @ vectors[j]), facts[i].content, facts[j].content)
        for i, j in combinations(range(len(facts)), 2)
    )
    assert worst[0] < 0.8, worst  # the store's duplicate threshold is 0.92
    words = [set(f.content.casefold().split()) for f in facts]
    for a, b in combinations(words, 2):
        assert len(a & b) / len(a | b) < 0.5


def test_every_record_kind_is_known(tmp_path: Path) -> None:
    kinds = {rec["kind"] for rec in demo_records()}
    assert kinds == {"meta", "user", "merge_users", "turn", "entity", "fact", "update",
                     "correct", "procedure", "thread"}  # fmt: skip
    with Memory(str(tmp_path / "bad.db"), embedder="none") as memory:
        from memloci.interfaces.demo import _Loader

        with pytest.raises(ValidationError, match="unknown demo record kind"):
            _Loader(memory, DEMO_USER).apply({"kind": "nonsense"})
        with pytest.raises(ValidationError, match="no fact under key"):
            _Loader(memory, DEMO_USER).apply({"kind": "update", "key": "job", "content": "x"})
        assert memory.list(limit=1, include_forgotten=True) == []
