"""Shared checks for the embedder tests (not a test module)."""

from __future__ import annotations

import threading

import numpy as np

from memloci.providers.base import Embedder


def embed_from_threads(embedder: Embedder, threads: int = 4) -> list[np.ndarray]:
    """Embed one query from ``threads`` threads at once (the model's first use, when it
    loads lazily); returns every vector, or fails the test with the first error."""
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(embedder.embed_query("concurrent first use"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    started = [threading.Thread(target=worker) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()
    assert not errors and len(results) == threads, errors
    return results
