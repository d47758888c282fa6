"""Query embedding with graceful degradation (layer: retrieval).

A search starts embedding its query on a worker thread while SQLite runs the full-text
search (the default ONNX embedder releases the GIL, so the two truly overlap). When
the embedder fails — an OpenAI-compatible endpoint down, a broken model file — the
search goes on without the vector strategy: full text, key and graph still answer,
each hit's ``why`` says meaning was skipped, and one warning line is logged per outage
(not per search). While the embedder is down, searches skip it for
:data:`RETRY_AFTER` seconds instead of paying a connection attempt (and its retries)
each time; the first search after that tries again, and a success logs its return.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from memloci.errors import MemlociError

log = logging.getLogger("memloci.search")

Vector = npt.NDArray[np.float32]
RETRY_AFTER = 5.0  # seconds a failed embedder is skipped before a search tries again
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memloci-embed-query")


def _short(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


class QueryEmbedding:
    """Starts query embeddings and tells whether the embedder is usable.

    ``start(query)`` returns a future, or None while the embedder is known to be down;
    ``result(future)`` returns the vector, or None when embedding failed (the failure is
    recorded and logged once). ``down`` is the reason meaning search is off, if it is.
    """

    def __init__(
        self,
        embed: Callable[[str], Vector],
        *,
        retry_after: float = RETRY_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._embed = embed
        self.retry_after = retry_after
        self._clock = clock
        self._lock = threading.Lock()
        self._down: str | None = None
        self._failed_at = 0.0

    @property
    def down(self) -> str | None:
        """Why meaning search is off (the embedder's last error), or None when it is on."""
        with self._lock:
            return self._down

    def start(
        self, query: str, then: Callable[[Vector], None] | None = None
    ) -> Future[Vector] | None:
        """Embed ``query`` on a worker thread; ``then(vector)``, if given, runs on that
        thread right after (a search's vector scan, so it too overlaps the caller's
        full-text work). ``then`` must not raise: it keeps its own errors for the
        caller (an error here would be taken for the embedder's)."""
        with self._lock:
            if self._down is not None and self._clock() < self._failed_at + self.retry_after:
                return None
        if then is None:
            return _POOL.submit(self._embed, query)

        def embed_then() -> Vector:
            vector = self._embed(query)
            then(vector)
            return vector

        return _POOL.submit(embed_then)

    def result(self, future: Future[Vector] | None) -> Vector | None:
        if future is None:
            return None
        try:
            vector = future.result()
        except MemlociError as exc:
            self._failed(exc)
            return None
        except Exception as exc:  # a custom embedder's own error types
            self._failed(exc)
            return None
        with self._lock:
            back, self._down = self._down is not None, None
        if back:
            log.warning("query embedding works again; meaning search is back on")
        return vector

    def _failed(self, exc: BaseException) -> None:
        reason = _short(exc)
        with self._lock:
            first = self._down is None
            self._down = reason
            self._failed_at = self._clock()
        if first:
            log.warning(
                "query embedding failed (%s); searching by full text, key and graph "
                "until the embedder answers again",
                reason,
            )


def degraded_note(reason: str) -> str:
    """The line a hit's ``why`` gets while meaning search is off."""
    return f"meaning skipped: embedder unavailable ({reason}); full text, key and graph only"


__all__ = ["RETRY_AFTER", "QueryEmbedding", "degraded_note"]
