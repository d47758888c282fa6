"""The storage contract suite: one ``store`` fixture, parametrised over backends.

Today only ``sqlite`` runs. A ``postgres`` backend is added by appending it to
``BACKENDS``: it is skipped unless ``MEMLOCI_TEST_DATABASE_URL`` points at a database.
Tests talk to the store through the :class:`~memloci.storage.base.Store` protocol only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memloci.storage.base import Store

BACKENDS = ["sqlite"]
EMBED_MODEL, EMBED_DIM = "fake:16", 16


@dataclass
class StoreFactory:
    """Opens stores of one backend on one location, so a test can re-open it."""

    backend: str
    location: str
    opened: list[Store] = field(default_factory=list)

    def open(self, *, bind: bool = True) -> Store:
        if self.backend == "sqlite":
            from memloci.storage.sqlite import SQLiteStore

            store: Store = SQLiteStore(self.location)
        elif self.backend == "postgres":  # pragma: no cover - needs a server
            # the tests expect an empty store: give each test its own schema/database
            from memloci.storage.postgres import PostgresStore

            store = PostgresStore(self.location)
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
        location = str(tmp_path / "c.db")
    else:  # pragma: no cover - needs a server
        location = os.environ.get("MEMLOCI_TEST_DATABASE_URL", "")
        if not location:
            pytest.skip(f"{backend}: set MEMLOCI_TEST_DATABASE_URL to run the contract suite")
    factory = StoreFactory(backend, location)
    yield factory
    factory.close_all()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """A fresh, empty store bound to the ``fake:16`` embedder."""
    return store_factory.open()
