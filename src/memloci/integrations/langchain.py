"""LangChain and LangGraph (layer: interfaces): the memory tools as ``StructuredTool``
objects, and :class:`MemlociStore`, a LangGraph ``BaseStore`` backed by memloci facts.

Needs ``pip install 'memloci[langchain]'``::

    from memloci.integrations.langchain import MemlociStore, memory_tools

    tools = memory_tools(memory, user="u1")  # bind to a chat model, or a ToolNode
    store = MemlociStore(memory, user_label=1)  # graph.compile(store=store)
    store.put(("memories", "u1"), "food", {"content": "Likes ramen"})

The LangGraph checkpointer (conversation state of a graph in memloci threads) is
:class:`memloci.integrations.langgraph_checkpoint.MemlociSaver`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Unpack

from memloci._extras import require

try:
    from langchain_core.tools import StructuredTool
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
except ImportError:  # the extra is not installed: say which one
    require("langchain", what="memloci.integrations.langchain")
    raise
from pydantic import ValidationError as PydanticValidationError

from memloci import validate as v
from memloci.errors import ValidationError
from memloci.integrations._common import Binding, ToolSource, bound_tools, run_sync, select
from memloci.models import CONTENT_MAX, CONTENT_MIN, MemoryNode, NodeFilter, NodeType, normalize_key
from memloci.sdk import AsyncMemory, Memory
from memloci.tools import ToolDef, Tools

__all__ = ["MemlociStore", "memory_tools"]

TEXT_FIELDS = ("content", "text", "memory")  # the value fields that become a fact's text
META = "langgraph"  # metadata key holding an item's LangGraph namespace and key
_FACTS = (NodeType.SEMANTIC, NodeType.OPINION)
_PAGE = 500


def memory_tools(
    memory: ToolSource,
    *,
    names: Iterable[str] | str | None = None,
    **binding: Unpack[Binding],
) -> list[StructuredTool]:
    """The memory tools as LangChain ``StructuredTool`` objects (sync and async).

    ``memory`` is a :class:`~memloci.Memory` / :class:`~memloci.AsyncMemory` or its
    (bound) tools; ``user`` / ``agent`` / ``session`` / ``namespace`` bind every call
    (the model cannot change them). ``names`` picks tools (default: all but the
    aliases). Each tool's ``args_schema`` is its pydantic arguments model; a call runs
    :meth:`memloci.tools.Tools.call`, so problems come back as ``Error: …`` text.
    """
    tools = bound_tools(memory, **binding)
    return [_structured(tools, tool) for tool in select(names)]


def _structured(tools: Tools, tool: ToolDef[Any]) -> StructuredTool:
    name, fields = tool.name, list(tool.args.model_fields)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        # LangChain passes a plain-string input positionally, as the first field
        return {fields[0]: args[0], **kwargs} if args and fields else kwargs

    def call(*args: Any, **kwargs: Any) -> str:
        return run_sync(tools.call(name, arguments(args, kwargs)))

    async def acall(*args: Any, **kwargs: Any) -> str:
        return await tools.call(name, arguments(args, kwargs))

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=name,
        description=tool.description,
        args_schema=tool.args,
        handle_validation_error=lambda exc: _invalid(name, exc),
        metadata={"read_only": tool.read_only},
    )


def _invalid(name: str, exc: Exception) -> str:
    """LangChain validates with the args model before the call: answer as the tool would."""
    if not isinstance(exc, PydanticValidationError):
        return f"Error: invalid arguments for {name}: {exc}."
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg'][:1].lower()}{e['msg'][1:]}"
        for e in exc.errors(include_url=False)
    ]
    return f"Error: invalid arguments for {name}: {'; '.join(problems)}."


class MemlociStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memloci facts.

    Mapping (stable; stored data relies on it):

    - Every item lives in one memloci namespace, ``namespace`` (default: the memory's),
      as a fact of category ``category`` (default ``langgraph``).
    - ``user_label``: the position in the LangGraph namespace that names the memloci
      user, e.g. ``1`` for ``("memories", "<user id>")``. Items then belong to that
      user — the memory tools bound to them see them — and an item whose namespace is
      too short for the position, or any item without ``user_label``, is shared.
    - The fact's text (searched by words and meaning) is the value's ``content``,
      ``text`` or ``memory`` field, or the fields ``put(..., index=[...])`` names
      (dotted paths), else the value as JSON; cut to 500 characters. The whole value
      is kept as the fact's value, the namespace and key in its metadata
      (``{"langgraph": {"namespace": [...], "key": ...}}``) and a derived memloci key
      (``<key>#<hash of namespace and key>``) makes (namespace, key) unique.
    - ``put`` of an existing key updates the fact (same id, a new version);
      ``delete`` forgets it (history kept). ``search(query=…)`` is memloci's hybrid
      search (``SearchItem.score``: higher is better); without a query, newest first.
      ``filter`` matches value fields as LangGraph's stores do (``$eq``, ``$ne``,
      ``$gt``, ``$gte``, ``$lt``, ``$lte``, nested dicts).

    memloci does not keep the same fact twice: a ``put`` of a new key whose text the
    same user (or the shared space) already holds — the same words, or with an embedder
    nearly the same meaning — confirms that memory instead of adding one, and ``get``
    of the new key finds nothing. ``list_namespaces`` reads every item; TTLs are not
    supported. Sync methods run the async ones (see ``abatch``).
    """

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        namespace: str | None = None,
        user_label: int | None = None,
        category: str = "langgraph",
    ) -> None:
        self.service = memory.service
        self.namespace = v.namespace(namespace or self.service.settings.namespace)
        if user_label is not None and (
            isinstance(user_label, bool) or not isinstance(user_label, int) or user_label < 0
        ):
            raise ValidationError(f"user_label must be a position ≥ 0, not {user_label!r}")
        self.user_label = user_label
        self.category = v.category(category)

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return run_sync(self.abatch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a put is seen by a later get of the batch)."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                node = await self._find(op.namespace, op.key)
                results.append(_item(node) if node else None)
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._namespaces(op))
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        return results

    # ------------------------------------------------------------------ operations
    def _user(self, namespace: Sequence[str]) -> str | None:
        at = self.user_label
        return namespace[at] if at is not None and len(namespace) > at else None

    def _filter(self, namespace: Sequence[str]) -> NodeFilter:
        return self.service.filter(
            namespace=self.namespace,
            owner_user=self._user(namespace),
            type=list(_FACTS),
            category=self.category,
        )

    async def _find(self, namespace: tuple[str, ...], key: str) -> MemoryNode | None:
        node = await self.service.memories.lookup(
            _memloci_key(namespace, key), namespace=self.namespace, user=self._user(namespace)
        )
        return node if node is not None and _identity(node) == (namespace, key) else None

    async def _put(self, op: PutOp) -> None:
        if op.ttl is not None:
            raise NotImplementedError("MemlociStore does not support TTLs; use ttl=None")
        if op.value is None:
            node = await self._find(op.namespace, op.key)
            if node is not None:
                await self.service.edits.forget(node.id, namespace=self.namespace)
            return
        value = dict(op.value)
        await self.service.memories.remember(
            _text(op.key, value, op.index),
            namespace=self.namespace,
            key=_memloci_key(op.namespace, op.key),
            value=value,
            category=self.category,
            user=self._user(op.namespace),
            metadata={META: {"namespace": list(op.namespace), "key": op.key}},
        )

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix, wanted = op.namespace_prefix, op.offset + op.limit
        flt = self._filter(prefix)

        def keep(node: MemoryNode) -> bool:
            ns, _ = _identity(node)
            return ns[: len(prefix)] == prefix and _matches(node, op.filter)

        found: list[SearchItem] = []
        if op.query:
            k = min(200, max(50, wanted * 5))
            hits = await self.service.memories.search(op.query, flt, k=k)
            found = [_hit(h.memory, h.score) for h in hits if keep(h.memory)]
        else:
            async for node in self._scan(flt):
                if keep(node):
                    found.append(_hit(node))
                    if len(found) >= wanted:
                        break
        return found[op.offset : wanted]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        async for node in self._scan(self._filter(())):
            ns, _ = _identity(node)
            if ns and all(_ns_matches(c, ns) for c in op.match_conditions or ()):
                seen.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(seen)[op.offset : op.offset + op.limit]

    async def _scan(self, flt: NodeFilter) -> AsyncIterator[MemoryNode]:
        """Every store item matching ``flt``, newest first."""
        offset = 0
        while True:
            page = await self.service.memories.list_nodes(
                flt, limit=_PAGE, offset=offset, order="-created"
            )
            for node in page:
                if META in node.metadata:
                    yield node
            if len(page) < _PAGE:
                return
            offset += _PAGE


# ---------------------------------------------------------------------- mapping
def _memloci_key(namespace: Sequence[str], key: str) -> str:
    """``<normalised key>#<32 hex>``: already in normal form, so memloci's fuzzy key
    matching can never merge two items; readable where the key is."""
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()[:32]
    return f"{normalize_key(key)[:100]}#{digest}"


def _identity(node: MemoryNode) -> tuple[tuple[str, ...], str | None]:
    meta = node.metadata.get(META)
    if not isinstance(meta, Mapping):
        return (), None
    return tuple(meta.get("namespace") or ()), meta.get("key")


def _text(key: str, value: Mapping[str, Any], index: Sequence[str] | bool | None) -> str:
    """The fact's text: the indexed fields (or the usual text fields), else the JSON."""
    paths = index if isinstance(index, list) and index else None
    parts = [_get(value, p) for p in paths] if paths else [value.get(f) for f in TEXT_FIELDS]
    text = " ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    if not text:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) < CONTENT_MIN:
        text = json.dumps({key: value}, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= CONTENT_MAX else text[: CONTENT_MAX - 1].rstrip() + "…"


def _get(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _item(node: MemoryNode) -> Item:
    ns, key = _identity(node)
    value = node.value if isinstance(node.value, dict) else {"content": node.content}
    return Item(
        namespace=ns,
        key=key or node.id,
        value=value,
        created_at=node.created_at,
        updated_at=node.updated_at,
    )


def _hit(node: MemoryNode, score: float | None = None) -> SearchItem:
    item = _item(node)
    return SearchItem(
        item.namespace, item.key, item.value, item.created_at, item.updated_at, score=score
    )


def _ns_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))


def _matches(node: MemoryNode, flt: Mapping[str, Any] | None) -> bool:
    value = node.value if isinstance(node.value, dict) else {}
    return all(_compare(value.get(k), want) for k, want in (flt or {}).items())


def _compare(have: Any, want: Any) -> bool:
    """LangGraph's filter semantics: exact values, nested dicts, ``$``-operators."""
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(have, op, arg) for op, arg in want.items())
        return isinstance(have, Mapping) and all(_compare(have.get(k), w) for k, w in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_compare(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError(f"unsupported filter operator {op!r}")
    try:
        a, b = float(have), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
