"""Agent tools (layer: tools): each tool defined once, exported for every API.

``openai_tools()`` / ``anthropic_tools()`` / ``mcp_tools()`` give the schemas;
``Tools(service, user=…)`` runs them and always answers with text (``Error: …`` on a
problem, never an exception).
"""

from memloci.tools.defs import (
    TOOLS,
    McpTool,
    ToolDef,
    anthropic_tools,
    get_tool,
    mcp_tools,
    openai_tools,
)
from memloci.tools.dispatch import ToolBinding, Tools
from memloci.tools.schema import clean_schema

__all__ = [
    "TOOLS",
    "McpTool",
    "ToolBinding",
    "ToolDef",
    "Tools",
    "anthropic_tools",
    "clean_schema",
    "get_tool",
    "mcp_tools",
    "openai_tools",
]
