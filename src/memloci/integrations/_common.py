"""What the framework integrations share (layer: interfaces): bound tools, the tool
selection and a way to run the async SDK from a framework's sync call."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias, TypedDict, TypeVar, Unpack

from memloci.errors import ValidationError
from memloci.sdk import AsyncMemory, Memory
from memloci.sdk_tools import SyncTools
from memloci.tools import TOOLS, ToolDef, Tools, get_tool

T = TypeVar("T")
#: What the ``memory_tools`` functions take: a memory, or its (bound) tools.
ToolSource: TypeAlias = Memory | AsyncMemory | Tools | SyncTools


class Binding(TypedDict, total=False):
    """Who every tool call is made for (the model cannot change it)."""

    namespace: str | None
    user: str | None
    agent: str | None
    session: str | None


def bound_tools(source: ToolSource, **binding: Unpack[Binding]) -> Tools:
    """The async :class:`Tools` of ``source``; bindings given here replace its own.
    Invalid bindings raise :class:`~memloci.errors.ValidationError` now, never in a call."""
    namespace, user = binding.get("namespace"), binding.get("user")
    agent, session = binding.get("agent"), binding.get("session")
    tools = source.tools if isinstance(source, Memory | AsyncMemory) else source
    if isinstance(tools, SyncTools):
        tools = tools.tools
    if not isinstance(tools, Tools):
        raise ValidationError(
            f"expected a Memory, an AsyncMemory or their tools, not {type(source).__name__}"
        )
    if namespace is None and user is None and agent is None and session is None:
        return tools
    b = tools.bound
    return Tools(
        tools.service,
        namespace=namespace or b.namespace,
        user=b.user if user is None else user,
        agent=b.agent if agent is None else agent,
        session=b.session if session is None else session,
        types=b.types,  # the tiers it may use stay as the host set them
    )


def select(names: Iterable[str] | str | None) -> list[ToolDef[Any]]:
    """The tools called ``names`` (ValidationError for an unknown one); by default every
    tool but the aliases (``search_memory``, ``remember_fact``, ``add_to_memory``), which
    only repeat ``recall`` and ``remember`` under other names."""
    if names is None:
        return [t for t in TOOLS.values() if t.alias_of is None]
    return [get_tool(n) for n in ([names] if isinstance(names, str) else names)]


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code: in this thread when no event loop runs
    here, else in a short-lived worker thread (a sync call made inside async code). The
    service's coroutines are not bound to a loop, so either way is safe.

    The result is handed over outside the task: Python 3.11's ``asyncio.run`` formats
    the main task's ``repr`` (result included) when it restores the SIGINT handler, which
    costs milliseconds for a large result such as a long thread."""
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="memloci-sync") as pool:
            pool.submit(asyncio.run, main()).result()
    return box[0]
