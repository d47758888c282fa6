"""``memloci migrate``: a whole store copied through the Store protocol, verified by
counts, refusing a non-empty target. SQLite → SQLite always runs; the round trip
SQLite → PostgreSQL → SQLite needs ``MEMLOCI_TEST_DATABASE_URL`` (never skipped in CI)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memloci import Memory
from memloci.errors import ConflictError, NotFoundError
from memloci.interfaces.cli import app
from memloci.migrate import KINDS, inventory, migrate
from memloci.models import ApiKey, Entity, MemoryUser, Thread, ThreadMessage, short_id, utcnow
from memloci.providers.fake import FakeEmbedder
from memloci.service.transfer import export_lines
from memloci.storage.base import Store


def pg_url(schema: str) -> str:
    """A PostgreSQL URL with its own schema, or skip (fail under CI) without a server."""
    url = os.environ.get("MEMLOCI_TEST_DATABASE_URL", "")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI needs MEMLOCI_TEST_DATABASE_URL (scripts/pg-test-env.sh sets it)")
        pytest.skip("postgres: set MEMLOCI_TEST_DATABASE_URL to run the round trip")
    return f"{url}{'&' if '?' in url else '?'}schema={schema}_{short_id().lower()}"


def populate(path: str, docs: Path) -> None:
    """A store holding every kind of record, written the way memloci writes them."""
    with Memory(path, embedder=FakeEmbedder()) as m:
        for i, text in enumerate(["I moved to Lisbon in May", "My sister Ana is a pilot",
                                  "I prefer green tea over coffee"]):  # fmt: skip
            m.add(text, user="sam", session="s1" if i < 2 else "s2", speaker="sam")
        m.add("Team standup is at nine", namespace="team", session="t1", user="lee")
        fact = m.remember("Sam's favourite city is Lisbon", user="sam")
        m.update(fact.memory.id, "Sam's favourite city is Porto")
        wrong = m.remember("Sam drives a red car", user="sam")
        m.correct(wrong.memory.id, "Sam drives a blue car")
        m.service.consolidation.consolidate.now("s1", namespace="default", user="sam")
        (docs / "guide.md").write_text("# Guide\n\nInstall with pip.\n\n## Use\n\nRun it.\n")
        m.add_knowledge(docs, collection="manual")
        m.flush(30)
        store = m.service.store
        now = utcnow()
        ada = store.entities.insert_entity(
            Entity(
                id=short_id(),
                namespace="graph",
                canonical_name="Ada",
                first_seen=now,
                last_seen=now,
            )
        )
        store.people.upsert_user(
            MemoryUser(
                id="telegram:1",
                namespace="default",
                display_name="Sam",
                identifiers={"telegram": "1"},
                created_at=now,
            )
        )
        store.people.upsert_user(MemoryUser(id="only-user", namespace="people", created_at=now))
        store.people.upsert_thread(Thread(id="th1", namespace="default", user="sam", created_at=now,
                                   updated_at=now, messages=[
                                       ThreadMessage(role="user", content="hi", created_at=now)
                                   ]))  # fmt: skip
        store.people.insert_key(ApiKey(id="Key12345", name="ops", namespaces=["default"],
                                created_at=now), "ab" * 32)  # fmt: skip
        node = m.add("Ada wrote the first program", namespace="graph", user="sam")
        assert not isinstance(node, list)
        store.entities.link_entities("graph", node.id, [ada.id])
        store.jobs.save_entity_vector("graph", ada.id, store.get_meta("embedding_model") or "",
                                 b"\x00" * 64)  # fmt: skip
        m.flush(30)


def snapshot(store: Store) -> dict[str, Any]:
    """Everything a store holds, in a backend-neutral form."""
    out: dict[str, Any] = {"counts": inventory(store), "namespaces": store.record_namespaces()}
    model = store.get_meta("embedding_model")
    for ns in store.record_namespaces():
        lines = [json.loads(line) for line in export_lines(store, ns)]
        lines[0].pop("exported_at")
        ids = [n.id for n in store.memories.iter_nodes(ns)]
        out[ns] = {
            "export": lines,
            "links": {
                k: [e.id for e in v] for k, v in store.entities.node_entities(ns, ids).items()
            },
            "entities": [e.model_dump() for e in store.entities.list_entities(ns, limit=1000)],
            "entity_vectors": store.jobs.entity_vectors(ns, model) if model else {},
            "threads": [store.people.get_thread(ns, t.id) for t in store.people.list_threads(ns)],
            "sessions": store.sessions(ns),
            "knowledge": [
                (s, store.knowledge.knowledge_chunks(ns, s.id), store.knowledge_vectors(ns, s.id))
                for s in store.knowledge.knowledge_sources(ns)
            ],
        }
    out["keys"] = [store.people.get_key(k.id) for k in store.people.list_keys(include_revoked=True)]
    out["meta"] = {k: store.get_meta(k) for k in ("embedding_model", "dimension", "document_form")}
    return out


def _snapshot_of(location: str) -> dict[str, Any]:
    from memloci.service.compose import open_store

    store = open_store(location)
    try:
        return snapshot(store)
    finally:
        store.close()


def test_sqlite_to_sqlite_copies_every_record(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)
    seen: dict[str, int] = {}
    report = migrate(src, dst, progress=lambda k, n: seen.__setitem__(k, seen.get(k, 0) + n))
    before, after = _snapshot_of(src), _snapshot_of(dst)
    assert before == after
    counts = before["counts"]
    assert all(counts[k] > 0 for k in KINDS), counts  # the fixture covers every kind
    assert report.source_counts == report.target_counts == counts
    assert {k: seen.get(k, 0) for k in KINDS} == counts
    assert report.namespaces == ["default", "graph", "people", "team"]
    with Memory(dst, embedder=FakeEmbedder()) as m:  # the copy works as a store
        assert m.search("green tea", user="sam")[0].memory.content.startswith("I prefer")
        assert m.stats().pending_embeddings == 0


def test_refuses_a_non_empty_target_unless_forced(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)
    with Memory(dst, embedder=FakeEmbedder()) as m:
        m.add("already here", user="sam")
    before = _snapshot_of(dst)
    with pytest.raises(ConflictError):
        migrate(src, dst)
    assert _snapshot_of(dst) == before  # nothing written
    migrate(src, dst, force=True)
    again = migrate(src, dst, force=True)  # idempotent: everything is skipped
    assert again.copied.get("nodes", 0) == 0 and again.skipped["nodes"] > 0
    assert again.target_counts["nodes"] == again.source_counts["nodes"] + 1


def test_missing_source_and_same_store_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        migrate(str(tmp_path / "nope.db"), str(tmp_path / "b.db"))
    assert not (tmp_path / "nope.db").exists() and not (tmp_path / "b.db").exists()
    with pytest.raises(ConflictError):
        migrate(str(tmp_path / "a.db"), str(tmp_path / "a.db"))
    # the same file spelt otherwise (relative, through a symlink) is the same store too
    Memory(str(tmp_path / "s.db"), embedder=None).close()
    (tmp_path / "link.db").symlink_to(tmp_path / "s.db")
    for other in (str(tmp_path / "." / "s.db"), str(tmp_path / "link.db")):
        with pytest.raises(ConflictError, match="same store"):
            migrate(str(tmp_path / "s.db"), other, force=True)


def test_cli_migrate_reports_counts(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)
    result = CliRunner().invoke(app, ["migrate", "--from", src, "--to", dst, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["target_counts"] == data["source_counts"] and data["source_counts"]["nodes"] > 0
    result = CliRunner().invoke(app, ["migrate", "--from", src, "--to", dst])
    assert result.exit_code == ConflictError.exit_code
    assert "not empty" in result.output and "--force" in result.output


def test_round_trip_through_postgres_gives_an_identical_store(tmp_path: Path) -> None:
    url = pg_url("migrate")
    src, back = str(tmp_path / "a.db"), str(tmp_path / "back.db")
    populate(src, tmp_path)
    there = migrate(src, url)
    assert there.target_counts == there.source_counts
    home = migrate(url, back)
    assert home.target_counts == home.source_counts
    assert _snapshot_of(src) == _snapshot_of(back)
    assert _snapshot_of(url)["counts"] == _snapshot_of(src)["counts"]


class _Stop(Exception):
    pass


def test_force_completes_an_interrupted_migration(tmp_path: Path) -> None:
    """A migration that dies after copying memories leaves their versions and edges
    behind; running it again with --force copies those too."""
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)

    def stop(kind: str, n: int) -> None:
        if kind == "nodes":  # right after the first batch of memories is committed
            raise _Stop

    with pytest.raises(_Stop):
        migrate(src, dst, progress=stop)
    report = migrate(src, dst, force=True)
    assert report.target_counts == report.source_counts
    assert report.skipped["nodes"] > 0 and report.copied["versions"] > 0
    assert _snapshot_of(src) == _snapshot_of(dst)
    again = migrate(src, dst, force=True)  # nothing left to copy
    assert sum(again.copied.get(k, 0) for k in ("nodes", "versions", "edges")) == 0


def _write(path: str, lines: list[str]) -> str:
    Path(path).write_text("".join(line + "\n" for line in lines))
    return path


def _namespace(location: str, ns: str) -> dict[str, Any]:
    """What a namespace holds, with its ids replaced by the memories' texts."""
    from memloci.service.compose import open_store

    store = open_store(location)
    try:
        nodes = {n.id: n.content for n in store.memories.iter_nodes(ns)}
        return {
            "ids": set(nodes),
            "nodes": sorted(nodes.values()),
            "versions": sorted(
                (nodes[v.node_id], v.version, v.content) for v in store.memories.iter_versions(ns)
            ),
            "edges": sorted(
                (nodes[e.source_id], nodes[e.target_id], e.relation.value)
                for e in store.memories.iter_edges(ns)
            ),
            "vectors": len(store.search.vectors(ns, list(nodes))),
        }
    finally:
        store.close()


def test_force_copies_a_namespace_whose_ids_another_namespace_holds(tmp_path: Path) -> None:
    """Two stores restored from one backup into namespaces alice and bob hold the same
    ids: merged with --force, bob's memories are copied under new ids, not skipped."""
    origin = str(tmp_path / "origin.db")
    populate(origin, tmp_path)
    with Memory(origin, embedder=FakeEmbedder()) as m:
        lines = list(m.service.admin.export_lines("default"))
    one, two, merged = (str(tmp_path / f"{n}.db") for n in ("one", "two", "merged"))
    for path, ns in ((one, "alice"), (two, "bob")):
        with Memory(path, embedder=FakeEmbedder()) as m:
            m.import_file(_write(path + ".jsonl", lines), namespace=ns)
            m.flush(30)
    migrate(one, merged)
    report = migrate(two, merged, force=True)
    assert report.copied["nodes"] == report.source_counts["nodes"] > 0
    alice, bob = _namespace(merged, "alice"), _namespace(merged, "bob")
    assert bob["ids"].isdisjoint(alice["ids"])
    for got in (alice, bob):
        assert {k: v for k, v in got.items() if k != "ids"} == {
            k: v for k, v in _namespace(two, "bob").items() if k != "ids"
        }
    assert _namespace(merged, "alice") == _namespace(one, "alice")  # untouched
    again = migrate(two, merged, force=True)  # finds its copies: nothing is added
    assert sum(again.copied.get(k, 0) for k in ("nodes", "versions", "edges")) == 0
    assert _namespace(merged, "bob") == bob


def test_verification_counts_each_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace left out is an error even when the target's other namespaces hold
    as many records in all."""
    from memloci.errors import StorageError
    from memloci.migrate import _Copier

    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)
    with Memory(dst, embedder=FakeEmbedder()) as m:  # more than namespace team holds
        for text in ("Kim likes the harbour", "Kim walks there daily"):
            m.add(text, namespace="other", session="o1", user="kim")
        m.flush(30)
    copy_namespace = _Copier.namespace
    monkeypatch.setattr(
        _Copier, "namespace", lambda self, ns: None if ns == "team" else copy_namespace(self, ns)
    )
    with pytest.raises(StorageError) as exc:
        migrate(src, dst, force=True)
    assert "namespace 'team'" in exc.value.message and "nodes 0/1" in exc.value.message


def _meta(location: str, key: str) -> str | None:
    from memloci.service.compose import open_store

    store = open_store(location)
    try:
        return store.get_meta(key)
    finally:
        store.close()


def test_the_form_of_the_vectors_is_carried_over(tmp_path: Path) -> None:
    """A copy of a current store is not told its vectors are of an older form; a store
    of an older form stays one (``memloci reembed`` offers the rebuild), and so does a
    current one that copies of an older form's vectors were merged into."""
    from memloci.retrieval.query import DOCUMENT_FORM
    from memloci.service.compose import open_store
    from memloci.service.worker import outdated_form

    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    populate(src, tmp_path)
    migrate(src, dst)
    assert _meta(src, "document_form") == _meta(dst, "document_form") == DOCUMENT_FORM
    store = open_store(dst)
    try:
        assert not outdated_form(store)
    finally:
        store.close()
    older, copy = str(tmp_path / "older.db"), str(tmp_path / "copy.db")
    with Memory(older, embedder=FakeEmbedder()) as m:
        m.add("I moved to Porto in June", user="sam", namespace="old")
        m.flush(30)
        m.service.store.set_meta("document_form", "2")
    migrate(older, copy)
    assert _meta(copy, "document_form") == "2"
    migrate(older, dst, force=True)  # merged into a current store: the older form wins
    assert _meta(dst, "document_form") == "2"


def test_force_copies_entities_whose_ids_another_namespace_holds(tmp_path: Path) -> None:
    """Entity ids are unique across a store: an entity of namespace bob whose id alice
    holds in the target is copied under an id derived from it, found again by a re-run."""
    one, two, merged = (str(tmp_path / f"{n}.db") for n in ("one", "two", "merged"))
    eid, now = short_id(), utcnow()
    for path, ns in ((one, "alice"), (two, "bob")):
        with Memory(path, embedder=FakeEmbedder()) as m:
            node = m.add("Ada wrote the first program", namespace=ns, user="sam")
            assert not isinstance(node, list)
            store = m.service.store
            store.entities.insert_entity(Entity(id=eid, namespace=ns, canonical_name="Ada",
                                       first_seen=now, last_seen=now))  # fmt: skip
            store.entities.link_entities(ns, node.id, [eid])
            m.flush(30)
    migrate(one, merged)
    first = migrate(two, merged, force=True)
    assert first.copied["entities"] == 1
    again = migrate(two, merged, force=True)
    assert again.copied.get("entities", 0) == 0 and again.skipped["entities"] == 1
    from memloci.service.compose import open_store

    store = open_store(merged)
    try:
        (copy,) = store.entities.list_entities("bob")
        assert copy.id != eid and store.entities.get_entity("alice", eid) is not None
        ids = [n.id for n in store.memories.iter_nodes("bob")]
        assert [
            e.id for links in store.entities.node_entities("bob", ids).values() for e in links
        ] == [copy.id]
    finally:
        store.close()
