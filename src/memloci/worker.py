"""The slow path (layer: service): a background thread that embeds new memories in
batches and applies access reinforcement, off the caller's hot path."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from memloci.errors import MemlociError
from memloci.providers.base import Embedder
from memloci.retrieval.query import document_text
from memloci.storage.base import Store

log = logging.getLogger("memloci.worker")


class EmbeddingWorker:
    """Embeds pending nodes in batches; ``flush()`` waits until nothing is pending."""

    def __init__(self, store: Store, embedder: Embedder, *, batch_size: int = 64) -> None:
        self.store = store
        self.embedder = embedder
        self.batch_size = batch_size
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._embedding = threading.Lock()  # one batch at a time, whoever asks
        self._touches: dict[str, set[str]] = {}
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="memloci-embedder", daemon=True)
        self._thread.start()
        self.wake()

    def wake(self) -> None:
        self._idle.clear()
        self._wake.set()

    def touch(self, namespace: str, ids: list[str]) -> None:
        with self._lock:
            self._touches.setdefault(namespace, set()).update(ids)
        self.wake()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every pending memory is embedded; False on timeout."""
        self.wake()
        return self._idle.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        self.flush(timeout)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def run_once(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed one batch; returns how many nodes it embedded."""
        with self._embedding:
            batch = self.store.pending_embeddings(self.batch_size)
            if not batch:
                return 0
            texts = [document_text(p.content, p.speaker, p.key, p.subject) for p in batch]
            vectors = self.embedder.embed(texts)
            self.store.save_embeddings(batch, vectors)
        if progress:
            progress(len(batch))
        return len(batch)

    def _apply_touches(self) -> None:
        with self._lock:
            touches, self._touches = self._touches, {}
        now = datetime.now(UTC)
        for namespace, ids in touches.items():
            self.store.touch(namespace, sorted(ids), now=now)

    def _run(self) -> None:
        # Background work yields to the hot path and to queries: lower this thread's
        # priority (threads it starts inherit it). Linux-only; elsewhere a no-op.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self._stop.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            try:
                self._apply_touches()
                while not self._stop.is_set() and self.run_once():
                    self._apply_touches()
                self.last_error = None
            except MemlociError as exc:
                self.last_error = str(exc)
                log.warning("embedding failed, will retry: %s", exc)
                time.sleep(1.0)
                continue
            except Exception as exc:  # keep the worker alive; report
                self.last_error = repr(exc)
                log.exception("embedding worker error")
                time.sleep(1.0)
                continue
            if not self._wake.is_set():
                self._idle.set()
