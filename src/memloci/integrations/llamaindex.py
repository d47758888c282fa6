"""LlamaIndex (layer: interfaces): :class:`MemlociMemoryBlock`, a long-term memory block
for LlamaIndex's ``Memory``, and the memory tools as ``FunctionTool`` objects.

Needs ``pip install 'memloci[llamaindex]'``::

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.memory import Memory as ChatMemory
    from memloci.integrations.llamaindex import MemlociMemoryBlock, memory_tools

    block = MemlociMemoryBlock(memory=memory, user="u1")
    chat = ChatMemory.from_defaults(session_id="u1", memory_blocks=[block])
    agent = FunctionAgent(llm=llm, tools=memory_tools(memory, user="u1"))
    await agent.run("Plan my Saturday", memory=chat)

The block answers with memloci's context block for the conversation's last user message
(:meth:`memloci.AsyncMemory.context`: facts, procedures, relevant past conversations,
within ``budget`` tokens), and stores as conversation turns the messages LlamaIndex
moves out of its short-term memory (user and assistant text; the chat session's id is
the memloci session unless ``session`` is given).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Unpack

from memloci._extras import require

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory import BaseMemoryBlock
    from llama_index.core.tools import FunctionTool
except ImportError:  # the extra is not installed: say which one
    require("llamaindex", what="memloci.integrations.llamaindex")
    raise
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from memloci import validate as v
from memloci.errors import ValidationError
from memloci.integrations._common import Binding, ToolSource, bound_tools, run_sync, select
from memloci.sdk import AsyncMemory, Memory
from memloci.service import MemoryService
from memloci.tools import ToolDef, Tools

__all__ = ["MemlociMemoryBlock", "memory_tools"]

STORED_ROLES = {MessageRole.USER: "user", MessageRole.ASSISTANT: "assistant"}


class MemlociMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for LlamaIndex's ``Memory`` (``memory_blocks=[...]``).

    ``memory`` is a :class:`~memloci.Memory` or :class:`~memloci.AsyncMemory`; ``user``,
    ``agent``, ``session`` and ``namespace`` say whose memories are read and written;
    ``budget`` bounds the block in tokens (default: the store's ``context_budget``).
    Invalid ids raise :class:`~memloci.errors.ValidationError` when the block is made.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(description="the memloci Memory or AsyncMemory to read and write")
    name: str = Field(default="memloci", description="the block's name in the template")
    description: str | None = Field(
        default="What memloci remembers about the user that bears on the conversation."
    )
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    namespace: str | None = None
    budget: int | None = Field(default=None, ge=1, le=100_000)
    _service: MemoryService = PrivateAttr()

    @model_validator(mode="after")
    def _check(self) -> MemlociMemoryBlock:
        if not isinstance(self.memory, Memory | AsyncMemory):
            raise ValidationError(
                f"memory must be a Memory or an AsyncMemory, not {type(self.memory).__name__}"
            )
        for value, what in ((self.user, "user"), (self.agent, "agent"), (self.session, "session")):
            v.ident(value, what)
        if self.namespace is not None:
            v.namespace(self.namespace)
        self._service = self.memory.service
        return self

    def _filters(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "user": self.user, "agent": self.agent}

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """memloci's context block for the last user message (or the last message)."""
        prompt = _last_prompt(messages or [])
        flt = self._service.filter(session=self.session, **self._filters())
        return await self._service.context.context(prompt, flt, budget=self.budget)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store the user and assistant messages as conversation turns, in order (one
        write); other roles and messages without text are left out."""
        turns: list[dict[str, str]] = []
        session = self.session
        for message in messages:
            role, text = STORED_ROLES.get(message.role), _text(message)
            if role is None or not text:
                continue
            turns.append({"role": role, "content": text})
            found = message.additional_kwargs.get("session_id")
            if session is None and isinstance(found, str):
                session = found
        if turns:
            await self._service.memories.add(turns, session=session, **self._filters())


def _text(message: ChatMessage) -> str:
    content = message.content
    return content.strip() if isinstance(content, str) else ""


def _last_prompt(messages: Sequence[ChatMessage]) -> str | None:
    for message in reversed(messages):
        if message.role == MessageRole.USER and _text(message):
            return _text(message)
    for message in reversed(messages):
        if _text(message):
            return _text(message)
    return None


def memory_tools(
    memory: ToolSource,
    *,
    names: Iterable[str] | str | None = None,
    **binding: Unpack[Binding],
) -> list[FunctionTool]:
    """The memory tools as LlamaIndex ``FunctionTool`` objects (sync and async).

    ``memory`` is a :class:`~memloci.Memory` / :class:`~memloci.AsyncMemory` or its
    (bound) tools; ``user`` / ``agent`` / ``session`` / ``namespace`` bind every call
    (the model cannot change them). ``names`` picks tools (default: all but the
    aliases). Each tool's ``fn_schema`` is its pydantic arguments model; a call runs
    :meth:`memloci.tools.Tools.call`, so problems come back as ``Error: …`` text.
    """
    tools = bound_tools(memory, **binding)
    return [_function(tools, tool) for tool in select(names)]


def _function(tools: Tools, tool: ToolDef[Any]) -> FunctionTool:
    name = tool.name

    def call(**arguments: Any) -> str:
        return run_sync(tools.call(name, arguments))

    async def acall(**arguments: Any) -> str:
        return await tools.call(name, arguments)

    if not tool.description:
        raise ValidationError(f"the tool {name!r} has no description")
    return FunctionTool.from_defaults(
        fn=call, async_fn=acall, name=name, description=tool.description, fn_schema=tool.args
    )
