"""The layering contract's checker: an AST scan of a package's imports, held against a
map of layers (used by ``test_layers.py``; ``python tests/unit/layers.py [SRC]`` prints
what it finds in a tree).

Every ``import`` counts, wherever it stands: at the top of a module, inside a function
(a lazy import is still a dependency) or under ``if TYPE_CHECKING:`` (a type is too).
``from pkg import name`` depends on ``pkg.name`` when that is a module, else on ``pkg``.
A module depends on no package it sits in merely by sitting there (Python runs the
package's ``__init__`` first, but that is not a design dependency).
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    """One dependency of a module on another: where it is written and how."""

    line: int
    kind: str  # "top", "lazy" (inside a function) or "typing" (under TYPE_CHECKING)


@dataclass(frozen=True)
class Layer:
    """A layer: its name, its rank (a module may import lower ranks and its own layer;
    two layers of one rank may not import each other) and the modules it holds (a
    dotted name holds itself and everything under it; a name ending in ``=`` holds
    exactly that module, e.g. a package's ``__init__`` apart from its submodules)."""

    name: str
    rank: int
    modules: tuple[str, ...]


Graph = dict[str, dict[str, Import]]


def modules_of(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src`` by dotted name (a package by its own)."""
    found = {}
    for path in sorted((src / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(node: ast.AST, kind: str = "top") -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import under ``node`` with its kind: ``typing`` under ``if TYPE_CHECKING:``,
    else ``lazy`` inside a function, else ``top``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, kind
        elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for stmt in child.body:
                yield from _imports(ast.Module([stmt], []), "typing")
            for stmt in child.orelse:
                yield from _imports(ast.Module([stmt], []), kind)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _imports(child, "lazy" if kind == "top" else kind)
        else:
            yield from _imports(child, kind)


def imports_of(src: Path, package: str) -> Graph:
    """The import graph of ``package``: module → {module it imports → first such import}."""
    mods = modules_of(src, package)

    def owner(name: str) -> str | None:  # the module a dotted name lives in
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: Graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, Import] = {}
        for node, kind in sorted(_imports(tree), key=lambda found: found[0].lineno):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from the package this module is in
                    parents = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join([*parents, *([base] if base else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            for target in targets:
                if target != package and not target.startswith(package + "."):
                    continue
                dep = owner(target)
                if dep is not None and dep != name and dep not in edges:
                    edges[dep] = Import(node.lineno, kind)
        graph[name] = edges
    return graph


def layer_of(module: str, layers: Sequence[Layer]) -> Layer | None:
    """The layer holding ``module`` (the longest matching name wins)."""
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for held in layer.modules:
            exact = held.endswith("=")
            held = held.rstrip("=")
            holds = module == held or (not exact and module.startswith(held + "."))
            if holds and (best is None or len(held) > best[0]):
                best = (len(held), layer)
    return best[1] if best else None


def layer_problems(
    graph: Graph,
    layers: Sequence[Layer],
    *,
    allowed: Mapping[tuple[str, str], str] = {},
    hidden: Mapping[str, frozenset[str]] = {},
) -> list[str]:
    """What breaks the layering: a module in no layer, a map entry that holds no module,
    an import of a higher layer (a back-import) or of another layer of the same rank, and
    an import of a layer hidden from the importer's (``hidden``: layer → layers it may
    not see). ``allowed`` pairs (importer, imported) are exempt, each with its reason."""
    problems = []
    for layer in layers:
        for held in layer.modules:
            name = held.rstrip("=")
            if not any(m == name or m.startswith(name + ".") for m in graph):
                problems.append(f"layer {layer.name!r} lists {held!r}, which is no module")
    for module in sorted(graph):
        if layer_of(module, layers) is None:
            problems.append(f"{module} is in no layer: add it to the map")
    for module, deps in sorted(graph.items()):
        mine = layer_of(module, layers)
        for dep, where in sorted(deps.items()):
            theirs = layer_of(dep, layers)
            if mine is None or theirs is None or (module, dep) in allowed:
                continue
            said = f"{module}:{where.line} ({where.kind}) imports {dep}"
            if theirs.rank > mine.rank:
                problems.append(f"{said}: back-import ({mine.name} < {theirs.name})")
            elif theirs.rank == mine.rank and theirs.name != mine.name:
                problems.append(f"{said}: {mine.name} and {theirs.name} are peers")
            elif theirs.name in hidden.get(mine.name, frozenset()):
                problems.append(f"{said}: {theirs.name} is hidden from {mine.name}")
    return problems


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles, each as a path that ends where it starts (``[a, b, a]``),
    smallest first: the shortest cycle through each strongly connected group of
    modules, then again with that cycle's closing import left out, until none is left
    (so tangled groups are reported cycle by cycle, each import closing one)."""
    succ = {m: sorted(d for d in deps if d in graph) for m, deps in graph.items()}
    found: list[list[str]] = []
    while groups := _groups(succ):
        for group in groups:
            path = _path(group, succ)
            found.append(path)
            succ[path[-2]].remove(path[-1])
    return sorted(found, key=lambda p: (len(p), p))


def _groups(succ: Mapping[str, list[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(succ):  # Tarjan, iterative
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups


def _path(group: list[str], succ: Mapping[str, list[str]]) -> list[str]:
    """The shortest path from the group's first module back to itself, in the group."""
    start, members = group[0], set(group)
    came: dict[str, str] = {}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in succ[node]:
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if nxt in members and nxt not in came:
                came[nxt] = node
                todo.append(nxt)
    raise AssertionError(f"{group} is not a cycle")


def show_cycle(path: list[str], graph: Graph) -> str:
    """``a -> b (line 12, lazy) -> a (line 3)``."""
    steps = [path[0]]
    for a, b in itertools.pairwise(path):
        where = graph[a][b]
        steps.append(f"{b} ({a}:{where.line}{'' if where.kind == 'top' else ', ' + where.kind})")
    return " -> ".join(steps)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from test_layers import ALLOWED, HIDDEN, LAYERS

    tree = imports_of(Path(sys.argv[1] if len(sys.argv) > 1 else "src"), "memloci")
    found = cycles(tree)
    print(f"{len(tree)} modules, {sum(map(len, tree.values()))} imports, {len(found)} cycles")
    for cycle in found:
        print("cycle:", show_cycle(cycle, tree))
    for problem in layer_problems(tree, LAYERS, allowed=ALLOWED, hidden=HIDDEN):
        print("layering:", problem)
