"""WAL checkpoints mostly off the hot path (layer: storage).

SQLite's automatic checkpoint runs inside the commit that pushes the write-ahead log
past 1,000 pages: that one commit copies the pages back into the database file and
syncs it, so about one hot-path ``add`` in fifty took 30-40 ms instead of ~1 ms
(100k memories). Here a daemon thread runs a ``PASSIVE`` checkpoint on its own
connection every :data:`EVERY` commits, or after :data:`IDLE` seconds when commits are
waiting; it never blocks a reader or a writer. The writer keeps an automatic checkpoint
at :data:`WAL_BOUND` pages: under a steady stream of writes only a checkpoint in the
writing connection lets the log start over from its beginning, and by then the thread
has copied nearly everything, so that commit only copies the rest. Durability is
unchanged: a commit is durable in the log whether or not it was copied.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("memloci.storage")

EVERY = 64  # commits between background checkpoints
WAL_BOUND = 4000  # pages (16 MB at 4 KiB) at which a commit checkpoints and the log restarts
IDLE = 1.0  # seconds after which waiting commits are checkpointed anyway


class Checkpointer:
    """Background ``PASSIVE`` checkpoints for one store (see the module docstring).

    ``lock`` is held while a checkpoint runs: a caller that needs the log truncated
    (the privacy scrub) takes it, so the two never race."""

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self.lock = threading.Lock()
        self._wake = threading.Event()
        self._pending = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.runs = 0  # checkpoints done (for tests and diagnostics)

    def committed(self) -> None:
        """Count a commit (called under the store's write lock: a counter and a flag)."""
        self._pending += 1
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._loop, name="memloci-checkpoint", daemon=True
            )
            self._thread.start()
        if self._pending >= EVERY:
            self._wake.set()

    def _loop(self) -> None:
        conn: Any = None
        try:
            conn = self._connect()
            while not self._closed:
                self._wake.wait(IDLE)
                self._wake.clear()
                if self._closed or not self._pending:
                    continue
                self._pending = 0
                with self.lock, contextlib.suppress(Exception):  # busy: the next run copies
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
        except Exception as exc:  # no connection: commits fall back to growing the log
            log.warning("background WAL checkpoints stopped: %s", exc)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (a checkpoint running finishes first)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
