"""Reading tool results in the MCP tests: a call's text, the first ``[id:…]`` in it, and
every memory a service holds."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from mcp.types import CallToolResult, TextContent

from memloci.models import MemoryNode
from memloci.service import MemoryService

ID_IN_TEXT = re.compile(r"\[id:([A-Za-z0-9]{8})\]")


def text(result: CallToolResult) -> str:
    """The one text block of a tool result."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def first_id(answer: str) -> str:
    found = ID_IN_TEXT.search(answer)
    assert found, answer
    return found.group(1)


def stored(service: MemoryService, **filters: Any) -> list[MemoryNode]:
    """Every memory (forgotten ones too) ``filters`` select."""
    flt = service.filter(include_forgotten=True, **filters)
    return asyncio.run(service.memories.list_nodes(flt, limit=1000))
