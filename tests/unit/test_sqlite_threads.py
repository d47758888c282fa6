"""The SQLite store under threads (audit fixes): a write transaction's dedupe and a
search opening its first reader never wait on each other; a search never reads the
vector cache half-grown; a finished thread's reader connection is closed."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import numpy as np

from memloci import Memory
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite.vecindex import VectorIndex


def test_remember_and_first_searches_of_fresh_threads_never_deadlock(tmp_path: Path) -> None:
    """remember() holds the write lock and waits for the vector cache's lock in its
    dedupe; a search's query thread held that lock and waited for the write lock to
    register its first reader connection (10 hangs in 10 runs before)."""
    path = str(tmp_path / "dl.db")
    with Memory(path, embedder=FakeEmbedder()) as seed:
        for i in range(200):
            seed.remember(f"User fact number {i} is about topic {i * 7}", user="u1")
    for round_ in range(4):
        _race_remember_with_first_searches(path, round_)


def _race_remember_with_first_searches(path: str, round_: int) -> None:
    mem = Memory(path, embedder=FakeEmbedder())  # its threads have no readers yet
    go = threading.Barrier(5)
    errors: list[BaseException] = []

    def remember() -> None:
        go.wait()
        for j in range(4):
            mem.remember(f"Round {round_} new fact {j} about planets", user="u1")

    def search() -> None:
        go.wait()
        try:
            mem.search("fact about topic planets", user="u1")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=remember, daemon=True)]
    threads += [threading.Thread(target=search, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), f"deadlock in round {round_}"
    assert errors == []
    mem.close()


def test_a_search_reads_the_cache_as_one_consistent_set_while_it_grows() -> None:
    dim = 8
    index = VectorIndex(dim)
    rng = np.random.default_rng(3)

    def rows(start: int, n: int) -> list[tuple[int, bytes, str, str | None, str]]:
        vecs = rng.normal(size=(n, dim)).astype(np.float32)
        return [(start + i, vecs[i].tobytes(), "user", "u1", "semantic") for i in range(n)]

    index.append("default", rows(1, 500))
    stop = threading.Event()
    errors: list[BaseException] = []

    def grow() -> None:
        start = 501
        while not stop.is_set():
            index.append("default", rows(start, 7))
            start += 7

    def search() -> None:
        q = rng.normal(size=dim).astype(np.float32)
        try:
            for _ in range(3000):
                hits, _ = index.search(["default"], q, 10, user="u1", types=["semantic"])
                assert len(hits) == 10
        except BaseException as exc:  # reported below
            errors.append(exc)

    grower = threading.Thread(target=grow, daemon=True)
    searchers = [threading.Thread(target=search, daemon=True) for _ in range(3)]
    grower.start()
    for t in searchers:
        t.start()
    for t in searchers:
        t.join(60)
    stop.set()
    grower.join(10)
    assert errors == []


def test_a_finished_threads_reader_connection_is_closed(tmp_path: Path) -> None:
    """A server that starts a thread per request kept one connection (two file
    descriptors) per thread that ever read, until it ran out of descriptors."""
    with Memory(str(tmp_path / "t.db"), embedder=FakeEmbedder()) as mem:
        mem.add("I live in Lisbon", user="u1")
        store = mem.service.store
        for _ in range(60):
            t = threading.Thread(target=lambda: store.get_meta("schema_version"))
            t.start()
            t.join()
        gc.collect()
        assert len(store.db._readers) <= 5  # type: ignore[attr-defined]
        assert mem.search("Lisbon", user="u1")  # the store reads on
