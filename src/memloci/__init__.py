"""memloci: long-term memory for LLM agents (public API only).

The errors load with the package; everything else (``Memory``, ``Settings``, the
models) on first use, so ``import memloci`` and the ``memloci`` command start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memloci._lazy import lazy_exports
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


__getattr__, __dir__ = lazy_exports("memloci", _LAZY, globals())


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
