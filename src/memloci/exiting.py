"""Interpreter exit, seen as it begins (layer: models).

A program that ends without ``Memory.close()`` leaves memloci's daemon threads (background
consolidation, the embedding worker) running while the interpreter shuts down: thread
pools then refuse new work ("cannot schedule new futures after interpreter shutdown"),
and every session a thread was consolidating failed loudly, one traceback each.

:func:`exiting` says that shutdown has begun: the main thread has finished, or the hook
registered here (with ``threading``'s exit hooks, which run before thread pools stop
taking work; ``atexit`` where those are missing) has run. Background work checks it and
stops quietly: what it could not do stays pending in the store for the next run.
:func:`on_exit` registers a callback (held weakly through its owner) run by that hook.
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401  # its exit hook first: ours then runs before it
import contextlib
import sys
import threading
import weakref
from collections.abc import Callable

_begun = threading.Event()
_callbacks: weakref.WeakSet[_Callback] = weakref.WeakSet()
_lock = threading.Lock()


class _Callback:
    """A callback kept alive by its owner (see :func:`on_exit`)."""

    __slots__ = ("__weakref__", "fn")

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn


def exiting() -> bool:
    """Whether the interpreter has begun to shut down."""
    return _begun.is_set() or not threading.main_thread().is_alive() or sys.is_finalizing()


def on_exit(fn: Callable[[], None]) -> object:
    """Run ``fn`` when shutdown begins. Returns a handle: the callback lives as long as
    the caller keeps the handle (an object that dies unclosed is not kept alive)."""
    handle = _Callback(fn)
    with _lock:
        _callbacks.add(handle)
    return handle


def _begin() -> None:
    _begun.set()
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        with contextlib.suppress(Exception):  # shutting down: nothing to report to
            callback.fn()


_register = getattr(threading, "_register_atexit", None)  # CPython 3.9+
try:
    if _register is None:
        raise RuntimeError("no threading exit hooks")
    _register(_begin)
except RuntimeError:  # imported during shutdown, or no such hook
    atexit.register(_begin)
