"""Consolidation: episodes → facts in one transaction, idempotent, provenance, conflicts
(supersession), entity resolution, the session-switch trigger and ``memory consolidate``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from consolidation_helpers import Scripted, counts, fact, turns
from typer.testing import CliRunner

from memloci import Memory
from memloci.consolidation.base import ExtractedEntity, ExtractedFact, Extraction
from memloci.consolidation.entities import EntityResolver, compatible, name_words
from memloci.consolidation.llm_extractor import LLMExtractor
from memloci.interfaces.cli import app
from memloci.models import EdgeType, EntityType, FactType, MemoryNode, NodeType, utcnow
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.fixture
def mem(make_memory: MakeMemory) -> Memory:
    """No background consolidation on session switches: each test decides when."""
    return make_memory(consolidate_on_session_switch=False)


@pytest.fixture
def live(make_memory: MakeMemory) -> Memory:
    """The default: a new session consolidates the user's previous ones."""
    return make_memory()


# ---------------------------------------------------------------------- rule-based path
@both_backends
def test_rules_turn_a_session_into_facts_with_provenance(mem: Memory) -> None:
    eps = turns(mem, "s1", "Alec is my boss by the way", "I prefer tea over coffee")
    report = mem._call(mem.service.consolidation.consolidate("s1"))
    assert report.sessions == ["s1"] and report.extractor == "rules"
    assert report.episodes == 2 and len(report.created) == 2 and not report.failed
    facts = {n.content: n for n in mem.list(user="sam", type=["semantic", "opinion"])}
    boss = facts["Alec is the user's boss"]
    assert boss.type is NodeType.SEMANTIC and boss.user == "sam" and boss.session == "s1"
    why = mem._call(mem.service.records.explain(boss.id))
    assert [s.id for s in why.sources] == [eps[0].id]  # derived_from: fact → episode
    assert [e.canonical_name for e in why.entities] == ["Alec"]
    derived = [e for e in why.edges if e.relation is EdgeType.DERIVED_FROM]
    assert [(e.source_id, e.target_id) for e in derived] == [(boss.id, eps[0].id)]
    info = mem._call(mem.service.records.entity_info("alec"))  # the episode is linked too
    assert {m.id for m in info.memories} == {boss.id, eps[0].id}
    assert mem.stats().pending_sessions == 0
    assert mem.get(eps[0].id).consolidated_at is not None


@both_backends
def test_consolidating_twice_creates_nothing_new(mem: Memory) -> None:
    turns(mem, "s1", "Alec is my boss by the way", "I work at Solara")
    first = mem._call(mem.service.consolidation.consolidate())
    assert first.sessions == ["s1"] and first.created
    before = counts(mem)
    again = mem._call(mem.service.consolidation.consolidate())
    assert again.sessions == [] and again.created == []
    explicit = mem._call(mem.service.consolidation.consolidate("s1"))
    assert explicit.skipped == ["s1"] and explicit.created == []
    assert counts(mem) == before


@both_backends
def test_new_turns_in_a_consolidated_session_are_consolidated_alone(mem: Memory) -> None:
    turns(mem, "s1", "Alec is my boss by the way")
    mem._call(mem.service.consolidation.consolidate("s1"))
    turns(mem, "s1", "I prefer green tea")
    report = mem._call(mem.service.consolidation.consolidate("s1"))
    assert report.episodes == 1 and len(report.created) == 1


def test_duplicate_fact_confirms_the_known_one(mem: Memory) -> None:
    known = mem.remember("User prefers tea over coffee", user="sam", type="opinion").memory
    turns(mem, "s1", "I prefer tea over coffee")
    again = fact("user prefers tea  over coffee", type="opinion")  # case, spaces folded
    report = mem._call(
        mem.service.consolidation.consolidate("s1", extractor=Scripted({"s1": [again]}))
    )
    assert report.created == [] and report.confirmed == 1
    assert mem.get(known.id).times_confirmed == 1
    assert mem._call(mem.service.records.explain(known.id)).sources  # provenance added


# ---------------------------------------------------------------------- conflicts
@both_backends
def test_a_changed_key_supersedes_the_old_fact_and_keeps_both(mem: Memory) -> None:
    old_text, new_text = "Sarah works on the Platform team", "Sarah works on the Design team"
    turns(mem, "s1", "Sarah is on Platform")
    turns(mem, "s2", "Sarah moved to Design")
    script = Scripted(
        {"s1": [fact(old_text, key="sarah_team", subject="Sarah")],
         "s2": [fact(new_text, key="sarah_team", subject="Sarah")]}
    )  # fmt: skip
    mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    old = mem.lookup("sarah_team", user="sam")
    assert old is not None and old.content == old_text
    report = mem._call(mem.service.consolidation.consolidate("s2", extractor=script))
    assert report.superseded == [old.id] and len(report.created) == 1
    new = mem.lookup("sarah_team", user="sam")
    assert new is not None and new.content == new_text and new.id != old.id
    assert mem.get(old.id).valid_until is not None  # history kept, no longer current
    current = [n.content for n in mem.list(user="sam", type="semantic")]
    assert current == [new_text]
    every = [n.content for n in mem.list(user="sam", type="semantic", include_forgotten=True)]
    assert sorted(every) == sorted([old_text, new_text])
    why = mem._call(mem.service.records.explain(new.id))
    assert [n.id for n in why.supersedes] == [old.id]
    assert mem._call(mem.service.records.explain(old.id)).superseded_by.id == new.id  # type: ignore[union-attr]


def test_a_flagged_correction_supersedes_the_same_subject(mem: Memory) -> None:
    old = mem.remember("Sarah works on the Platform team", subject="Sarah", user="sam",
                       category="person").memory  # fmt: skip
    turns(mem, "s1", "Actually Sarah is in Design now")
    fixed = fact("Sarah works on the Design team", subject="Sarah", fact_type="correction")
    report = mem._call(
        mem.service.consolidation.consolidate("s1", extractor=Scripted({"s1": [fixed]}))
    )
    assert report.superseded == [old.id]
    assert mem.get(old.id).valid_until is not None
    assert [n.content for n in mem.list(user="sam")] == [
        "Actually Sarah is in Design now",
        "Sarah works on the Design team",
    ]


def test_two_values_for_one_key_in_one_batch_end_with_the_last(mem: Memory) -> None:
    turns(mem, "s1", "I live in Paris", "no wait, I moved to Berlin")
    script = Scripted({"s1": [fact("User lives in Paris", key="home_city"),
                              fact("User lives in Berlin", key="home_city")]})  # fmt: skip
    report = mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    assert len(report.created) == 2 and len(report.superseded) == 1
    found = mem.lookup("home_city", user="sam")
    assert found is not None and found.content == "User lives in Berlin"


def test_procedures_and_opinions_keep_their_type(mem: Memory) -> None:
    turns(mem, "s1", "From now on, always answer in French")
    script = Scripted({"s1": [fact("Always answer in French", type="procedural"),
                              fact("User likes French", type="opinion")]})  # fmt: skip
    mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    (proc,) = mem.list(type="procedural")
    assert proc.procedure is not None and proc.user == "sam"
    assert [n.content for n in mem.list(type="opinion")] == ["User likes French"]


# ---------------------------------------------------------------------- failures
class GarbageLLM:
    """A local fake LLM whose replies are never the JSON asked for."""

    model_id = "garbage"

    def __init__(self, reply: str = "Sure! Here are the facts: {oops, not json]]") -> None:
        self.reply, self.calls = reply, 0

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> str:
        self.calls += 1
        return self.reply


@pytest.mark.parametrize("reply", ["not json at all", '{"facts": "nope"}', "[1, 2, 3]", ""])
def test_a_malformed_llm_reply_changes_nothing(mem: Memory, reply: str) -> None:
    eps = turns(mem, "s1", "Alec is my boss by the way", "I prefer tea over coffee")
    before = counts(mem)
    llm = GarbageLLM(reply)
    report = mem._call(mem.service.consolidation.consolidate("s1", extractor=LLMExtractor(llm)))
    assert llm.calls >= 1
    assert report.failed and "s1" in report.failed and report.sessions == []
    assert counts(mem) == before
    assert all(mem.get(e.id).consolidated_at is None for e in eps)
    assert [p.session for p in mem._call(mem.service.consolidation.pending_sessions())] == ["s1"]
    # the rules still work afterwards: nothing was half-written
    assert mem._call(mem.service.consolidation.consolidate("s1")).sessions == ["s1"]


@both_backends
def test_a_store_error_mid_transaction_rolls_everything_back(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns(mem, "s1", "Alec is my boss by the way")
    before = counts(mem)

    def broken(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(mem.service.store.entities, "link_entities", broken)
    report = mem._call(mem.service.consolidation.consolidate("s1"))
    assert report.failed == {"s1": "disk full"}
    assert counts(mem) == before and mem.stats().pending_sessions == 1


def test_an_extractor_that_raises_leaves_the_session_pending(mem: Memory) -> None:
    turns(mem, "s1", "hello there")

    class Broken:
        name = "broken"

        def extract(self, episodes: Sequence[MemoryNode], *, known: Any = ()) -> Extraction:
            raise ValueError("model went away")

    report = mem._call(mem.service.consolidation.consolidate(extractor=Broken()))
    assert report.failed == {"s1": "model went away"} and mem.stats().pending_sessions == 1


def test_invalid_facts_are_rejected_and_the_rest_stored(mem: Memory) -> None:
    turns(mem, "s1", "hello there")
    bad = ExtractedFact.model_construct(content="x", type="semantic", category="general",
                                        confidence=0.5, source_ids=[], entities=[])  # fmt: skip
    script = Scripted({"s1": [bad, fact("User says hello a lot")]})
    report = mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    assert report.rejected == 1 and len(report.created) == 1


# ---------------------------------------------------------------------- entities
def test_name_words_and_compatibility() -> None:
    assert name_words("Sarah K.") == ["sarah", "k"]
    assert compatible(["sarah", "k"], ["sarah", "king"]) and compatible(["sarah"], ["sarah", "k"])
    assert not compatible(["sarah", "k"], ["sarah", "lee"])
    assert not compatible(["sara"], ["sarah"])


def test_entity_resolution_merges_sarah_variants(mem: Memory) -> None:
    store, now = mem.service.store, utcnow()
    resolver = EntityResolver(store, "default", now=now)
    with store.batch():
        first = resolver.resolve("Sarah", EntityType.PERSON)
        second = resolver.resolve("Sarah K.", EntityType.PERSON)  # same run, uncommitted
    later = EntityResolver(store, "default", now=now)
    with store.batch():
        third = later.resolve("sarah")
        fourth = later.resolve("SARAH K")
    assert first.id == second.id == third.id == fourth.id
    (entity,) = mem._call(mem.service.records.list_entities())
    assert entity.canonical_name == "Sarah" and entity.aliases == ["Sarah K."]
    assert entity.mention_count == 4 and entity.type is EntityType.PERSON


def test_a_conflicting_initial_is_another_person(mem: Memory) -> None:
    store = mem.service.store
    with store.batch():
        resolver = EntityResolver(store, "default", now=utcnow())
        k = resolver.resolve("Sarah K.", EntityType.PERSON)
        lee = resolver.resolve("Sarah Lee", EntityType.PERSON)
        king = resolver.resolve("Sarah King", EntityType.PERSON)
    assert k.id != lee.id and king.id == k.id
    # "Sarah" alone could be either: it matches neither
    assert EntityResolver(store, "default", now=utcnow()).match("Sarah") is None
    assert EntityResolver(store, "default", now=utcnow()).match("sarah k") is not None


class NameEmbedder:
    """Names in the same group get the same vector (a stand-in for a real model)."""

    model_id, dimension = "names:4", 4
    GROUPS: ClassVar[dict[str, int]] = {"acme corp": 0, "acme corporation": 0, "acme hq": 0}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, self.GROUPS.get(" ".join(text.lower().split()), 3 - (i % 2))] = 1.0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def test_embedding_similarity_resolves_names_of_the_same_type(make_memory: MakeMemory) -> None:
    m = make_memory(embedder=NameEmbedder())
    store = m.service.store
    first = EntityResolver(store, "default", now=utcnow(), embedder=NameEmbedder())
    first.prepare(["Acme Corp"])
    with store.batch():
        acme = first.resolve("Acme Corp", EntityType.ORGANIZATION)
    second = EntityResolver(store, "default", now=utcnow(), embedder=NameEmbedder())
    second.prepare(["Acme Corporation", "Acme HQ"])
    with store.batch():
        same = second.resolve("Acme Corporation", EntityType.ORGANIZATION)
        other_type = second.resolve("Acme HQ", EntityType.PLACE)  # same vector, other type
    assert same.id == acme.id and other_type.id != acme.id
    assert "Acme Corporation" in m._call(m.service.records.get_entity(acme.id)).aliases


class OtherNameEmbedder(NameEmbedder):
    """The same groups under another model id: a store after ``memloci reembed``."""

    model_id = "other-names:4"


def test_entities_without_a_vector_of_the_model_are_embedded_and_matched(
    make_memory: MakeMemory,
) -> None:
    # an entity made under another model (or none) has no vector of this one: before,
    # "Acme Corporation" became a second entity after switching models
    m = make_memory(embedder=NameEmbedder())
    store = m.service.store
    first = EntityResolver(store, "default", now=utcnow(), embedder=NameEmbedder())
    first.prepare(["Acme Corp"])
    with store.batch():
        acme = first.resolve("Acme Corp", EntityType.ORGANIZATION)
    assert store.jobs.entity_vectors("default", "other-names:4") == {}
    later = EntityResolver(store, "default", now=utcnow(), embedder=OtherNameEmbedder())
    later.prepare(["Acme Corporation"])
    assert set(store.jobs.entity_vectors("default", "other-names:4")) == {acme.id}
    with store.batch():
        assert later.resolve("Acme Corporation", EntityType.ORGANIZATION).id == acme.id


def test_consolidation_resolves_entities_across_sessions(mem: Memory) -> None:
    turns(mem, "s1", "Sarah joined today")
    turns(mem, "s2", "Sarah K. sent the report")
    turns(mem, "s3", "sarah is great")
    mem.flush(10)  # the embedding worker links known names in turns: let it finish first
    script = Scripted({
        "s1": [fact("Sarah joined the team", entities=["Sarah"])],
        "s2": [fact("Sarah K. sent the report", entities=["Sarah K."])],
        "s3": [fact("User thinks Sarah is great", type="opinion", entities=["sarah"])],
    }, entity_type="person")  # fmt: skip
    report = mem._call(mem.service.consolidation.consolidate(extractor=script))
    assert report.sessions == ["s1", "s2", "s3"] and report.entities_created == 1
    (sarah,) = mem._call(mem.service.records.list_entities())
    assert sarah.mention_count == 3 and sarah.aliases == ["Sarah K."]
    assert (
        len(mem._call(mem.service.records.entity_info(sarah.id)).memories) == 6
    )  # 3 facts, 3 turns


# ---------------------------------------------------------------------- triggers
def test_a_new_session_consolidates_the_previous_one_in_the_background(live: Memory) -> None:
    turns(live, "s1", "Alec is my boss by the way")
    assert live.list(type="semantic") == []
    turns(live, "s2", "Good morning")
    assert live.service.consolidation.wait_for_consolidation(10)
    assert [n.content for n in live.list(type="semantic")] == ["Alec is the user's boss"]
    assert [p.session for p in live._call(live.service.consolidation.pending_sessions())] == ["s2"]


def test_a_new_process_on_the_same_file_consolidates_the_last_session(
    make_memory: MakeMemory,
) -> None:
    first = make_memory()
    turns(first, "s1", "I prefer tea over coffee")
    first.close()
    second = make_memory()
    turns(second, "s2", "Hello again")
    assert second.service.consolidation.wait_for_consolidation(10)
    assert [n.content for n in second.list(type="opinion")] == ["User prefers tea over coffee"]


def test_other_users_sessions_are_left_alone(live: Memory) -> None:
    turns(live, "a1", "Alec is my boss by the way", user="ann")
    turns(live, "s1", "Hello", user="sam")
    turns(live, "s2", "Hello again", user="sam")
    assert live.service.consolidation.wait_for_consolidation(10)
    pending = sorted(p.session for p in live._call(live.service.consolidation.pending_sessions()))
    assert pending == ["a1", "s2"]


def test_background_consolidation_waits_while_a_search_runs(live: Memory) -> None:
    """On CPython a busy background thread makes a search wait for the interpreter lock
    after each database call: the session waits until searches pause."""
    svc = live.service
    turns(live, "s1", "Alec is my boss by the way")
    with svc.consolidation.foreground():  # a search is running for as long as this block lasts
        turns(live, "s2", "Good morning")
        assert not svc.consolidation.wait_for_consolidation(1.0)  # held back, not lost
        assert live.list(type="semantic") == []
    assert svc.consolidation.wait_for_consolidation(10)
    assert [n.content for n in live.list(type="semantic")] == ["Alec is the user's boss"]


def test_the_switch_trigger_can_be_turned_off(make_memory: MakeMemory) -> None:
    m = make_memory(consolidate_on_session_switch=False)
    turns(m, "s1", "Alec is my boss by the way")
    turns(m, "s2", "Hello")
    assert m.service.consolidation.wait_for_consolidation(10)
    assert m.stats().pending_sessions == 2 and m.list(type="semantic") == []


def test_the_hot_path_records_a_session_once(live: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = live.service.store.jobs.register_session

    def spy(namespace: str, session: str, **kwargs: Any) -> None:
        seen.append(session)
        real(namespace, session, **kwargs)

    monkeypatch.setattr(live.service.store.jobs, "register_session", spy)
    for i in range(5):
        live.add(f"turn {i}", user="sam", session="s1")
    live.add("other", user="sam", session="s2")
    assert seen == ["s1", "s2"]


def test_end_session_consolidates_it_now(mem: Memory) -> None:
    turns(mem, "s1", "Alec is my boss by the way")
    report = mem._call(mem.service.consolidation.end_session("s1"))
    assert report.sessions == ["s1"] and len(report.created) == 1


def test_consolidation_respects_the_fact_cap(make_memory: MakeMemory) -> None:
    m = make_memory(max_memories=1)
    turns(m, "s1", "Alec is my boss by the way", "I prefer tea over coffee")
    m._call(m.service.consolidation.consolidate("s1"))
    assert m.count(type=["semantic", "opinion"]) == 1


# ---------------------------------------------------------------------- CLI
def test_cli_memory_consolidate(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    with Memory(db, embedder="fake") as m:
        turns(m, "s1", "Alec is my boss by the way")
        turns(m, "s2", "I prefer tea over coffee", user="ann")
        m.service.consolidation.wait_for_consolidation(10)
    runner = CliRunner()
    base = ["--db", db, "--embedder", "fake"]
    result = runner.invoke(app, ["memory", "consolidate", "--user", "sam", "--json", *base])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sessions"] == ["s1"] and len(data["created"]) == 1
    result = runner.invoke(app, ["memory", "consolidate", *base])
    assert result.exit_code == 0, result.output
    assert "Consolidated 1 of 1 sessions" in result.stdout
    result = runner.invoke(app, ["memory", "consolidate", *base])
    assert result.exit_code == 0 and "Nothing to consolidate" in result.output


def test_fact_types_survive(mem: Memory) -> None:
    turns(mem, "s1", "hello there")
    item = fact("User is a night owl", fact_type="self_knowledge")
    mem._call(mem.service.consolidation.consolidate("s1", extractor=Scripted({"s1": [item]})))
    (node,) = mem.list(type="semantic")
    assert node.fact_type is FactType.SELF_KNOWLEDGE and node.source_type.value == "consolidation"
    assert node.metadata == {"source": "consolidation"}  # reference 004
    assert node.decay_rate == mem.settings.decay_rate_default


def test_extracted_entities_without_facts_are_ignored(mem: Memory) -> None:
    turns(mem, "s1", "hello there")
    script = Scripted({"s1": []}, extra_entities=[ExtractedEntity(name="Nobody")])
    mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    assert mem._call(mem.service.records.list_entities()) == []


# ---------------------------------------------------------------------- owners
class Recording(Scripted):
    """Scripted, and keeps the episodes of every call."""

    def __init__(self, script: dict[str, Sequence[ExtractedFact]]) -> None:
        super().__init__(script)
        self.seen: list[list[MemoryNode]] = []

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        self.seen.append(list(episodes))
        return super().extract(episodes, known=known)


@both_backends
def test_users_sharing_a_session_id_are_consolidated_apart(mem: Memory) -> None:
    """Two users may use one session id: the extractor reads one owner's turns at a
    time, so a fact written from one user's words is never the other's."""
    turns(mem, "s1", "My pin is 4321", user="ana")
    turns(mem, "s1", "hello there", user="bo")
    turns(mem, "s1", "I like tea", user="ana")
    script = Recording({"s1": [fact("User's pin is 4321")]})
    mem._call(mem.service.consolidation.consolidate("s1", extractor=script))
    assert [sorted({e.user or "" for e in call}) for call in script.seen] == [["ana"], ["bo"]]
    assert [len(call) for call in script.seen] == [2, 1]
    # the scripted fact is written once per owner, each from that owner's turns only
    facts = {n.user: n for n in mem.list(type="semantic", limit=10)}
    assert set(facts) == {"ana", "bo"}
    for user, node in facts.items():
        sources = mem._call(mem.service.records.explain(node.id)).sources
        assert sources and {s.user for s in sources} == {user}
    assert all(e.consolidated_at is not None for e in mem.list(type="episodic", limit=10))
