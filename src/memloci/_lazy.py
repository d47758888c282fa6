"""Lazy exports for a package's ``__init__`` (PEP 562): a public name's module is
imported on first use, so importing the package stays fast."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, whose ``namespace``
    (its ``globals()``) gets each name of ``table`` (name → module) on first use."""

    def __getattr__(name: str) -> Any:
        """Load a public name on first use; it is then cached on the module."""
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(table[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
