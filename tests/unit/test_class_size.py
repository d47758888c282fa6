"""No class or protocol of memloci has more than MAX_METHODS public methods: a large
contract is split into slices, each an object of its own (``store.memories``,
``store.search``, …), and a backend is composed of such objects, not stacked mixins.

The rule: every public class (name not starting with ``_``) defined in a module of
``memloci`` counts its public methods — functions, properties, class and static methods
whose name does not start with ``_`` — defined by the class itself or inherited from a
memloci class. What comes from a base outside memloci (``object``, ``Protocol``,
``Generic``, ``Exception``, pydantic's ``BaseModel``, ``Enum``, ``dict``, …) is not
counted: it is that library's surface, not memloci's. Data attributes (fields, enum
members, constants) are not methods. A module whose optional dependency is not
installed is skipped (it cannot be imported here)."""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from types import ModuleType

import memloci

MAX_METHODS = 40
_METHOD_KINDS = (staticmethod, classmethod, property, functools.cached_property)


def _modules() -> list[ModuleType]:
    out = [memloci]
    for info in pkgutil.walk_packages(memloci.__path__, "memloci."):
        if info.name.endswith("__main__"):
            continue
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra that is not installed
            continue
    return out


def public_methods(cls: type) -> set[str]:
    """The public methods ``cls`` has by the rule above."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("memloci"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            if inspect.isfunction(value) or isinstance(value, _METHOD_KINDS):
                names.add(name)
    return names


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in _modules():
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == module.__name__
            if defined_here and not name.startswith("_"):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_the_rule_counts_inherited_memloci_methods_and_not_library_ones() -> None:
    from typing import Protocol

    from pydantic import BaseModel

    class Model(BaseModel):
        x: int = 0

        def own(self) -> int:
            return self.x

    class Base(Protocol):
        def a(self) -> None: ...

        @property
        def b(self) -> int: ...

        def _hidden(self) -> None: ...

    class Child(Base):
        def c(self) -> None: ...

    Model.__module__ = Base.__module__ = Child.__module__ = "memloci.example"
    assert public_methods(Model) == {"own"}
    assert public_methods(Child) == {"a", "b", "c"}


def test_no_class_or_protocol_has_more_than_forty_public_methods() -> None:
    classes = _classes()
    assert "memloci.storage.base.Store" in classes  # the walk reached the storage
    assert "memloci.storage.sqlite.store.SQLiteStore" in classes
    big = {
        name: len(public_methods(cls))
        for name, cls in classes.items()
        if len(public_methods(cls)) > MAX_METHODS
    }
    assert big == {}
