"""The storage contract suite: one ``store`` fixture, parametrised over backends.

``sqlite`` (a file per test) and ``postgres`` (a fresh schema per test on the server of
``MEMLOCI_TEST_DATABASE_URL``; skipped without it locally, a failure under CI, see
``tests/pgtest.py``). Tests talk to the store through the
:class:`~memloci.storage.base.Store` protocol only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memloci.storage.base import Store
from pgtest import BACKENDS, database_url, fresh_schema

EMBED_MODEL, EMBED_DIM = "fake:16", 16


@dataclass
class StoreFactory:
    """Opens stores of one backend on one location, so a test can re-open it."""

    backend: str
    location: str
    schema: str | None = None
    opened: list[Store] = field(default_factory=list)

    def open(self, *, bind: bool = True) -> Store:
        if self.backend == "sqlite":
            from memloci.storage.sqlite import SQLiteStore

            store: Store = SQLiteStore(self.location)
        elif self.backend == "postgres":
            from memloci.storage.postgres import PostgresStore

            store = PostgresStore(self.location, schema=self.schema, pool_size=4)
        else:  # pragma: no cover
            raise AssertionError(f"unknown backend {self.backend}")
        self.opened.append(store)
        if bind:
            store.bind_embedder(EMBED_MODEL, EMBED_DIM)
        return store

    def close_all(self) -> None:
        for store in reversed(self.opened):
            store.close()
        self.opened.clear()


@pytest.fixture(params=BACKENDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    backend = request.param
    if backend == "sqlite":
        factory = StoreFactory(backend, str(tmp_path / "c.db"))
        yield factory
        factory.close_all()
        return
    url = database_url()
    with fresh_schema(url) as schema:  # the tests expect an empty store
        factory = StoreFactory(backend, url, schema)
        try:
            yield factory
        finally:
            factory.close_all()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """A fresh, empty store bound to the ``fake:16`` embedder."""
    return store_factory.open()
