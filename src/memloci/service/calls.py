"""Blocking work of an async call, run in a worker thread (layer: service).

:func:`in_thread` keeps the event loop free and makes cancellation safe: a task
cancelled while its call runs (``asyncio.wait_for``, a ``TaskGroup``, a client that went
away) gets ``CancelledError`` at once and the call writes nothing — its open transaction
rolls back and no later one begins — unless a write of it has already committed; then
the write stands and the call finishes and returns, since an error would say it did not
happen (see :mod:`memloci.storage.cancel`). A long job of units (consolidation,
maintenance, knowledge files) stops at once instead, keeping the units it finished.
:func:`flushed` waits for the embedding worker without holding a thread, so abandoned
waits never starve the loop's executor.

:class:`threaded` is how a service method gets both sides from one body: written as
plain blocking code, ``await service.method(...)`` runs it through :func:`in_thread`
and ``service.method.now(...)`` runs it in the caller's thread (the sync SDK's hot
path, or one service method calling another inside a worker thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memloci.errors import MemlociError
from memloci.storage import cancel, faults

if TYPE_CHECKING:
    from memloci.service.worker import EmbeddingWorker

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S")

POLL = (0.001, 0.05)  # seconds between two looks at the embedding worker: first, at most


async def in_thread(fn: Callable[[], T], *, steps: bool = False) -> T:
    """``fn()`` in the loop's default executor; see the module docstring. ``steps``: a
    job of units that each stand alone (see :class:`~memloci.storage.cancel.Call`)."""
    call = cancel.Call(steps=steps)
    ctx = contextvars.copy_context()
    fut = asyncio.get_running_loop().run_in_executor(None, ctx.run, _body, call, fn)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if call.cancel():  # nothing written, nor will be
            fut.cancel()  # not started yet: it never runs
            raise
    while True:  # the call's write committed: it finishes, whatever the caller asks
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            if fut.done():
                return fut.result()


def _body(call: cancel.Call, fn: Callable[[], T]) -> T:
    cancel.current.set(call)  # in this call's own copy of the context
    call.check()  # cancelled while it waited for a thread
    try:
        return fn()
    except MemlociError:
        raise
    except Exception as exc:  # the last net: no driver error reaches a caller
        if faults.driver_error(exc):
            raise faults.storage_error(exc) from exc
        raise


async def flushed(worker: EmbeddingWorker, timeout: float | None) -> bool:
    """Wait until the worker has embedded everything pending (False on ``timeout``),
    looking at it from the loop: a caller that stops waiting leaves no thread behind."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + max(0.0, timeout)
    pause = POLL[0]
    done = worker.flush(0)  # wakes it once; a closed store is a StorageError
    while not done:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return False
        await asyncio.sleep(pause if left is None else min(pause, left))
        pause = min(pause * 2, POLL[1])
        done = worker.flushed()
    return True


class Threaded(Generic[P, T]):
    """A :class:`threaded` method bound to its service: awaiting a call runs it in a
    worker thread; :attr:`now` is the method itself, for the caller's thread."""

    def __init__(self, now: Callable[P, T], steps: bool) -> None:
        self.now = now
        self.steps = steps

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T:
        return await in_thread(functools.partial(self.now, *args, **kwargs), steps=self.steps)


class threaded(Generic[S, P, T]):
    """Decorate a blocking service method: see the module docstring. ``steps`` (use
    :class:`in_steps`): a long job of units that each stand alone, which a cancelled
    caller stops at once (see :class:`~memloci.storage.cancel.Call`)."""

    steps = False

    def __init__(self, fn: Callable[Concatenate[S, P], T]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn  # what inspect.signature reads

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> threaded[S, P, T]: ...

    @overload
    def __get__(self, obj: S, owner: type[Any]) -> Threaded[P, T]: ...

    def __get__(self, obj: S | None, owner: type[Any]) -> threaded[S, P, T] | Threaded[P, T]:
        if obj is None:
            return self
        now: Callable[P, T] = functools.partial(self.fn, obj)
        bound = Threaded(now, self.steps)
        bound.__doc__ = self.fn.__doc__  # for help()
        obj.__dict__[self.name] = bound  # made once per service: later reads find it
        return bound


class in_steps(threaded[S, P, T]):
    """:class:`threaded` for a long job of units (``steps``)."""

    steps = True
