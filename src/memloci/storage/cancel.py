"""Cancelled calls write nothing (layer: storage): the worker-thread side.

An async call runs its store work in a worker thread (``memloci.service.calls``); the
task awaiting it may be cancelled (a timeout, a client that went away) while the thread
still runs. The call's :class:`Call`, set for that thread in a context variable, decides
once, under its own lock, between the two outcomes:

* cancelled first — every write transaction of the call is refused from then on, the
  one open rolls back (:class:`Abandoned`), and the caller gets ``CancelledError``;
* a transaction that changed something reaches its ``COMMIT`` first (:func:`committing`)
  — the write stands, so the call runs to its end and the caller gets its result;
  except for a job of many units (``steps``), stopped between them at once.

Stores call :func:`writing` when a write transaction begins and :func:`committing` just
before it commits. Threads without a call (the sync SDK, background workers) are never
refused.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from enum import Enum


class Abandoned(BaseException):
    """Raised in a worker thread whose call was cancelled before it wrote anything: the
    open transaction rolls back. A ``BaseException``, like ``CancelledError``, so that no
    ``except Exception`` on the way goes on as if the write had failed on its own."""


class _State(Enum):
    RUNNING = "running"
    CANCELLED = "cancelled"
    COMMITTED = "committed"


class Call:
    """The outcome of one async call's thread work: cancelled, or committed (not both).

    ``steps=True``: a long job made of units, each one transaction that stands on its own
    (a session consolidated, a file of knowledge added); a cancellation stops it at once
    whatever it committed before — the open unit rolls back, no further one begins."""

    def __init__(self, *, steps: bool = False) -> None:
        self._lock = threading.Lock()
        self._state = _State.RUNNING
        self._steps = steps

    def cancel(self) -> bool:
        """The caller was cancelled: True if the call writes nothing more (it is refused
        from now on), False if a write of it has committed (it finishes)."""
        with self._lock:
            if self._state is _State.COMMITTED and not self._steps:
                return False
            self._state = _State.CANCELLED
            return True

    def check(self) -> None:
        """Raise :class:`Abandoned` if the call was cancelled."""
        if self._state is _State.CANCELLED:
            raise Abandoned

    def commit(self, changed: bool) -> None:
        """About to commit: refused if cancelled; else, if the transaction ``changed``
        anything, the call can no longer be cancelled."""
        with self._lock:
            if self._state is _State.CANCELLED:
                raise Abandoned
            if changed:
                self._state = _State.COMMITTED


current: ContextVar[Call | None] = ContextVar("memloci_call", default=None)


def writing() -> None:
    """A write transaction begins: refused (:class:`Abandoned`) if its call was cancelled."""
    call = current.get()
    if call is not None:
        call.check()


def committing(changed: bool = True) -> None:
    """A write transaction is about to commit (see :meth:`Call.commit`); ``changed``:
    whether it changed anything (unknown: True)."""
    call = current.get()
    if call is not None:
        call.commit(changed)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Writes inside go ahead though the call was cancelled: a job's own cleanup (the
    lock it took), which would otherwise be left to expire."""
    token = current.set(None)
    try:
        yield
    finally:
        current.reset(token)
