"""A LangGraph checkpointer over memloci threads (layer: interfaces) — conversation
state of a graph kept in the same store as its long-term memory (reference 000).

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
- Its messages (role ``tool``) are records: ``checkpoint`` (the checkpoint without its
  channel values, its metadata, the parent id), ``blob`` (one channel value at one
  version) and ``write`` (a pending write of a task). Values are serialised with the
  saver's serde (LangGraph's ``JsonPlusSerializer`` by default) and stored as base64 in
  the message text; a record over 19,000 characters is split over several messages.
- Every put appends in one store transaction (atomic across threads and processes);
  a repeated pending write keeps its first value, as LangGraph's own savers do (the
  special error / interrupt writes keep the last).

Sync methods run the async ones (``get_tuple`` → ``aget_tuple`` …). Each put reads and
rewrites the thread's record list, so very long histories are slower than with
LangGraph's SQL savers; ``delete_thread`` or ``prune`` keep them short.
"""

from __future__ import annotations

import base64
import builtins
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
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

PREFIX = "langgraph:"
KIND = "langgraph"  # message metadata key: the record kind
PART = 19_000  # characters of one message


def thread_config(
    user: str, chat: str | None = None, agent: str | None = None, *, checkpoint_ns: str = ""
) -> RunnableConfig:
    """The LangGraph config of the conversation of ``user`` in ``chat`` with workflow /
    agent ``agent``: ``{"configurable": {"thread_id": "user|chat|agent", …}}``."""
    tid = thread_id(user, chat, agent)
    return {"configurable": {"thread_id": tid, "checkpoint_ns": checkpoint_ns}}


@dataclass
class _Records:
    """A thread's records, read back: checkpoints by (ns, id), blobs, writes."""

    checkpoints: dict[tuple[str, str], dict[str, Any]]
    blobs: dict[tuple[str, str, str], list[Any]]
    writes: dict[tuple[str, str], dict[tuple[str, int], dict[str, Any]]]


class MemlociSaver(BaseCheckpointSaver[Any]):
    """A LangGraph ``BaseCheckpointSaver`` storing checkpoints in memloci threads; see
    the module docstring. ``namespace``: where the threads live (default: the memory's)."""

    def __init__(
        self, memory: Memory | AsyncMemory, *, namespace: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:  # fmt: skip
        super().__init__(serde=serde)
        self.service = memory.service
        self.namespace = v.namespace(namespace or self.service.settings.namespace)

    # ------------------------------------------------------------------ sync
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return run_sync(self.aget_tuple(config))

    def list(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:  # fmt: skip
        return iter(run_sync(self._list(config, filter, before, limit)))

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:  # fmt: skip
        return run_sync(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:  # fmt: skip
        run_sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        run_sync(self.adelete_thread(thread_id))

    # ------------------------------------------------------------------ async
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        tid, ns = _thread(config), _ns(config)
        records = await self._read(tid)
        if records is None:
            return None
        wanted = get_checkpoint_id(config)
        ids = [cid for (cns, cid) in records.checkpoints if cns == ns]
        if wanted is None:
            if not ids:
                return None
            wanted = max(ids)
        if (ns, wanted) not in records.checkpoints:
            return None
        return self._tuple(tid, ns, wanted, records)

    async def alist(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:  # fmt: skip
        for item in await self._list(config, filter, before, limit):
            yield item

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:  # fmt: skip
        tid, ns = _thread(config), str(config["configurable"].get("checkpoint_ns", ""))
        saved: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = saved.pop("channel_values", {}) or {}
        messages: builtins.list[dict[str, Any]] = []
        for channel, version in new_versions.items():
            blob = self._dump(values[channel]) if channel in values else ["empty", ""]
            messages += _messages("blob", {"ns": ns, "channel": channel,
                                           "version": str(version)}, blob)  # fmt: skip
        record = {
            "checkpoint": self._dump(saved),
            "metadata": self._dump(get_checkpoint_metadata(config, metadata)),
        }
        head = {"ns": ns, "id": checkpoint["id"], "parent": get_checkpoint_id(config)}
        messages += _messages("checkpoint", head, record)
        await self._append(tid, messages)
        return {"configurable": {"thread_id": tid, "checkpoint_ns": ns,
                                 "checkpoint_id": checkpoint["id"]}}  # fmt: skip

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:  # fmt: skip
        tid, ns = _thread(config), _ns(config)
        cid = config["configurable"].get("checkpoint_id")
        if not cid:
            raise ValidationError("put_writes needs configurable.checkpoint_id")
        messages: builtins.list[dict[str, Any]] = []
        for idx, (channel, value) in enumerate(writes):
            head = {"ns": ns, "checkpoint": cid, "task": task_id, "path": task_path,
                    "channel": channel, "idx": WRITES_IDX_MAP.get(channel, idx)}  # fmt: skip
            messages += _messages("write", head, self._dump(value))
        if messages:
            await self._append(tid, messages)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.service.delete_threads([_stored(thread_id)], namespace=self.namespace)

    # ------------------------------------------------------------------ reading
    async def _list(
        self, config: RunnableConfig | None, filter: dict[str, Any] | None,
        before: RunnableConfig | None, limit: int | None,
    ) -> builtins.list[CheckpointTuple]:  # fmt: skip
        if config is not None:
            tids = [_thread(config)]
        else:
            threads = await self.service.list_threads(namespace=self.namespace, limit=1000)
            tids = [t.id[len(PREFIX) :] for t in threads if t.id.startswith(PREFIX)]
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        out: builtins.list[CheckpointTuple] = []
        for tid in tids:
            records = await self._read(tid)
            if records is None:
                continue
            for ns, cid in sorted(records.checkpoints, key=lambda k: k[1], reverse=True):
                if limit is not None and len(out) >= limit:
                    return out
                if (want_ns is not None and ns != want_ns) or (want_id and cid != want_id):
                    continue
                if before_id is not None and cid >= before_id:
                    continue
                item = self._tuple(tid, ns, cid, records)
                if filter and any(item.metadata.get(k) != val for k, val in filter.items()):
                    continue
                out.append(item)
        return out

    def _tuple(self, tid: str, ns: str, cid: str, records: _Records) -> CheckpointTuple:
        head = records.checkpoints[(ns, cid)]
        checkpoint: Checkpoint = self._load(head["record"]["checkpoint"])
        values = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = records.blobs.get((ns, channel, str(version)))
            if blob is not None and blob[0] != "empty":
                values[channel] = self._load(blob)
        writes = sorted(records.writes.get((ns, cid), {}).values(),
                        key=lambda w: (w["path"], w["task"], w["idx"]))  # fmt: skip
        parent = head["parent"]
        return CheckpointTuple(
            config={"configurable": {"thread_id": tid, "checkpoint_ns": ns,
                                     "checkpoint_id": cid}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self._load(head["record"]["metadata"]),
            parent_config=(
                {"configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": parent}}
                if parent else None
            ),
            pending_writes=[(w["task"], w["channel"], self._load(w["value"])) for w in writes],
        )  # fmt: skip

    async def _read(self, tid: str) -> _Records | None:
        try:
            thread = await self.service.get_thread(_stored(tid), namespace=self.namespace)
        except NotFoundError:
            return None
        records = _Records({}, {}, {})
        for kind, head, payload in _records(thread):
            if kind == "checkpoint":
                records.checkpoints[(head["ns"], head["id"])] = {**head, "record": payload}
            elif kind == "blob":
                records.blobs[(head["ns"], head["channel"], head["version"])] = payload
            elif kind == "write":
                key = (head["task"], int(head["idx"]))
                bucket = records.writes.setdefault((head["ns"], head["checkpoint"]), {})
                if key not in bucket or key[1] < 0:  # first regular write wins
                    bucket[key] = {**head, "value": payload}
        return records

    # ------------------------------------------------------------------ writing
    async def _append(self, tid: str, messages: builtins.list[dict[str, Any]]) -> None:
        user, agent = _owner(tid)
        await self.service.append_messages(
            _stored(tid), messages, namespace=self.namespace, user=user, agent=agent
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


def _stored(tid: str) -> str:
    return v.required(PREFIX + tid, "thread_id")


def _owner(tid: str) -> tuple[str | None, str | None]:
    """The user and agent of a composed ``user|chat|agent`` id (None otherwise)."""
    parts = tid.split("|")
    if len(parts) != 3 or "#" in tid:
        return None, None
    user, _chat, agent = (p.replace("%7C", "|").replace("%23", "#").replace("%25", "%")
                          for p in parts)  # fmt: skip
    try:
        return v.ident(user, "user") or None, v.ident(agent, "agent") or None
    except ValidationError:
        return None, None


def _messages(kind: str, head: dict[str, Any], payload: Any) -> list[dict[str, Any]]:
    text = json.dumps(payload, separators=(",", ":"))
    chunks = [text[i : i + PART] for i in range(0, len(text), PART)] or [""]
    return [
        {"role": "tool", "content": chunk,
         "metadata": {KIND: kind, "head": head, "part": n, "parts": len(chunks)}}
        for n, chunk in enumerate(chunks)
    ]  # fmt: skip


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
