"""Shared fixtures: a temporary database path and SDK ``Memory`` objects that are
closed after the test (fake embedder by default, so tests are fast)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memloci import Memory
from memloci.providers.fake import FakeEmbedder
from pgtest import store_location

MakeMemory = Callable[..., Memory]


@pytest.fixture(autouse=True)
def _clean_memloci_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read ``MEMLOCI_*``: keep a developer's environment out of the tests."""
    for name in list(os.environ):
        if name.startswith("MEMLOCI_") and name != "MEMLOCI_TEST_DATABASE_URL":
            monkeypatch.delenv(name)


@pytest.fixture
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file path (not created yet). Tests marked ``@both_backends``
    (``tests/pgtest.py``) also get a fresh PostgreSQL schema URL here."""
    with store_location(getattr(request, "param", "sqlite"), tmp_path) as location:
        yield location


@pytest.fixture
def make_memory(db_path: str) -> Iterator[MakeMemory]:
    """``make_memory(path=None, **kwargs)`` → a ``Memory`` closed at teardown.

    Defaults to ``db_path`` and ``FakeEmbedder()``; pass ``embedder=None`` for full text
    only, or any other ``Memory`` keyword (``namespace=``, ``max_episodes=`` …).
    """
    opened: list[Memory] = []

    def make(path: str | None = None, **kwargs: Any) -> Memory:
        kwargs.setdefault("embedder", FakeEmbedder())
        memory = Memory(path or db_path, **kwargs)
        opened.append(memory)
        return memory

    yield make
    for memory in reversed(opened):
        memory.close()


@pytest.fixture
def mem(make_memory: MakeMemory) -> Memory:
    """A ``Memory`` on ``db_path`` with the fake embedder."""
    return make_memory()
