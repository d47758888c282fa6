"""PostgreSQL connections that die under a running store (a server restart, a failover,
a proxy closing idle connections): the call that meets a dead connection fails with a
clear error and writes nothing, and the next call works — not one failure per pooled
connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from memloci.errors import StorageError
from memloci.models import MemoryNode, NodeType, Scope, short_id, utcnow
from memloci.storage.base import NodeFilter
from pgtest import database_url, fresh_schema

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from memloci.storage.postgres import PostgresStore  # noqa: E402

POOL = 4


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    url = database_url()
    with fresh_schema(url) as name:
        opened = PostgresStore(url, schema=name, pool_size=POOL)
        try:
            yield opened
        finally:
            opened.close()


def _fact(text: str) -> MemoryNode:
    now = utcnow()
    return MemoryNode(
        id=short_id(), namespace="default", type=NodeType.SEMANTIC, content=text,
        scope=Scope.GLOBAL, event_time=now, created_at=now, updated_at=now, valid_from=now,
    )  # fmt: skip


def _kill_pool(store: PostgresStore) -> int:
    """Fill the pool with open connections, then end them all on the server's side."""
    with ExitStack() as held:
        conns = [held.enter_context(store.db._pool.connection()) for _ in range(POOL)]
        pids = [c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in conns]
    with psycopg.connect(database_url(), autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(set(pids))


def test_dead_connections_fail_one_call_and_the_next_works(store: PostgresStore) -> None:
    store.memories.insert_node(_fact("Stored before the restart"))
    assert _kill_pool(store) == POOL
    every = NodeFilter(namespaces=("default",))
    with pytest.raises(StorageError) as err:
        store.memories.insert_node(_fact("Written on a dead connection"))
    assert err.value.hint and "server is up" in err.value.hint
    outcomes = []
    for i in range(POOL + 1):  # every later call works, reads and writes
        store.memories.insert_node(_fact(f"Stored after the restart {i}"))
        outcomes.append(store.memories.count_nodes(every))
    assert outcomes == list(range(2, POOL + 3))  # the failed write left nothing
