"""memloci: long-term memory for LLM agents (public API only)."""

from memloci.config import Settings
from memloci.errors import (
    ConflictError,
    EmbeddingModelError,
    MemlociError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    StorageError,
    UnauthorizedError,
    ValidationError,
)
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

__version__ = "0.1.0"

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
    "Scope",
    "SearchHit",
    "Settings",
    "StorageError",
    "UnauthorizedError",
    "ValidationError",
    "WriteResult",
    "__version__",
]
