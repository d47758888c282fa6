"""memloci: long-term memory for LLM agents (public API only).

The errors load with the package; everything else (``Memory``, ``Settings``, the
models) on first use, so ``import memloci`` and the ``memloci`` command start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from memloci._version import __version__ as __version__
from memloci.errors import (
    ConflictError,
    EmbeddingModelError,
    MemlociError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    ReadOnlyError,
    StorageError,
    StorageFullError,
    StoreTooNewError,
    UnauthorizedError,
    ValidationError,
)

if TYPE_CHECKING:
    from memloci.config import Settings
    from memloci.models import (
        Edge,
        Entity,
        FactType,
        MemoryNode,
        MemoryUser,
        MemoryVersion,
        NodeType,
        Scope,
        SearchHit,
        WriteResult,
    )
    from memloci.sdk import AsyncMemory, Memory


_MODELS = (
    "Edge",
    "Entity",
    "FactType",
    "MemoryNode",
    "MemoryUser",
    "MemoryVersion",
    "NodeType",
    "Scope",
    "SearchHit",
    "WriteResult",
)
_LAZY = {
    "Settings": "memloci.config",
    **dict.fromkeys(_MODELS, "memloci.models"),
    "AsyncMemory": "memloci.sdk",
    "Memory": "memloci.sdk",
}


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562); it is then cached on the module."""
    if name not in _LAZY:
        raise AttributeError(f"module 'memloci' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "AsyncMemory",
    "ConflictError",
    "Edge",
    "EmbeddingModelError",
    "Entity",
    "FactType",
    "MemlociError",
    "Memory",
    "MemoryNode",
    "MemoryUser",
    "MemoryVersion",
    "NodeType",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "ReadOnlyError",
    "Scope",
    "SearchHit",
    "Settings",
    "StorageError",
    "StorageFullError",
    "StoreTooNewError",
    "UnauthorizedError",
    "ValidationError",
    "WriteResult",
    "__version__",
]
