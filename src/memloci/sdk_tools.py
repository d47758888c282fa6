"""Agent tools on the SDK (layer: sdk): ``memory.tools`` for :class:`~memloci.AsyncMemory`
and :class:`~memloci.Memory`.

``memory.tools`` is usable directly — ``memory.tools.call("recall", {"query": "…"})``
with the memory's namespace and no user — and callable with bindings for a bound copy:
``memory.tools(user="u1", session="s1").call(name, arguments)``. The bindings are fixed
by the host application; the model cannot change them. ``call`` never raises: problems
come back as text starting with ``Error:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from memloci.runtime.conversation import Runner
from memloci.tools import ToolBinding, Tools


class MemoryTools(Tools):
    """The async tools of an ``AsyncMemory``: ``await memory.tools.call(name, args)``."""

    def __call__(self, **binding: Unpack[ToolBinding]) -> MemoryTools:
        """A copy bound to ``user`` / ``agent`` / ``session`` (and ``namespace``, default
        the memory's; ``types``: the memory types it may use, default all). Invalid ids
        raise ValidationError here, never in ``call``."""
        return MemoryTools(self.service, **binding)


class SyncTools:
    """The tools of a sync ``Memory``: ``memory.tools(user="u1").call(name, args)``."""

    def __init__(self, tools: MemoryTools, run: Runner) -> None:
        self.tools = tools
        self._run = run

    @property
    def names(self) -> list[str]:
        """Every tool name :meth:`call` accepts."""
        return self.tools.names

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run tool ``name`` with ``arguments`` (a mapping or a JSON object string); the
        result text, or a message starting with ``Error:``. Never raises."""
        return self._run(self.tools.call(name, arguments))

    def __call__(self, **binding: Unpack[ToolBinding]) -> SyncTools:
        """A copy bound to ``user`` / ``agent`` / ``session`` (and ``namespace``, ``types``)."""
        return SyncTools(self.tools(**binding), self._run)
