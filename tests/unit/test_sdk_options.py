"""The SDK's typed options (``memloci.sdk_args``) are the service's keywords: a keyword
the service adds or drops shows here, and an unknown one is refused by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memloci import Memory
from memloci.sdk_args import OPTIONS
from memloci.service.edits import Edits
from memloci.service.knowledge import Knowledge
from memloci.service.memories import Memories

SERVICE: dict[str, Callable[..., Any]] = {
    "remember": Memories.remember.fn,
    "update": Edits.update.fn,
    "correct": Edits.correct.fn,
    "lookup": Memories.lookup.fn,
    "learn_procedure": Memories.learn_procedure.fn,
    "record_episode": Memories.record_episode.fn,
    "record_procedure_use": Memories.record_procedure_use.fn,
    "add_knowledge": Knowledge.add_knowledge.fn,
    "search_knowledge": Knowledge.search_knowledge.fn,
}


def _keywords(method: Callable[..., Any]) -> frozenset[str]:
    params = inspect.signature(method).parameters.values()
    return frozenset(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


@pytest.mark.parametrize("name", sorted(SERVICE))
def test_each_methods_options_are_the_services_keywords(name: str) -> None:
    assert OPTIONS[name] == _keywords(SERVICE[name])


def test_an_unknown_option_is_a_type_error_naming_the_method(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder="none") as memory:
        with pytest.raises(
            TypeError, match=r"remember\(\) got an unexpected keyword argument 'colour'"
        ):
            memory.remember("The user likes tea", colour="green")  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"lookup\(\) .* 'kind'"):
            memory.lookup("drink", kind="x")  # type: ignore[call-arg]
        assert memory.count() == 0
        written = memory.remember("The user likes tea", key="drink", confidence=0.9)
        found = memory.lookup("drink")
        assert found is not None and found.id == written.memory.id
