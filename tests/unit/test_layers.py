"""The layering contract: imports flow one way, and no modules import each other in a
circle (see docs/architecture.md). The checker (``layers.py``) reads every import of
src/memloci — lazy ones inside functions and ``TYPE_CHECKING`` ones included — and is
itself tested here on small synthetic trees."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

from layers import Graph, Layer, cycles, imports_of, layer_problems, show_cycle

SRC = Path(__file__).resolve().parents[2] / "src"

# The layers, lowest first. A module may import its own layer and lower ranks; two
# layers of one rank may not import each other.
#
# - models: the value types and rules every layer shares, importing nothing above:
#   the error tree, the pydantic records and plain value types (NodeFilter, KeyPage,
#   Health), settings and store locations, input validation, word lists.
# - storage and providers: the backends behind the Store contract; the embedders,
#   rerankers and LLM clients. Neither knows the other.
# - retrieval: ranking and the prompt-context blocks (it reads storage, embeds queries).
# - consolidation: turns conversations into facts (it reuses retrieval's query parsing
#   and name mentions, never the other way round).
# - service: MemoryService and what it runs (workers, transfer, migration, knowledge
#   files, the composition root that opens a store).
# - tools, then runtime: the agent tools over a service, and the agent runtime over
#   those tools. They sit below the SDK because the SDK offers them
#   (``memory.tools``, ``memory.conversation``); neither imports the SDK.
# - sdk: ``Memory`` / ``AsyncMemory`` and the ``memloci`` package's public names.
# - interfaces and integrations: CLI, REST, MCP and web UI; the framework adapters.
#   Peers: neither imports the other.
LAYERS = (
    Layer(
        "models",
        0,
        (
            "memloci._version",
            "memloci._lazy",
            "memloci._extras",
            "memloci.blas",
            "memloci.config",
            "memloci.errors",
            "memloci.exiting",
            "memloci.kinds",
            "memloci.models",
            "memloci.rules",
            "memloci.telemetry",
            "memloci.validate",
            "memloci.words",
        ),
    ),
    Layer("storage", 1, ("memloci.storage",)),
    Layer("providers", 1, ("memloci.providers",)),
    Layer("retrieval", 2, ("memloci.retrieval", "memloci.context", "memloci.procedures")),
    Layer("consolidation", 3, ("memloci.consolidation", "memloci.decay")),
    Layer(
        "service",
        4,
        (
            "memloci.service",
            "memloci.migrate",
        ),
    ),
    Layer("tools", 5, ("memloci.tools",)),
    Layer("runtime", 6, ("memloci.runtime",)),
    Layer(
        "sdk",
        7,
        ("memloci=", "memloci.sdk", "memloci.sdk_args", "memloci.sdk_loop", "memloci.sdk_tools"),
    ),
    Layer("interfaces", 8, ("memloci.interfaces", "memloci.__main__")),
    Layer("integrations", 8, ("memloci.integrations",)),
)

# Storage is the service's business: above the service nothing reads it (the value
# types it takes live in memloci.models, store locations in memloci.config).
HIDDEN = dict.fromkeys(
    ("tools", "runtime", "sdk", "interfaces", "integrations"), frozenset({"storage"})
)

# (importer, imported) pairs exempt from the rules above, each with its reason.
ALLOWED = {
    ("memloci.sdk", "memloci.storage.base"): (
        "Memory(store=...) takes any backend: the SDK names the Store contract as the "
        "type of that parameter (opening a store is memloci.service.compose's)"
    ),
}


@functools.cache
def _src() -> Graph:
    return imports_of(SRC, "memloci")


def test_src_keeps_its_layers() -> None:
    graph = _src()
    assert len(graph) > 100  # the scan found the package
    problems = layer_problems(graph, LAYERS, allowed=ALLOWED, hidden=HIDDEN)
    assert not problems, "\n".join(problems)


def test_src_has_no_import_cycles() -> None:
    graph = _src()
    found = [show_cycle(cycle, graph) for cycle in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_every_exemption_is_still_needed() -> None:
    graph = _src()
    stale = [pair for pair in ALLOWED if pair[1] not in graph.get(pair[0], {})]
    assert not stale, f"these exemptions import nothing any more, remove them: {stale}"


# The checker itself, on small trees.

MINI = (
    Layer("models", 0, ("app.models",)),
    Layer("storage", 1, ("app.storage",)),
    Layer("providers", 1, ("app.providers",)),
    Layer("service", 2, ("app.service",)),
    Layer("interfaces", 3, ("app=", "app.cli")),
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"app/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _sound(root: Path) -> dict[str, str]:
    return {
        "app/models.py": "X = 1\n",
        "app/storage/__init__.py": "from app.storage.base import Store\n",
        "app/storage/base.py": "from app.models import X\nclass Store: ...\n",
        "app/providers.py": "from app import models\n",
        "app/service.py": "from app.storage import base\nfrom app.providers import *\n",
        "app/cli.py": "import app.service\n",
    }


def test_the_checker_passes_a_sound_tree(tmp_path: Path) -> None:
    graph = imports_of(_tree(tmp_path, _sound(tmp_path)), "app")
    assert set(graph["app.service"]) == {"app.storage.base", "app.providers"}
    assert graph["app.providers"]["app.models"].kind == "top"
    assert layer_problems(graph, MINI) == []
    assert cycles(graph) == []


def test_the_checker_fails_on_a_back_import(tmp_path: Path) -> None:
    files = _sound(tmp_path)
    # storage reaching up into the service, lazily: still a dependency
    files["app/storage/base.py"] += "def f():\n    from app.service import Y\n"
    graph = imports_of(_tree(tmp_path, files), "app")
    assert layer_problems(graph, MINI) == [
        "app.storage.base:4 (lazy) imports app.service: back-import (storage < service)"
    ]
    # ... and that closes a circle: service -> storage.base -> service
    assert [show_cycle(c, graph) for c in cycles(graph)] == [
        "app.service -> app.storage.base (app.service:1) -> app.service (app.storage.base:4, lazy)"
    ]
    # an exemption names the pair and says why
    allowed = {("app.storage.base", "app.service"): "a reason"}
    assert layer_problems(graph, MINI, allowed=allowed) == []


def test_the_checker_fails_on_peers_hidden_layers_and_unmapped_modules(tmp_path: Path) -> None:
    files = _sound(tmp_path)
    files["app/providers.py"] += (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.storage import Store\n"
    )
    files["app/cli.py"] += "from app.storage.base import Store\n"
    files["app/extra.py"] = ""
    graph = imports_of(_tree(tmp_path, files), "app")
    hidden = {"interfaces": frozenset({"storage"})}
    assert layer_problems(graph, [*MINI, Layer("gone", 0, ("app.gone",))], hidden=hidden) == [
        "layer 'gone' lists 'app.gone', which is no module",
        "app.extra is in no layer: add it to the map",
        "app.cli:2 (top) imports app.storage.base: storage is hidden from interfaces",
        "app.providers:4 (typing) imports app.storage: providers and storage are peers",
    ]


def test_the_checker_reports_each_cycle_once(tmp_path: Path) -> None:
    files = {
        "app/a.py": "from app import b\n",
        "app/b.py": "from . import c\n",  # relative imports resolve too
        "app/c.py": "import app.a\n",
        "app/d.py": "def f():\n    import app.e\n",
        "app/e.py": "from app.d import f\n",
    }
    graph = imports_of(_tree(tmp_path, files), "app")
    assert cycles(graph) == [["app.d", "app.e", "app.d"], ["app.a", "app.b", "app.c", "app.a"]]
