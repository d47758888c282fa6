"""A LangGraph checkpointer over memloci threads (layer: interfaces) — conversation
state of a graph kept in the same store as its long-term memory (one file to back up).

Needs ``pip install 'memloci[langchain]'``::

    from memloci.integrations.langgraph_checkpoint import MemlociSaver, thread_config

    saver = MemlociSaver(memory)                    # a Memory or AsyncMemory
    graph = builder.compile(checkpointer=saver)
    config = thread_config("sam", chat="support-42", agent="planner")
    graph.invoke({"messages": [...]}, config)       # later: the same config resumes

Mapping (stable; stored data relies on it):

- A LangGraph thread id is any string; :func:`thread_config` composes it from user +
  chat + workflow/agent with :func:`memloci.runtime.thread_id` (``"sam|support-42|planner"``),
  and then the stored thread belongs to that user and agent (``forget_user`` removes it).
- Each LangGraph thread is one memloci thread, id ``"langgraph:" + thread id``, in the
  saver's namespace, apart from the readable conversation threads of
  :class:`~memloci.runtime.ConversationMemory`.
- The index thread's messages (role ``tool``) are small ``checkpoint`` heads (id,
  parent, data shard, the channel versions it wrote). The data lives in shard threads
  ``langgraph-<n>:<thread id>``, one per 20 checkpoints: ``state`` (the checkpoint
  without its channel values, and its metadata), ``blob`` (one channel value at one
  version) and ``write`` (a pending write of a task). Values are serialised with the
  saver's serde (LangGraph's ``JsonPlusSerializer`` by default) and stored as base64 in
  the message text; a record over 19,000 characters is split over several messages.
  Ids over 200 characters keep 150 and a hash.
- Every put appends in one store transaction (atomic across threads and processes);
  a repeated pending write keeps its first value, as LangGraph's own savers do (the
  special error / interrupt writes keep the last).

Sync methods run the async ones (``get_tuple`` → ``aget_tuple`` …). A put rewrites the
index (small heads) and one shard (at most 20 checkpoints' data); a read parses the
index and the shards it needs. Very long histories are still slower than with
LangGraph's SQL savers (the index grows with every checkpoint); ``delete_thread``
drops a thread with all its shards.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memloci._extras import require

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError:  # the extra is not installed: say which one
    require("langchain", what="memloci.integrations.langgraph_checkpoint")
    raise

from memloci import validate as v
from memloci.errors import NotFoundError, ValidationError
from memloci.integrations._common import run_sync
from memloci.models import Thread
from memloci.runtime.conversation import thread_id
from memloci.sdk import AsyncMemory, Memory

__all__ = ["PREFIX", "MemlociSaver", "thread_config"]

PREFIX = "langgraph:"  # index threads: PREFIX + thread id
KIND = "langgraph"  # message metadata key: the record kind
PART = 19_000  # characters of one message
SHARD_SIZE = 20  # checkpoints whose state, values and writes share one data thread
ID_MAX, ID_KEEP = 200, 150


def thread_config(
    user: str, chat: str | None = None, agent: str | None = None, *, checkpoint_ns: str = ""
) -> RunnableConfig:
    """The LangGraph config of the conversation of ``user`` in ``chat`` with workflow /
    agent ``agent``: ``{"configurable": {"thread_id": "user|chat|agent", …}}``."""
    tid = thread_id(user, chat, agent)
    return {"configurable": {"thread_id": tid, "checkpoint_ns": checkpoint_ns}}


@dataclass
class _Index:
    """A LangGraph thread's index: checkpoint heads by (ns, id), and which data thread
    (shard) holds each channel value (ns, channel, version)."""

    tid: str
    heads: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    blob_shards: dict[tuple[str, str, str], int] = field(default_factory=dict)

    @property
    def shards(self) -> int:
        return 1 + max((int(h["shard"]) for h in self.heads.values()), default=0)


@dataclass
class _Shard:
    """One data thread: checkpoint states, channel values and pending writes."""

    states: dict[tuple[str, str], Any] = field(default_factory=dict)
    blobs: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], dict[str, Any]]] = field(
        default_factory=dict
    )


class MemlociSaver(BaseCheckpointSaver[Any]):
    """A LangGraph ``BaseCheckpointSaver`` storing checkpoints in memloci threads; see
    the module docstring. ``namespace``: where the threads live (default: the memory's)."""

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        namespace: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.service = memory.service
        self.namespace = v.namespace(namespace or self.service.settings.namespace)
        # this process's knowledge (shard assignments never change once written):
        self._counts: dict[str, int] = {}  # thread id -> checkpoints seen
        self._shards: dict[tuple[str, str, str], int] = {}  # (thread, ns, id) -> shard
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ sync
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return run_sync(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return iter(run_sync(self._list(config, filter, before, limit)))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return run_sync(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        run_sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        run_sync(self.adelete_thread(thread_id))

    # ------------------------------------------------------------------ async
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        tid, ns = _thread(config), _ns(config)
        index = await self._index(tid)
        if index is None:
            return None
        wanted = get_checkpoint_id(config)
        if wanted is None:
            ids = [cid for (cns, cid) in index.heads if cns == ns]
            if not ids:
                return None
            wanted = max(ids)
        if (ns, wanted) not in index.heads:
            return None
        return await self._tuple(index, ns, wanted, {})

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in await self._list(config, filter, before, limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        tid, ns = _thread(config), _ns(config)
        shard = await self._next_shard(tid)
        state: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = state.pop("channel_values", {}) or {}
        cid = checkpoint["id"]
        meta = self._dump(get_checkpoint_metadata(config, metadata))
        data = _messages("state", {"ns": ns, "id": cid}, [self._dump(state), meta])
        for channel, version in new_versions.items():
            blob = self._dump(values[channel]) if channel in values else ["empty", ""]
            data += _messages("blob", {"ns": ns, "channel": channel, "version": str(version)}, blob)
        await self._append(_stored(f"{KIND}-{shard}", tid), tid, data)
        blobs = [[c, str(ver)] for c, ver in new_versions.items()]
        head = {
            "tid": tid,
            "ns": ns,
            "id": cid,
            "parent": get_checkpoint_id(config),
            "shard": shard,
            "blobs": blobs,
        }
        await self._append(_stored(KIND, tid), tid, _messages("checkpoint", head, None))
        with self._lock:
            self._shards[(tid, ns, cid)] = shard
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}}

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        tid, ns = _thread(config), _ns(config)
        cid = config["configurable"].get("checkpoint_id")
        if not cid:
            raise ValidationError("put_writes needs configurable.checkpoint_id")
        messages: builtins.list[dict[str, Any]] = []
        for idx, (channel, value) in enumerate(writes):
            head = {
                "ns": ns,
                "checkpoint": cid,
                "task": task_id,
                "path": task_path,
                "channel": channel,
                "idx": WRITES_IDX_MAP.get(channel, idx),
            }
            messages += _messages("write", head, self._dump(value))
        if not messages:
            return
        shard = self._shards.get((tid, ns, cid))
        if shard is None:  # a checkpoint put by another process (or saver)
            index = await self._index(tid)
            known = index.heads.get((ns, cid)) if index is not None else None
            shard = int(known["shard"]) if known else await self._next_shard(tid, peek=True)
        await self._append(_stored(f"{KIND}-{shard}", tid), tid, messages)

    async def adelete_thread(self, thread_id: str) -> None:
        index = await self._index(thread_id)
        shards = index.shards if index is not None else 1
        ids = [
            _stored(KIND, thread_id),
            *(_stored(f"{KIND}-{n}", thread_id) for n in range(shards)),
        ]
        await self.service.records.delete_threads(ids, namespace=self.namespace)
        with self._lock:
            self._counts.pop(thread_id, None)
            for key in [k for k in self._shards if k[0] == thread_id]:
                del self._shards[key]

    # ------------------------------------------------------------------ reading
    async def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> builtins.list[CheckpointTuple]:
        indexes: builtins.list[_Index] = []
        if config is not None:
            one = await self._index(_thread(config))
            indexes = [one] if one is not None else []
        else:
            threads = await self.service.records.list_threads(namespace=self.namespace, limit=1000)
            for t in threads:
                if t.id.startswith(PREFIX):
                    full = await self._read(t.id)
                    if full is not None:
                        indexes.append(_index(full))
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        out: builtins.list[CheckpointTuple] = []
        for index in indexes:
            cache: dict[int, _Shard] = {}
            for ns, cid in sorted(index.heads, key=lambda k: k[1], reverse=True):
                if limit is not None and len(out) >= limit:
                    return out
                if (want_ns is not None and ns != want_ns) or (want_id and cid != want_id):
                    continue
                if before_id is not None and cid >= before_id:
                    continue
                item = await self._tuple(index, ns, cid, cache)
                if filter and any(item.metadata.get(k) != val for k, val in filter.items()):
                    continue
                out.append(item)
        return out

    async def _tuple(
        self, index: _Index, ns: str, cid: str, cache: dict[int, _Shard]
    ) -> CheckpointTuple:
        head, tid = index.heads[(ns, cid)], index.tid
        own = await self._shard(tid, int(head["shard"]), cache)
        state, meta = own.states[(ns, cid)]
        checkpoint: Checkpoint = self._load(state)
        values = {}
        for channel, version in checkpoint["channel_versions"].items():
            key = (ns, channel, str(version))
            where = index.blob_shards.get(key)
            blob = (
                (await self._shard(tid, where, cache)).blobs.get(key) if where is not None else None
            )
            if blob is not None and blob[0] != "empty":
                values[channel] = self._load(blob)
        writes = sorted(
            own.writes.get((ns, cid), {}).values(), key=lambda w: (w["path"], w["task"], w["idx"])
        )
        parent = head["parent"]
        return CheckpointTuple(
            config={"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self._load(meta),
            parent_config=(
                {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": parent}}
                if parent
                else None
            ),
            pending_writes=[(w["task"], w["channel"], self._load(w["value"])) for w in writes],
        )

    async def _index(self, tid: str) -> _Index | None:
        thread = await self._read(_stored(KIND, tid))
        index = _index(thread) if thread is not None else None
        if index is not None:
            with self._lock:
                self._counts[tid] = max(self._counts.get(tid, 0), len(index.heads))
                for (ns, cid), head in index.heads.items():
                    self._shards[(tid, ns, cid)] = int(head["shard"])
        return index

    async def _next_shard(self, tid: str, *, peek: bool = False) -> int:
        """The data thread of the thread's next checkpoint: one per ``SHARD_SIZE``
        checkpoints, counted from the index once per process, then locally."""
        if tid not in self._counts:
            await self._index(tid)
        with self._lock:
            count = self._counts.get(tid, 0)
            if not peek:
                self._counts[tid] = count + 1
        return count // SHARD_SIZE

    async def _shard(self, tid: str, n: int, cache: dict[int, _Shard]) -> _Shard:
        if n not in cache:
            thread = await self._read(_stored(f"{KIND}-{n}", tid))
            cache[n] = _shard(thread) if thread is not None else _Shard()
        return cache[n]

    async def _read(self, stored: str) -> Thread | None:
        try:
            return await self.service.records.get_thread(stored, namespace=self.namespace)
        except NotFoundError:
            return None

    # ------------------------------------------------------------------ writing
    async def _append(self, stored: str, tid: str, messages: builtins.list[dict[str, Any]]) -> None:
        user, agent = _owner(tid)
        await self.service.records.append_messages(
            stored, messages, namespace=self.namespace, user=user, agent=agent
        )

    def _dump(self, value: Any) -> builtins.list[str]:
        kind, data = self.serde.dumps_typed(value)
        return [kind, base64.b64encode(data).decode("ascii")]

    def _load(self, blob: Sequence[str]) -> Any:
        return self.serde.loads_typed((blob[0], base64.b64decode(blob[1])))


# ---------------------------------------------------------------------- helpers
def _thread(config: RunnableConfig) -> str:
    tid = (config.get("configurable") or {}).get("thread_id")
    if not isinstance(tid, str) or not tid:
        raise ValidationError(
            "the LangGraph config needs configurable.thread_id",
            hint="use thread_config(user, chat=…, agent=…) from this module",
        )
    return tid


def _ns(config: RunnableConfig) -> str:
    return str(config["configurable"].get("checkpoint_ns", "") or "")


def _stored(kind: str, tid: str) -> str:
    """The memloci thread id of a LangGraph thread's index (``langgraph:<id>``) or data
    shard (``langgraph-<n>:<id>``); over 200 characters: 150 + ``#`` + a hash."""
    full = f"{kind}:{tid}"
    if len(full) > ID_MAX:
        full = f"{full[:ID_KEEP]}#{hashlib.sha256(full.encode()).hexdigest()[:32]}"
    return v.required(full, "thread_id")


def _index(thread: Thread) -> _Index:
    index: _Index | None = None
    for kind, head, _payload in _records(thread):
        if kind != "checkpoint":
            continue
        index = index or _Index(str(head["tid"]))
        index.heads[(head["ns"], head["id"])] = head
        for channel, version in head["blobs"]:
            index.blob_shards[(head["ns"], channel, version)] = int(head["shard"])
    return index or _Index("")


def _shard(thread: Thread) -> _Shard:
    shard = _Shard()
    for kind, head, payload in _records(thread):
        if kind == "state":
            shard.states[(head["ns"], head["id"])] = payload
        elif kind == "blob":
            shard.blobs[(head["ns"], head["channel"], head["version"])] = payload
        elif kind == "write":
            key = (head["task"], int(head["idx"]))
            bucket = shard.writes.setdefault((head["ns"], head["checkpoint"]), {})
            if key not in bucket or key[1] < 0:  # the first regular write wins
                bucket[key] = {**head, "value": payload}
    return shard


def _owner(tid: str) -> tuple[str | None, str | None]:
    """The user and agent of a composed ``user|chat|agent`` id (None otherwise)."""
    parts = tid.split("|")
    if len(parts) != 3 or "#" in tid:
        return None, None
    user, _chat, agent = (
        p.replace("%7C", "|").replace("%23", "#").replace("%25", "%") for p in parts
    )
    try:
        return v.ident(user, "user") or None, v.ident(agent, "agent") or None
    except ValidationError:
        return None, None


def _messages(kind: str, head: dict[str, Any], payload: Any) -> list[dict[str, Any]]:
    text = json.dumps(payload, separators=(",", ":"))
    chunks = [text[i : i + PART] for i in range(0, len(text), PART)] or [""]
    return [
        {
            "role": "tool",
            "content": chunk,
            "metadata": {KIND: kind, "head": head, "part": n, "parts": len(chunks)},
        }
        for n, chunk in enumerate(chunks)
    ]


def _records(thread: Thread) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """``(kind, head, payload)`` of each complete record, in the order stored."""
    pending: list[str] = []
    for msg in thread.messages:
        meta = msg.metadata or {}
        kind = meta.get(KIND)
        if kind is None:
            continue
        part, parts = int(meta.get("part", 0)), int(meta.get("parts", 1))
        pending = [msg.content] if part == 0 else [*pending, msg.content]
        if part == parts - 1 and len(pending) == parts:
            yield str(kind), dict(meta["head"]), json.loads("".join(pending))
            pending = []
