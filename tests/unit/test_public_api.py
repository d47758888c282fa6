"""The public API: ``memloci.__all__`` is deliberate, sorted and importable.

Adding or removing a public name must be a conscious change to EXPECTED below.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect

import memloci

EXPECTED = [
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


def test_all_is_sorted_and_unique() -> None:
    assert list(memloci.__all__) == sorted(memloci.__all__)
    assert len(set(memloci.__all__)) == len(memloci.__all__)


def test_all_matches_the_expected_list() -> None:
    assert list(memloci.__all__) == EXPECTED


def test_every_public_name_is_importable() -> None:
    module = importlib.import_module("memloci")
    for name in memloci.__all__:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from memloci import *", namespace)
    assert set(EXPECTED) - {"__version__"} <= set(namespace)


def test_errors_share_one_root() -> None:
    for name in EXPECTED:
        obj = getattr(memloci, name)
        if name.endswith("Error"):
            assert inspect.isclass(obj) and issubclass(obj, memloci.MemlociError), name
            assert obj.code and obj.http_status >= 400 and obj.exit_code >= 1


def test_version_matches_the_distribution() -> None:
    assert memloci.__version__ == importlib.metadata.version("memloci")
