"""OpenAI Agents SDK (layer: interfaces): :class:`MemlociSession`, a ``Session`` over a
memloci thread, and the memory tools as ``FunctionTool`` objects.

Needs ``pip install 'memloci[openai-agents]'``::

    from agents import Agent, Runner
    from memloci.integrations.openai_agents import MemlociSession, memory_tools

    agent = Agent(name="helper", tools=memory_tools(memory, user="u1"))
    session = MemlociSession("chat-42", memory, user="u1", agent="helper")
    result = await Runner.run(agent, "What do you know about me?", session=session)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Unpack

from memloci._extras import require

try:
    from agents import FunctionTool, SessionSettings, Tool, TResponseInputItem
    from agents.tool_context import ToolContext
except ImportError:  # the extra is not installed: say which one
    require("openai-agents", what="memloci.integrations.openai_agents")
    raise

from memloci import validate as v
from memloci.errors import NotFoundError
from memloci.integrations._common import Binding, ToolSource, bound_tools, select
from memloci.models import TURN_MAX, Thread, ThreadMessage
from memloci.runtime.conversation import thread_id
from memloci.sdk import AsyncMemory, Memory
from memloci.tools import ToolDef, Tools

__all__ = ["MemlociSession", "memory_tools"]

TEXT_FIELDS = ("content", "output", "arguments")  # the item field kept as message text
META_MAX = 60_000  # JSON characters of an item kept in message metadata (memloci: 64 kB)
_CUT = " …[truncated]"


class MemlociSession:
    """The OpenAI Agents SDK ``Session`` protocol over one memloci thread.

    With ``user`` the thread is ``thread_id(user, session_id, agent)`` — the thread a
    :class:`~memloci.runtime.ConversationMemory` with ``chat=session_id`` uses, so a
    ``memloci chat`` conversation and an Agents SDK run can share their history; without
    it the thread id is ``session_id``. Each item is one thread message: user and
    assistant messages keep their role, every other item (tool calls and outputs,
    reasoning…) is a ``tool`` message. The message text is the item's readable text (cut
    at 20,000 characters); the rest of the item is kept in the message's metadata, so
    :meth:`get_items` gives back the items as they were added. ``pop_item`` is a read
    then a write: not atomic against a concurrent writer of the same thread.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        memory: Memory | AsyncMemory,
        *,
        user: str | None = None,
        agent: str | None = None,
        namespace: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = v.required(session_id, "session")
        self.service = memory.service
        self.user, self.agent = v.ident(user, "user"), v.ident(agent, "agent")
        self.namespace = v.namespace(namespace or self.service.settings.namespace)
        self.thread_id = thread_id(user, session_id, agent) if user else self.session_id
        self.session_settings = session_settings or SessionSettings()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit`` (or ``session_settings.limit``) only
        the latest ``limit`` items."""
        if limit is None:
            limit = self.session_settings.limit if self.session_settings else None
        thread = await self._thread()
        messages = thread.messages if thread else []
        if limit is not None:
            messages = messages[-limit:] if limit > 0 else []
        return [_decode(m) for m in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the thread (created when new)."""
        if not items:
            return
        await self.service.records.append_messages(
            self.thread_id,
            [_encode(dict(item)) for item in items],
            namespace=self.namespace,
            user=self.user,
            agent=self.agent,
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (None when the session is empty)."""
        thread = await self._thread()
        if thread is None or not thread.messages:
            return None
        *kept, last = thread.messages
        if kept:
            await self.service.records.save_thread(thread.model_copy(update={"messages": kept}))
        else:
            await self.service.records.delete_threads([self.thread_id], namespace=self.namespace)
        return _decode(last)

    async def clear_session(self) -> None:
        """Delete the thread."""
        await self.service.records.delete_threads([self.thread_id], namespace=self.namespace)

    async def _thread(self) -> Thread | None:
        try:
            return await self.service.records.get_thread(self.thread_id, namespace=self.namespace)
        except NotFoundError:
            return None


def memory_tools(
    memory: ToolSource,
    *,
    names: Iterable[str] | str | None = None,
    strict: bool = True,
    **binding: Unpack[Binding],
) -> list[Tool]:
    """The memory tools as Agents SDK ``FunctionTool`` objects (typed ``list[Tool]``, as
    ``Agent(tools=...)`` takes them).

    ``memory`` is a :class:`~memloci.Memory` / :class:`~memloci.AsyncMemory` or its
    (bound) tools; ``user`` / ``agent`` / ``session`` / ``namespace`` bind every call.
    ``names`` picks tools (default: all but the aliases). ``strict`` sends strict-mode
    schemas (:meth:`ToolDef.openai`). The model's JSON goes to
    :meth:`memloci.tools.Tools.call`; problems come back as ``Error: …`` text.
    """
    tools = bound_tools(memory, **binding)
    return [_function_tool(tools, tool, strict) for tool in select(names)]


def _function_tool(tools: Tools, tool: ToolDef[Any], strict: bool) -> FunctionTool:
    name = tool.name

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        return await tools.call(name, arguments)

    return FunctionTool(
        name=name,
        description=tool.description,
        params_json_schema=tool.parameters(strict=strict),
        on_invoke_tool=invoke,
        strict_json_schema=strict,
    )


# ---------------------------------------------------------------------- items ↔ messages
def _encode(item: dict[str, Any]) -> dict[str, Any]:
    """An input item → ``{"role", "content", "metadata"}`` for ``append_messages``."""
    role = item.get("role")
    role = role if role in ("user", "assistant") else "tool"
    field = next((f for f in TEXT_FIELDS if isinstance(item.get(f), str)), None)
    rest = {k: x for k, x in item.items() if k != field}
    text = item[field] if field else _readable(item)
    if len(text) > TURN_MAX or "\x00" in text:
        text = text.replace("\x00", "")
        text = text if len(text) <= TURN_MAX else text[: TURN_MAX - len(_CUT)] + _CUT
    if field == "content" and rest == {"role": role} and role != "tool":
        return {"role": role, "content": text}  # a plain message: nothing else to keep
    meta: dict[str, Any] = {"item": rest, "field": field}
    if len(json.dumps(meta)) > META_MAX:  # e.g. an image: keep the envelope, text only
        field = field or next((f for f in TEXT_FIELDS if f in item), "content")
        small = {k: x for k, x in rest.items() if k != field and len(json.dumps(x)) < 2_000}
        meta = {"item": small, "field": field, "truncated": True}
    return {"role": role, "content": text, "metadata": meta}


def _decode(msg: ThreadMessage) -> TResponseInputItem:
    item = msg.metadata.get("item")
    if not isinstance(item, Mapping):  # a plain message, or one another writer stored
        role = msg.role if msg.role in ("user", "assistant") else "assistant"
        return {"role": role, "content": msg.content}  # type: ignore[return-value,misc]
    out = dict(item)
    field = msg.metadata.get("field")
    if isinstance(field, str):
        out[field] = msg.content
    return out  # type: ignore[return-value]


def _readable(item: Mapping[str, Any]) -> str:
    """The text a person would read for an item without a plain text field."""
    parts: list[str] = []
    for key in ("content", "output", "summary"):
        value = item.get(key)
        if isinstance(value, Sequence) and not isinstance(value, str):
            parts += [_part_text(p) for p in value]
    if item.get("type") == "function_call":
        parts.insert(0, f"{item.get('name')}({item.get('arguments', '')})")
    text = "\n".join(p for p in parts if p)
    return text or json.dumps(item, ensure_ascii=False, default=str)


def _part_text(part: Any) -> str:
    if not isinstance(part, Mapping):
        return str(part) if isinstance(part, str) else ""
    for key in ("text", "refusal", "transcript"):
        if isinstance(part.get(key), str):
            return str(part[key])
    return f"[{part.get('type', 'part')}]"
