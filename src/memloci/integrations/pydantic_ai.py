"""pydantic-ai (layer: interfaces): the memory tools as pydantic-ai ``Tool`` objects or
one ``FunctionToolset``.

Needs ``pip install 'memloci[pydantic-ai]'``::

    from pydantic_ai import Agent
    from memloci.integrations.pydantic_ai import memory_toolset

    agent = Agent("openai:gpt-4o", toolsets=[memory_toolset(memory, user="u1")])

For a user known only per run, pass the toolset to the run instead:
``agent.run(prompt, toolsets=[memory_toolset(memory, user=user_id)])``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Unpack

from memloci._extras import require

try:
    from pydantic_ai import FunctionToolset, Tool
except ImportError:  # the extra is not installed: say which one
    require("pydantic-ai", what="memloci.integrations.pydantic_ai")
    raise

from memloci.integrations._common import Binding, ToolSource, bound_tools, select
from memloci.tools import ToolDef, Tools

__all__ = ["memory_tools", "memory_toolset"]


def memory_tools(
    memory: ToolSource,
    *,
    names: Iterable[str] | str | None = None,
    **binding: Unpack[Binding],
) -> list[Tool[Any]]:
    """The memory tools as pydantic-ai ``Tool`` objects.

    ``memory`` is a :class:`~memloci.Memory` / :class:`~memloci.AsyncMemory` or its
    (bound) tools; ``user`` / ``agent`` / ``session`` / ``namespace`` bind every call
    (the model cannot change them). ``names`` picks tools (default: all but the
    aliases). Each tool's schema is the one :meth:`ToolDef.openai` sends; arguments are
    validated by :meth:`memloci.tools.Tools.call`, and problems come back to the model
    as ``Error: …`` text, never as an exception. ``tool.metadata["read_only"]`` tells
    the tools that only read (for a ``FilteredToolset``).
    """
    tools = bound_tools(memory, **binding)
    return [_tool(tools, tool) for tool in select(names)]


def memory_toolset(
    memory: ToolSource,
    *,
    names: Iterable[str] | str | None = None,
    id: str | None = "memloci",
    **binding: Unpack[Binding],
) -> FunctionToolset[Any]:
    """:func:`memory_tools` as one ``FunctionToolset`` (``toolsets=[...]`` of an
    ``Agent`` or of one run)."""
    tools = memory_tools(memory, names=names, **binding)
    return FunctionToolset(tools, id=id)


def _tool(tools: Tools, tool: ToolDef[Any]) -> Tool[Any]:
    name = tool.name

    async def call(**arguments: Any) -> str:
        return await tools.call(name, arguments)

    made: Tool[Any] = Tool.from_schema(
        call, name=name, description=tool.description, json_schema=tool.parameters()
    )
    made.metadata = {"read_only": tool.read_only}
    return made
