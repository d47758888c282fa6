"""The LangGraph checkpointer over memloci threads, driven by real ``StateGraph`` runs
(the installed langgraph ships no checkpointer conformance suite): resume by thread id,
across a reopened store; history; fork from a past checkpoint; interrupts (pending
writes); async graphs; large states; deletion; concurrent writers."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from pgtest import both_backends

pytest.importorskip("langgraph")

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from memloci.errors import ValidationError
from memloci.integrations.langgraph_checkpoint import (
    PREFIX,
    MemlociSaver,
    thread_config,
)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(saver: MemlociSaver, *, ask: bool = False) -> Any:
    def plan(state: State) -> dict[str, list[str]]:
        return {"log": [f"plan{len(state['log'])}"]}

    def act(state: State) -> dict[str, list[str]]:
        if ask:
            answer = interrupt("approve?")
            return {"log": [f"act:{answer}"]}
        return {"log": ["act"]}

    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("act", act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


@both_backends
def test_a_graph_resumes_by_thread_id_across_a_reopened_store(
    make_memory: Any, db_path: str
) -> None:
    config = thread_config("sam", chat="support-42", agent="planner")
    assert config["configurable"]["thread_id"] == "sam|support-42|planner"
    graph = _graph(MemlociSaver(make_memory()))
    assert graph.invoke({"log": ["hi"]}, config)["log"] == ["hi", "plan1", "act"]
    reopened = make_memory(db_path)  # another connection, as another process would
    graph2 = _graph(MemlociSaver(reopened))
    out = graph2.invoke({"log": ["again"]}, config)
    assert out["log"] == ["hi", "plan1", "act", "again", "plan4", "act"]
    other = thread_config("alex", chat="support-42", agent="planner")
    assert graph2.invoke({"log": ["x"]}, other)["log"] == ["x", "plan1", "act"]  # isolated
    stored = reopened.service.store.people.get_thread("default", PREFIX + "sam|support-42|planner")
    assert stored is not None and stored.user == "sam" and stored.agent == "planner"


def test_history_list_filters_and_fork(mem: Any) -> None:
    saver = MemlociSaver(mem)
    graph = _graph(saver)
    config = thread_config("sam", agent="planner")
    graph.invoke({"log": ["a"]}, config)
    history = list(graph.get_state_history(config))
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]  # newest first
    assert history[0].values["log"] == ["a", "plan1", "act"]
    # parents link back; list() honours limit, before and a metadata filter
    assert history[0].parent_config == history[1].config
    assert len(list(saver.list(config, limit=2))) == 2
    older = list(saver.list(config, before=history[1].config))
    assert [t.metadata["step"] for t in older] == [0, -1]
    assert [t.metadata["step"] for t in saver.list(config, filter={"source": "input"})] == [-1]
    assert [t.config for t in saver.list(None)] == [h.config for h in history]
    # fork: run again from the checkpoint after "plan"; the same history as LangGraph's
    # own in-memory saver gives (steps, sources, next nodes, values, parent links)
    assert _forked_history(saver) == _forked_history(InMemorySaver())


def _forked_history(saver: Any) -> list[tuple[Any, ...]]:
    graph = _graph(saver)
    config = thread_config("fork", agent="planner")
    graph.invoke({"log": ["a"]}, config)
    after_plan = next(h for h in graph.get_state_history(config) if h.next == ("act",))
    assert graph.invoke(None, after_plan.config)["log"] == ["a", "plan1", "act"]
    history = list(graph.get_state_history(config))
    ids = [h.config["configurable"]["checkpoint_id"] for h in history]
    parents = [
        (h.parent_config or {}).get("configurable", {}).get("checkpoint_id") for h in history
    ]
    return [
        (h.metadata["step"], h.metadata["source"], h.next, h.values, ids.index(p) if p else None)
        for h, p in zip(history, parents, strict=True)
    ]


def test_an_interrupt_keeps_pending_writes_and_resumes(mem: Any) -> None:
    graph = _graph(MemlociSaver(mem), ask=True)
    config = thread_config("sam", chat="c1", agent="deployer")
    first = graph.invoke({"log": ["go"]}, config)
    assert first["__interrupt__"][0].value == "approve?"
    state = graph.get_state(config)
    assert state.next == ("act",) and state.tasks[0].interrupts[0].value == "approve?"
    done = _graph(MemlociSaver(mem), ask=True).invoke(Command(resume="yes"), config)
    assert done["log"] == ["go", "plan1", "act:yes"]


def test_async_graph_and_large_state(mem: Any) -> None:
    saver = MemlociSaver(mem)
    graph = _graph(saver)
    config = thread_config("sam", agent="writer")
    big = "x" * 50_000  # over one message's 20,000 characters: split and joined back

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = await graph.ainvoke({"log": [big]}, config)
        tup = await saver.aget_tuple(config)
        assert tup is not None and tup.checkpoint["channel_values"]["log"][0] == big
        assert [t.metadata["step"] async for t in saver.alist(config)] == [2, 1, 0, -1]
        return out

    assert asyncio.run(run())["log"] == [big, "plan1", "act"]
    assert graph.get_state(config).values["log"][0] == big  # and sync reads it too


def test_delete_thread_and_bad_configs(mem: Any) -> None:
    saver = MemlociSaver(mem)
    graph = _graph(saver)
    keep, drop = thread_config("sam", agent="a"), thread_config("sam", agent="b")
    graph.invoke({"log": ["1"]}, keep)
    graph.invoke({"log": ["2"]}, drop)
    saver.delete_thread(drop["configurable"]["thread_id"])
    assert saver.get_tuple(drop) is None
    assert saver.get_tuple(keep) is not None
    asyncio.run(saver.adelete_thread(keep["configurable"]["thread_id"]))
    assert list(saver.list(None)) == []
    with pytest.raises(ValidationError, match=r"needs configurable\.thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(ValidationError, match="checkpoint_id"):
        saver.put_writes(keep, [("log", ["x"])], "task-1")
    assert saver.get_tuple(keep) is None  # nothing was written


@both_backends
def test_concurrent_writers_lose_nothing(mem: Any) -> None:
    saver = MemlociSaver(mem)
    config = thread_config("sam", agent="many")
    ckpt = empty_checkpoint()
    saved = saver.put(config, ckpt, {"source": "input", "step": -1}, {})
    barrier = threading.Barrier(8)

    def write(n: int) -> None:
        barrier.wait()
        saver.put_writes(saved, [("log", [f"w{n}"])], f"task-{n}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tup = saver.get_tuple(config)
    assert tup is not None
    assert sorted(w[0] for w in tup.pending_writes or []) == [f"task-{n}" for n in range(8)]
    # a repeated write of a task keeps the first value, as LangGraph's savers do
    saver.put_writes(saved, [("log", ["again"])], "task-0")
    again = saver.get_tuple(config)
    assert again is not None
    assert [w[2] for w in again.pending_writes or [] if w[0] == "task-0"] == [["w0"]]


def test_long_histories_span_data_shards_and_delete_removes_them(mem: Any) -> None:
    """Over 20 checkpoints the values and writes go to further data threads; reads
    across them give exactly LangGraph's in-memory history, and delete drops them all."""
    saver = MemlociSaver(mem)
    long_user = "u" * 190  # a composed id at the 200-character limit
    config = thread_config(long_user, chat="c", agent="a")

    def history(cp: Any) -> list[tuple[Any, ...]]:
        graph = _graph(cp)
        for n in range(8):  # 4 checkpoints each: 32 in all
            graph.invoke({"log": [f"t{n}"]}, config)
        return [
            (h.metadata["step"], h.metadata["source"], h.next, h.values)
            for h in graph.get_state_history(config)
        ]

    ours = history(saver)
    assert len(ours) == 32 and ours == history(InMemorySaver())
    ids = [t.id for t in mem.service.store.people.list_threads("default", limit=100)]
    assert len(ids) == 3 and all(len(i) <= 200 for i in ids)  # the index + 2 shards
    saver.delete_thread(config["configurable"]["thread_id"])
    assert mem.service.store.people.list_threads("default", limit=100) == []


def test_another_saver_finds_the_checkpoints_shard(
    mem: Any, make_memory: Any, db_path: str
) -> None:
    """Shard assignments cached by one saver are found from the index by another (as in
    another process): writes to a checkpoint in the second shard land beside it."""
    first = MemlociSaver(mem)
    config = thread_config("sam", agent="two")
    saved = config
    for n in range(25):  # 25 checkpoints: the last ones in shard 1
        ckpt = empty_checkpoint()
        ckpt["id"] = f"1f000000-0000-6000-8000-{n:012d}"
        saved = first.put(saved, ckpt, {"source": "loop", "step": n}, {})
    other = MemlociSaver(make_memory(db_path))
    other.put_writes(saved, [("log", ["late"])], "task-x")
    tup = first.get_tuple(config)
    assert tup is not None and tup.metadata["step"] == 24
    assert tup.pending_writes == [("task-x", "log", ["late"])]
    more = empty_checkpoint()
    more["id"] = "1f000000-0000-6000-8000-000000000099"
    other.put(saved, more, {"source": "loop", "step": 25}, {})  # counted from the index
    assert [t.metadata["step"] for t in first.list(config, limit=2)] == [25, 24]
