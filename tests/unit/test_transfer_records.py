"""The JSON Lines backup holds every record of a namespace: entities (with their name
vectors) and their links to memories, threads, consolidation sessions and knowledge;
checked line by line as the other kinds; users' channel ids as ``save_user`` checks
them; memory vectors reused only when embedded in the current form."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memloci import Memory
from memloci.errors import ConflictError, ValidationError
from memloci.providers.fake import FakeEmbedder
from memloci.retrieval.query import DOCUMENT_FORM


def build_graph(mem: Memory, docs: Path) -> None:
    """Entities and links (by consolidation), a thread, sessions and a knowledge file."""
    mem.add("Remember that my boss is Dana Whitfield", user="u1", session="s1", speaker="user")
    mem.add("I moved to Lisbon with my partner Sarah", user="u1", session="s2", speaker="user")
    mem.consolidate()
    mem._call(
        mem.service.records.append_messages(
            "t1", [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
            user="u1", agent="bot",
        )
    )  # fmt: skip
    docs.mkdir(exist_ok=True)
    (docs / "keys.md").write_text("# Keys\n\nRotate API keys every month.\n", encoding="utf-8")
    mem.add_knowledge(docs, collection="ops")
    assert mem.flush(20)


def graph(mem: Memory, ns: str = "default") -> dict[str, Any]:
    """The namespace's records beside its memories, in a form that compares."""
    store = mem.service.store
    model = store.get_meta("embedding_model") or ""
    nodes = {n.id: n.content for n in store.memories.iter_nodes(ns)}
    names = {}
    for entity in store.entities.list_entities(ns, limit=100):
        names[entity.id] = entity.canonical_name
    threads = [store.people.get_thread(ns, t.id) for t in store.people.list_threads(ns)]
    return {
        "entities": sorted(
            (
                {**e.model_dump(exclude={"id", "namespace"})}
                for e in store.entities.list_entities(ns)
            ),
            key=lambda e: e["canonical_name"],
        ),
        "links": sorted(
            (nodes[n], names[e.id])
            for n, es in store.entities.node_entities(ns, list(nodes)).items()
            for e in es
        ),
        "entity_vectors": sorted(
            (names[i], blob) for i, blob in store.jobs.entity_vectors(ns, model).items()
        ),
        "threads": [t.model_dump(exclude={"namespace"}) for t in threads if t is not None],
        "sessions": [replace(s, namespace="*") for s in store.sessions(ns)],
        "knowledge": [
            (
                s.model_dump(exclude={"namespace"}),
                [
                    c.model_dump(exclude={"namespace"})
                    for c in store.knowledge.knowledge_chunks(ns, s.id)
                ],
                store.knowledge_vectors(ns, s.id),
            )
            for s in store.knowledge.knowledge_sources(ns)
        ],
    }


@pytest.fixture
def backup(make_memory: Any, tmp_path: Path) -> tuple[Memory, Path]:
    source: Memory = make_memory(str(tmp_path / "source.db"))
    build_graph(source, tmp_path / "docs")
    path = tmp_path / "backup.jsonl"
    source.export(str(path))
    return source, path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def save(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def people(mem: Memory) -> str:
    block = mem.context("who is Dana?", user="u1")
    assert "## People and Things" in block
    return block.split("## People and Things")[1].split("##")[0]


# ---------------------------------------------------------------------- round trip
def test_a_backup_keeps_entities_links_threads_sessions_and_knowledge(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path]
) -> None:
    source, path = backup
    want = graph(source)
    assert want["entities"] and want["links"] and want["entity_vectors"]
    assert want["threads"] and want["sessions"] and want["knowledge"][0][2]
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(path))
    assert (report.entities, report.threads, report.sessions) == (
        len(want["entities"]), 1, len(want["sessions"])
    )  # fmt: skip
    assert report.links == len(want["links"])
    assert (report.knowledge_sources, report.knowledge_chunks, report.chunks_to_embed) == (1, 1, 0)
    assert graph(target) == want
    assert "Dana Whitfield" in people(target) and people(target) == people(source)
    hits = target.search_knowledge("rotate api keys", threshold=0)
    assert hits and hits[0].collection == "ops"
    again = target.import_file(str(path))  # idempotent: nothing is added
    assert (again.entities, again.links, again.threads, again.sessions) == (0, 0, 0, 0)
    assert (again.knowledge_sources, again.nodes) == (0, 0)
    assert graph(target) == want


def test_into_another_namespace_entities_get_ids_of_their_own(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path]
) -> None:
    """Entity ids are unique across a store: the copy's entities get derived ids, its
    links join the copies, the source namespace is untouched; a re-import finds them."""
    source, path = backup
    want = graph(source)
    report = source.import_file(str(path), namespace="beta")
    assert report.entities == len(want["entities"]) and report.links == len(want["links"])
    store = source.service.store
    assert {e.id for e in store.entities.list_entities("beta")}.isdisjoint(
        {e.id for e in store.entities.list_entities("default")}
    )
    assert graph(source, "beta") == graph(source) == want
    again = source.import_file(str(path), namespace="beta")
    assert (again.entities, again.links, again.threads, again.sessions) == (0, 0, 0, 0)
    assert graph(source, "beta") == want


def test_another_model_embeds_the_knowledge_and_entity_names(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path]
) -> None:
    _, path = backup
    named = [r for r in records(path) if r["kind"] == "entity" and r["vector"]]
    assert named
    target = make_memory(str(tmp_path / "target.db"), embedder=FakeEmbedder(dimension=32))
    report = target.import_file(str(path))
    assert report.chunks_to_embed == report.knowledge_chunks == 1
    (source,) = target.service.store.knowledge.knowledge_sources("default")
    assert source.embedding_model == "fake:32"
    assert target.search_knowledge("rotate api keys", threshold=0)
    vectors = target.service.store.jobs.entity_vectors("default", "fake:32")
    assert set(vectors) == {r["id"] for r in named} and {len(b) for b in vectors.values()} == {
        32 * 4
    }


def test_a_version_2_backup_still_imports(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path]
) -> None:
    """Format version 2 (memories, versions, edges, users) loads as it did."""
    source, path = backup
    rows = [r for r in records(path) if r["kind"] in ("header", "node", "version", "edge", "user")]
    rows[0]["version"] = 2
    rows.append({"kind": "end", "records": len(rows) - 1})
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(save(tmp_path / "v2.jsonl", rows)))
    assert report.nodes == source.count(include_forgotten=True) and report.entities == 0


# ---------------------------------------------------------------------- checks
def _break(rows: list[dict[str, Any]], kind: str, change: dict[str, Any]) -> int:
    """Change the first ``kind`` record; returns its 1-based line number."""
    at = next(i for i, r in enumerate(rows) if r["kind"] == kind)
    rows[at].update(change)
    return at + 1


@pytest.mark.parametrize(
    "kind, change, problem",
    [
        ("entity", {"canonical_name": "  "}, "canonical_name is empty"),
        ("entity", {"type": "dragon"}, "type: Input should be"),
        ("entity", {"id": "not-an-id"}, "invalid entity id"),
        ("entity", {"aliases": ["x" * 300]}, "alias is 300 characters"),
        ("link", {"entity_id": "zzzzzzzz"}, "entity 'zzzzzzzz' is neither in the import"),
        ("link", {"node_id": "zzzzzzzz"}, "memory 'zzzzzzzz' is neither in the import"),
        (
            "thread",
            {
                "messages": [
                    {"role": "wizard", "content": "x", "created_at": "2024-01-01T00:00:00Z"}
                ]
            },
            "role 'wizard' is not allowed",
        ),
        ("thread", {"user": "a\x00b"}, "invalid user id"),
        ("session", {"first_seen_at": None}, "first_seen_at"),
        ("session", {"shape": "round"}, "Extra inputs are not permitted"),
        ("knowledge", {"chunk_count": 5}, "chunk_count is 5, the import holds 1"),
        ("knowledge", {"collection": ""}, "invalid collection name"),
        ("chunk", {"text": "nul \x00 here"}, "text contains a NUL"),
        ("chunk", {"end_char": -1}, "end_char must be a whole number"),
        (
            "chunk",
            {"id": "aaaaaaaa-0", "source_id": "aaaaaaaa"},
            "its knowledge source 'aaaaaaaa' is not in the import",
        ),
    ],
    ids=[
        "blank entity name",
        "entity type",
        "entity id",
        "long alias",
        "link to no entity",
        "link to no memory",
        "thread role",
        "thread owner",
        "session time",
        "session field",
        "chunk count",
        "collection",
        "NUL in chunk",
        "chunk offsets",
        "chunk without source",
    ],
)
def test_each_record_is_checked_and_a_bad_one_imports_nothing(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path], kind: str,
    change: dict[str, Any], problem: str,
) -> None:  # fmt: skip
    _, path = backup
    rows = records(path)
    number = _break(rows, kind, change)
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError) as exc:
        target.import_file(str(save(tmp_path / "bad.jsonl", rows)))
    assert exc.value.message.startswith(f"line {number} of the import is invalid")
    assert problem in exc.value.message
    assert "nothing was imported" in str(exc.value.hint)
    empty = graph(target)
    assert not any(empty.values()) and target.count(include_forgotten=True) == 0


@pytest.mark.parametrize("kind", ["entity", "link", "thread", "session", "knowledge", "chunk"])
def test_a_record_given_twice_is_refused(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path], kind: str
) -> None:
    _, path = backup
    rows = records(path)
    first = next(i for i, r in enumerate(rows, 1) if r["kind"] == kind)
    rows.append(rows[first - 1])
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match=rf"^line {len(rows)} .*given twice \(also on line "):
        target.import_file(str(save(tmp_path / "twice.jsonl", rows)))
    assert target.count(include_forgotten=True) == 0


# ---------------------------------------------------------------------- users' channel ids
def _users(*users: dict[str, Any]) -> list[dict[str, Any]]:
    now = "2024-01-01T00:00:00Z"
    rows = [{"kind": "header", "format": "memloci", "version": 1}]
    return rows + [{"kind": "user", "created_at": now, **u} for u in users]


def test_two_unmerged_users_with_one_channel_id_are_refused(
    make_memory: Any, tmp_path: Path
) -> None:
    """As ``save_user`` refuses the second: within the file, and against the store."""
    target = make_memory(str(tmp_path / "target.db"))
    rows = _users(
        {"id": "alice", "identifiers": {"telegram": "555"}},
        {"id": "bob", "identifiers": {"telegram": "555"}},
    )
    with pytest.raises(ConflictError) as exc:
        target.import_file(str(save(tmp_path / "both.jsonl", rows)))
    assert exc.value.message == (
        "line 3 of the import is invalid (user 'bob'): telegram id '555' belongs to memory "
        "user 'alice' (on line 2)"
    )
    assert "nothing was imported" in str(exc.value.hint)
    assert target.service.store.people.list_users("default") == []
    target._call(target.service.records.save_user("carol", identifiers={"telegram": "555"}))
    rows = _users(
        {"id": "dave", "display_name": "Dave"}, {"id": "bob", "identifiers": {"telegram": "555"}}
    )
    with pytest.raises(ConflictError, match=r"line 3 .*belongs to memory user 'carol' of"):
        target.import_file(str(save(tmp_path / "one.jsonl", rows)))
    assert [u.id for u in target.service.store.people.list_users("default")] == ["carol"]


def test_users_merged_into_one_another_may_share_a_channel_id(
    make_memory: Any, tmp_path: Path
) -> None:
    target = make_memory(str(tmp_path / "target.db"))
    rows = _users(
        {"id": "bob", "identifiers": {"telegram": "555"}, "merged_into": "alice"},
        {"id": "alice", "identifiers": {"telegram": "555"}},
    )
    assert target.import_file(str(save(tmp_path / "merged.jsonl", rows))).users == 2
    target._call(target.service.records.save_user("erin", identifiers={"email": "e@x.org"}))
    again = _users({"id": "old-erin", "identifiers": {"email": "e@x.org"}, "merged_into": "erin"})
    assert target.import_file(str(save(tmp_path / "old.jsonl", again))).users == 1


# ---------------------------------------------------------------------- vectors' form
@pytest.mark.parametrize("form", [None, "2"], ids=["no form (version 2)", "older form"])
def test_vectors_of_an_older_or_unknown_form_are_embedded_again(
    make_memory: Any, tmp_path: Path, backup: tuple[Memory, Path], form: str | None
) -> None:
    _, path = backup
    rows = records(path)
    assert rows[0]["document_form"] == DOCUMENT_FORM
    rows[0]["document_form"] = form
    if form is None:
        del rows[0]["document_form"]
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(save(tmp_path / "old.jsonl", rows)))
    assert report.vectors_reused == 0 and report.needs_embedding == report.nodes > 0
    assert target.flush(20) and target.stats().pending_embeddings == 0
    current = target.import_file(str(path), namespace="current")  # the current form: reused
    assert current.vectors_reused == current.nodes == report.nodes
