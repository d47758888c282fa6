"""PostgreSQL-only behaviour of :class:`PostgresStore` (the shared behaviour is in
``tests/contract``): FTS5 → tsquery translation, passwords kept out of errors, migrations
racing on open, session chains under concurrent writers, and filtered HNSW searches that
still fill their limit (pgvector iterative index scans)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from memloci.errors import StorageError, ValidationError
from memloci.models import MemoryNode, NodeType, Scope, short_id, utcnow
from memloci.storage.base import NodeFilter, migration_scripts
from pgtest import database_url, fresh_schema

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from memloci.storage.postgres import PostgresStore  # noqa: E402
from memloci.storage.postgres.tsquery import is_disjunction, to_tsquery_sql  # noqa: E402


@pytest.fixture
def schema() -> Iterator[tuple[str, str]]:
    url = database_url()
    with fresh_schema(url) as name:
        yield url, name


def node(content: str, **fields: Any) -> MemoryNode:
    now = utcnow()
    data: dict[str, Any] = {
        "id": short_id(), "namespace": "default", "type": NodeType.SEMANTIC,
        "content": content, "scope": Scope.GLOBAL, "event_time": now, "created_at": now,
        "updated_at": now, "valid_from": now,
    }  # fmt: skip
    data.update(fields)
    return MemoryNode(**data)


def turn(text: str, session: str | None = "s") -> MemoryNode:
    return node(text, type=NodeType.EPISODIC, scope=Scope.SESSION, session=session)


# ---------------------------------------------------------------------------- tsquery


def test_fts5_expressions_translate_to_tsquery_sql() -> None:
    sql, params = to_tsquery_sql('"coffee" OR "tea"')
    assert sql == "(phraseto_tsquery('memloci', %s) || phraseto_tsquery('memloci', %s))"
    assert params == ["coffee", "tea"]
    sql, params = to_tsquery_sql('"run" "dog" NOT "cat"')  # implicit AND, NOT binds tighter
    assert sql == (
        "(phraseto_tsquery('memloci', %s) && (phraseto_tsquery('memloci', %s)"
        " && !!phraseto_tsquery('memloci', %s)))"
    )
    assert params == ["run", "dog", "cat"]
    assert to_tsquery_sql('("a" OR b) AND "say ""hi"""')[1] == ["a", "b", 'say "hi"']
    assert to_tsquery_sql("col*") == ("to_tsquery('simple', %s)", ["'col':*"])
    assert to_tsquery_sql('"José M"*')[1] == ["('josé' <-> 'm':*) | ('jose' <-> 'm':*)"]


@pytest.mark.parametrize("bad", ['coffee"', "(", "AND", 'nodes_fts:"x"', '"a" OR', "a)"])
def test_bad_fts5_syntax_is_a_validation_error(bad: str) -> None:
    with pytest.raises(ValidationError):
        to_tsquery_sql(bad)


# ---------------------------------------------------------------------------- credentials


def test_connection_errors_never_show_the_password() -> None:
    secret = "s3cret-Pa55word"
    with pytest.raises(StorageError) as err:
        PostgresStore(f"postgresql://memloci:{secret}@127.0.0.1:1/memloci")
    text = f"{err.value} {err.value.message} {err.value.hint} {err.value!r}"
    assert secret not in text
    assert "postgresql://memloci:***@127.0.0.1:1/memloci" in err.value.message
    assert err.value.__cause__ is None and err.value.__context__ is not None  # chained quietly
    assert secret not in str(err.value.__context__) or err.value.__suppress_context__


def test_bad_schema_name_is_refused_before_connecting() -> None:
    with pytest.raises(StorageError):
        PostgresStore("postgresql://u:pw@127.0.0.1:1/db", schema="x; DROP TABLE nodes")


# ---------------------------------------------------------------------------- server


def test_concurrent_opens_migrate_once(schema: tuple[str, str]) -> None:
    url, name = schema
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def open_one() -> None:
        barrier.wait()
        try:
            stores.append(PostgresStore(url, schema=name, pool_size=2))
        except BaseException as exc:  # pragma: no cover - the failure is reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == [] and len(stores) == 4
        latest = migration_scripts("postgres")[-1][0]
        assert {s.schema_version() for s in stores} == {latest}
        with psycopg.connect(url) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tablename = 'nodes'",
                (name,),
            ).fetchone()
        assert tables == (1,)
    finally:
        for s in stores:
            s.close()


def test_an_older_store_folds_accents_after_upgrade(schema: tuple[str, str]) -> None:
    """Migration 0012 maps the text search configuration through unaccent and computes
    the stored tsvectors of accented rows again: a store written before it finds "Café"
    by "cafe" once reopened."""
    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        cafe = store.memories.insert_node(node("Lunch at the Café Flore"))
    finally:
        store.close()
    with psycopg.connect(url) as conn:  # back to schema 11: accents kept, as then
        conn.execute(f'SET search_path TO "{name}", public')
        conn.execute(
            "ALTER TEXT SEARCH CONFIGURATION memloci"
            " ALTER MAPPING FOR word, hword, hword_part WITH memloci_stem"
        )
        conn.execute("UPDATE nodes SET content = content")
        conn.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
    store = PostgresStore(url, schema=name)
    try:
        assert store.schema_version() >= 12
        assert [
            h[0] for h in store.search.fulltext(NodeFilter(namespaces=["default"]), '"cafe"', 5)
        ] == [cafe.id]
    finally:
        store.close()


@pytest.mark.parametrize("session", ["s", None])
def test_concurrent_turns_of_one_session_form_one_chain(
    schema: tuple[str, str], session: str | None
) -> None:
    """Four writers (as four processes would) add turns to one session — or, without a
    session, to one owner's chat (turns that name their speaker) — at once: one chain."""
    url, name = schema
    stores = [PostgresStore(url, schema=name, pool_size=2) for _ in range(4)]
    barrier = threading.Barrier(len(stores))

    def write(store: PostgresStore, k: int) -> None:
        barrier.wait()
        for i in range(10):
            said = turn(f"writer {k} turn {i}", session=session).model_copy(
                update={"speaker": "user", "user": "u1", "scope": Scope.USER}
            )
            store.memories.insert_node(said, link_previous=True)

    threads = [threading.Thread(target=write, args=(s, k)) for k, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        store = stores[0]
        nodes = store.memories.list_nodes(NodeFilter(), limit=100, order="rowid")
        assert len(nodes) == 40
        links = [(e.source_id, e.target_id) for e in store.memories.iter_edges("default")]
        assert len(links) == 39
        # one chain in insertion order: each turn follows the one stored just before it
        assert dict(links) == {a.id: b.id for a, b in pairwise(nodes)}
    finally:
        for s in stores:
            s.close()


def test_turns_stored_while_the_worker_writes_their_rows_all_land(
    schema: tuple[str, str],
) -> None:
    """A turn's insert rewrites its predecessors' windows while the worker saves vectors
    and claims episodes over the same rows: every turn lands and the chain is whole
    (rows of several turns are written oldest first; an insert the server rolls back to
    break a deadlock runs again)."""
    url, name = schema
    writers = [PostgresStore(url, schema=name, pool_size=2) for _ in range(2)]
    worker = PostgresStore(url, schema=name, pool_size=2)
    worker.bind_embedder("fake", 4)
    done = threading.Event()
    errors: list[BaseException] = []

    def write(store: PostgresStore, k: int) -> None:
        try:
            for i in range(25):
                said = turn(f"w{k} {i}", session="s").model_copy(
                    update={"speaker": "user", "user": "u1", "scope": Scope.USER}
                )
                store.memories.insert_node(said, link_previous=True)
        except BaseException as exc:
            errors.append(exc)

    def work() -> None:
        try:
            while not done.is_set():
                pending = worker.search.pending_embeddings(50)
                if pending:
                    worker.search.save_embeddings(pending, np.ones((len(pending), 4), np.float32))
                    worker.jobs.claim_episodes("default", [p.id for p in pending], now=utcnow())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, k)) for k, s in enumerate(writers)]
    background = threading.Thread(target=work)
    background.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    background.join()
    try:
        assert errors == []
        nodes = worker.memories.list_nodes(NodeFilter(), limit=100, order="rowid")
        assert len(nodes) == 50
        links = [(e.source_id, e.target_id) for e in worker.memories.iter_edges("default")]
        assert dict(links) == {a.id: b.id for a, b in pairwise(nodes)}
    finally:
        for s in [*writers, worker]:
            s.close()


def test_filtered_vector_search_fills_its_limit_through_the_hnsw_index(
    schema: tuple[str, str],
) -> None:
    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        store.bind_embedder("clustered:16", 16)
        rng = np.random.default_rng(7)
        centres = rng.normal(size=(8, 16))
        nodes = [node(f"fact {i}", scope=Scope.USER, user=f"u{i % 10}") for i in range(1000)]
        store.memories.insert_nodes(nodes)
        vecs = centres[np.arange(1000) % 8] + 0.3 * rng.normal(size=(1000, 16))
        vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
        pending = store.search.pending_embeddings(3000)
        by_id = {n.id: i for i, n in enumerate(nodes)}
        order = np.array([by_id[p.id] for p in pending])
        assert store.search.save_embeddings(pending, vecs[order]) == 1000
        query = vecs[3]
        flt = NodeFilter(user="u3", scopes=(Scope.USER,))  # 100 of 1000 rows are visible
        hits = store.search.vector_search(flt, query, 50)
        assert len(hits) == 50  # iterative scans keep going past the filtered-out rows
        visible = {n.id for n in nodes if n.user == "u3"}
        assert {h[0] for h in hits} <= visible
        exact = sorted(visible, key=lambda i: -float(vecs[by_id[i]] @ query))[:50]
        assert len({h[0] for h in hits} & set(exact)) >= 45  # HNSW recall on clustered data
        assert [h[1] for h in hits] == sorted((h[1] for h in hits), reverse=True)
    finally:
        store.close()


def _bits_rows(url: str, name: str) -> dict[int, tuple[str | None, bool, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f'SELECT seq, user_id, shared, bits::text FROM "{name}".node_bits'
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _seqs(url: str, name: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute(f'SELECT id, seq FROM "{name}".nodes').fetchall())


def test_one_users_vector_search_preselects_by_binary_codes_and_ranks_exactly(
    schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """node_bits follows every vector (trigger), the migration fills it for vectors stored
    before it, and a user's search ranks the Hamming pre-selection exactly under the full
    filter, falling back to an exact scan when the filter leaves the selection short."""
    from memloci.storage.base import NodePatch
    from memloci.storage.postgres import search

    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        store.bind_embedder("clustered:16", 16)
        rng = np.random.default_rng(11)
        nodes = [
            node(f"fact {i}", scope=Scope.USER if i % 5 else Scope.GLOBAL, user=f"u{i % 4}",
                 category="rare" if i % 40 == 1 else "general")
            for i in range(400)
        ]  # fmt: skip
        store.memories.insert_nodes(nodes)
        vecs = rng.normal(size=(400, 16)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        by_id = {n.id: i for i, n in enumerate(nodes)}
        pending = store.search.pending_embeddings(1000)
        store.search.save_embeddings(pending, vecs[[by_id[p.id] for p in pending]])
        seqs = _seqs(url, name)
        bits = _bits_rows(url, name)
        assert len(bits) == 400
        for n in nodes[:20]:
            code = "".join("1" if x > 0 else "0" for x in vecs[by_id[n.id]])
            assert bits[seqs[n.id]] == (n.user, n.scope != Scope.USER, code)

        def exact(flt_nodes: list[MemoryNode], q: np.ndarray, k: int) -> list[str]:
            return sorted((n.id for n in flt_nodes), key=lambda i: -float(vecs[by_id[i]] @ q))[:k]

        q = vecs[7]
        visible = [n for n in nodes if n.scope != Scope.USER or n.user == "u3"]
        hits = store.search.vector_search(NodeFilter(user="u3"), q, 10)
        assert [h[0] for h in hits] == exact(visible, q, 10)  # fewer rows than the selection
        # a pre-selection smaller than the filter needs: the exact scan fills the limit
        monkeypatch.setattr(search, "PRESELECT_MIN", 5)
        monkeypatch.setattr(search, "PRESELECT_FACTOR", 1)
        rare = [n for n in visible if n.category == "rare"]
        hits = store.search.vector_search(NodeFilter(user="u3", categories=("rare",)), q, 5)
        assert [h[0] for h in hits] == exact(rare, q, 5)
        hits = store.search.vector_search(NodeFilter(owner_user="u1"), q, 5)
        assert {h[0] for h in hits} <= {n.id for n in nodes if n.user == "u1"} and len(hits) == 5
        # edits: a new text drops the code, a purge removes it, a re-save brings it back
        store.memories.update_node("default", nodes[0].id, NodePatch(content="fact zero, edited"))
        store.memories.purge_node("default", nodes[1].id)
        bits = _bits_rows(url, name)
        assert seqs[nodes[0].id] not in bits and seqs[nodes[1].id] not in bits
        assert len(bits) == 398
        again = store.search.pending_embeddings(10)
        store.search.save_embeddings(again, vecs[[by_id[p.id] for p in again]])
        assert seqs[nodes[0].id] in _bits_rows(url, name)
        # a store from before migration 4: opening it fills node_bits from the vectors
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                f'DROP TABLE "{name}".node_bits; DROP FUNCTION "{name}".memloci_node_bits CASCADE;'
                f" UPDATE \"{name}\".meta SET value = '3' WHERE key = 'schema_version'"
            )
        store.close()
        store = PostgresStore(url, schema=name)
        assert len(_bits_rows(url, name)) == 399
        assert store.schema_version() == migration_scripts("postgres")[-1][0]
        store.search.reset_embeddings()
        assert _bits_rows(url, name) == {}
    finally:
        store.close()


def _has_vector_index(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (name, "nodes_embedding"),
        ).fetchone()
    return row is not None and "m='32'" in row[0] and "ef_construction='200'" in row[0]


def test_bulk_load_builds_the_hnsw_index_once_after_the_load(schema: tuple[str, str]) -> None:
    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        store.bind_embedder("clustered:8", 8)
        assert _has_vector_index(url, name)
        rng = np.random.default_rng(3)
        nodes = [node(f"bulk fact {i}", scope=Scope.USER, user=f"u{i % 4}") for i in range(2500)]
        vecs = rng.normal(size=(2500, 8)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with store.bulk_load(work_mem="64MB"):
            store.memories.insert_nodes(nodes)  # 3 pipelined batches
            assert not _has_vector_index(url, name)  # set aside while loading
            pending = store.search.pending_embeddings(5000)
            by_id = {n.id: i for i, n in enumerate(nodes)}
            saved = store.search.save_embeddings(pending, vecs[[by_id[p.id] for p in pending]])
            assert saved == 2500
            hits = store.search.vector_search(NodeFilter(user="u1"), vecs[1], 5)  # exact meanwhile
            assert hits[0][0] == nodes[1].id and abs(hits[0][1] - 1.0) < 1e-5
        assert _has_vector_index(url, name)
        assert store.memories.count_nodes(NodeFilter()) == 2500
        assert [
            n.content for n in store.memories.get_nodes("default", [nodes[0].id, nodes[-1].id])
        ] == [
            "bulk fact 0",
            "bulk fact 2499",
        ]
        assert store.search.vector_search(NodeFilter(user="u2"), vecs[2], 1)[0][0] == nodes[2].id
        # a taken id gets a fresh one, as row by row; the rest of the batch lands once
        again = [nodes[0], node("new one"), node("new two")]
        store.memories.insert_nodes(again)
        assert store.memories.count_nodes(NodeFilter()) == 2503
        assert len(store.memories.list_nodes(NodeFilter(), limit=5000)) == 2503
        with pytest.raises(RuntimeError), store.bulk_load():
            raise RuntimeError("the load failed")
        assert _has_vector_index(url, name)  # back even after an error
        with pytest.raises(StorageError):
            store.build_vector_index(work_mem="1GB'; DROP TABLE nodes; --")
    finally:
        store.close()


def test_disjunctions_of_single_words_are_recognised() -> None:
    assert is_disjunction('"coffee" OR "tea" OR "café"')
    assert is_disjunction('"coffee"')
    for match in ('"a" AND "b"', '"a" "b"', '"green tea" OR "a"', '"a" NOT "b"', '("a")', "a*"):
        assert not is_disjunction(match), match


def test_fulltext_scores_are_on_the_fts5_bm25_scale(schema: tuple[str, str], tmp_path) -> None:
    from memloci.storage.sqlite import SQLiteStore

    url, name = schema
    texts = [
        "user: my dog is called Rex", "user: I went running with my dog",
        "user: the weather is nice", "we talked about coffee and cake", "nothing relevant",
    ]  # fmt: skip
    pg, lite = PostgresStore(url, schema=name), SQLiteStore(str(tmp_path / "s.db"))
    try:
        for text in texts:
            made = node(text)
            pg.memories.insert_node(made)
            lite.memories.insert_node(made)
        for match in ('"running" OR "dog"', '"cake" OR "weather"', '"dog" OR "user"'):
            want, got = (
                lite.search.fulltext(NodeFilter(), match, 5),
                pg.search.fulltext(NodeFilter(), match, 5),
            )
            assert [i for i, _ in got] == [i for i, _ in want], match
            for (_, a), (_, b) in zip(want, got, strict=True):
                assert b == pytest.approx(a, rel=0.1, abs=0.05), match
    finally:
        pg.close()
        lite.close()


def _fts_index(url: str, name: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'nodes_fts'",
            (name,),
        ).fetchone()
    return str(row[0])


def test_one_users_fulltext_reads_the_owner_keyed_index(
    schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 7 keys the full-text GIN index by owner too (btree_gin); a user's search
    reads that user's rows and, apart, the shared ones: the same hits as before, none of
    another user's, also for a word in more of the user's rows than a branch ranks, and on
    a store migrated from version 6 (plain index)."""
    from memloci.storage.postgres import ranking

    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        assert "gin (user_id, fts)" in _fts_index(url, name)
        mine = [node(f"apple note {i}", scope=Scope.USER, user="ann") for i in range(60)]
        mine.append(node("apple and pear pie", scope=Scope.USER, user="ann"))
        theirs = [node(f"apple pear {i}", scope=Scope.USER, user="bob") for i in range(20)]
        shared = node("a shared pear tart recipe", scope=Scope.GLOBAL)
        store.memories.insert_nodes([*mine, *theirs, shared])
        # a branch ranks max(SCAN_CAP, 30) rows: fewer than ann's 61 apple rows
        monkeypatch.setattr(ranking, "SCAN_CAP", 10)

        def hits(match: str, user: str = "ann", k: int = 30) -> list[str]:
            return [i for i, _ in store.search.fulltext(NodeFilter(user=user), match, k)]

        got = hits('"pear" OR "apple"', k=5)
        assert got[:2] == [mine[-1].id, shared.id]  # both words first, then the rare one
        assert set(hits('"apple"')) <= {n.id for n in mine}  # never bob's rows
        assert set(hits('"pear"')) == {mine[-1].id, shared.id}
        assert set(hits('"pear"', user="bob")) == {n.id for n in theirs} | {shared.id}
        # a store from before migration 7: the plain index becomes the owner-keyed one
        before = hits('"pear" OR "apple"', k=5)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                f'DROP INDEX "{name}".nodes_fts; CREATE INDEX nodes_fts ON "{name}".nodes'
                f" USING gin (fts); UPDATE \"{name}\".meta SET value = '6'"
                " WHERE key = 'schema_version'"
            )
        store.close()
        store = PostgresStore(url, schema=name)
        assert "gin (user_id, fts)" in _fts_index(url, name)
        assert store.schema_version() == migration_scripts("postgres")[-1][0]
        assert hits('"pear" OR "apple"', k=5) == before
    finally:
        store.close()


def test_a_role_that_cannot_create_btree_gin_keeps_the_plain_index() -> None:
    """btree_gin is optional: in a database without it, where the role may not create
    extensions, the store opens, keeps the word-only full-text index (migration 7 does
    nothing) and one user's search finds the same rows."""
    from urllib.parse import urlsplit, urlunsplit

    url = database_url()
    tag = short_id().lower()
    db, role, password = f"memloci_nogin_{tag}", f"memloci_plain_{tag}", "plain-pw"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
        conn.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
    parts = urlsplit(url)
    admin_db = urlunsplit(parts._replace(path=f"/{db}"))
    host = parts.netloc.rsplit("@", 1)[-1]
    role_url = urlunsplit(parts._replace(netloc=f"{role}:{password}@{host}", path=f"/{db}"))
    store = None
    try:
        with psycopg.connect(admin_db, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")  # what an administrator runs once
            conn.execute(f'CREATE SCHEMA mem AUTHORIZATION "{role}"')
        store = PostgresStore(role_url, schema="mem")
        assert store.schema_version() == migration_scripts("postgres")[-1][0]
        with psycopg.connect(admin_db) as conn:
            gin = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'")
            assert gin.fetchone() is None
        assert "gin (fts)" in _fts_index(admin_db, "mem")
        ann = [node(f"apple note {i}", scope=Scope.USER, user="ann") for i in range(5)]
        store.memories.insert_nodes([*ann, node("apple for bob", scope=Scope.USER, user="bob")])
        found = store.search.fulltext(NodeFilter(user="ann"), '"apple"', 10)
        assert {i for i, _ in found} == {n.id for n in ann}
    finally:
        if store is not None:
            store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_query_of_common_words_on_a_big_table_reads_the_newest_rows(
    schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above BIG_TABLE rows, a query whose every word is common takes its candidates
    from the owner's newest rows (an index read newest first), never another user's."""
    from memloci.storage.postgres import ranking

    url, name = schema
    store = PostgresStore(url, schema=name)
    try:
        ann = [node(f"apple day {i}", scope=Scope.USER, user="ann") for i in range(40)]
        bob = [node(f"apple day {i}", scope=Scope.USER, user="bob") for i in range(40)]
        shared = node("apple day for everyone", scope=Scope.GLOBAL)
        store.memories.insert_nodes([*ann, *bob, shared])
        monkeypatch.setattr(ranking, "BIG_TABLE", 5)  # 81 rows: a big table here
        store.db._terms = ranking.TermStats()  # no cached counts from a smaller table

        def hits(user: str, k: int) -> set[str]:
            return {
                i for i, _ in store.search.fulltext(NodeFilter(user=user), '"apple" OR "day"', k)
            }

        assert hits("ann", 50) == {n.id for n in ann} | {shared.id}
        assert hits("bob", 50) == {n.id for n in bob} | {shared.id}
        newest = {n.id for n in ann[-30:]} | {shared.id}  # candidates: 30 newest per owner
        few = hits("ann", 10)
        assert len(few) == 10 and few <= newest
    finally:
        store.close()
