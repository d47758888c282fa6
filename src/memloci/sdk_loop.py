"""The event loop the sync :class:`~memloci.sdk.Memory` runs its calls on (layer: SDK).

One loop on one daemon thread per ``Memory``. A call from any thread is scheduled on it
and waited for; once the loop stops — ``close()``, from whichever thread — a new call is
refused, and a call still waiting is cancelled, both as :class:`StorageError` ("the
store is closed"): never a hang, nor the loop's own ``RuntimeError``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import CancelledError, Future
from typing import Any, TypeVar

from memloci.errors import StorageError

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running on a thread of its own, until :meth:`stop`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a call is scheduled, or refused as closed
        self._pending: set[Future[Any]] = set()
        self.stopping = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    @property
    def stopped(self) -> bool:
        return self.stopping or self._loop.is_closed()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (or its exception)."""
        with self._lock:
            if self.stopped:
                coro.close()  # never scheduled: no "never awaited" warning
                raise StorageError("the store is closed")
            fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(fut)
        try:
            return fut.result()
        except CancelledError:
            if self.stopping:  # the loop stopped under it (another thread closed)
                raise StorageError("the store was closed while this call ran") from None
            raise
        finally:
            with self._lock:
                self._pending.discard(fut)

    def stop(self) -> None:
        """Stop the loop; calls still waiting on it are cancelled (see :meth:`call`)."""
        with self._lock:
            self.stopping = True
            pending = list(self._pending)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        for fut in pending:  # calls the stopped loop will never finish
            fut.cancel()
        self._loop.close()
