"""Framework integrations, driven through the real libraries with their offline test
models: LangChain tools and a LangGraph graph, the LangGraph store, pydantic-ai agents,
and the OpenAI Agents SDK session and runner."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from agents import Agent as OpenAIAgent
from agents import RunConfig, Runner, Session
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memloci import AsyncMemory, Memory, ValidationError
from memloci.integrations import langchain as lc
from memloci.integrations import openai_agents as oa
from memloci.integrations import pydantic_ai as pa
from memloci.models import TURN_MAX
from memloci.providers.fake import FakeEmbedder
from memloci.tools import TOOLS
from memloci.tools.args import RememberArgs

T = TypeVar("T")
MAIN_TOOLS = [name for name, t in TOOLS.items() if t.alias_of is None]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# ---------------------------------------------------------------------- the package
def test_the_package_itself_imports_no_framework() -> None:
    code = (
        "import sys, memloci.integrations; "
        "print([m for m in ('langchain_core', 'langgraph', 'pydantic_ai', 'agents') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- LangChain tools
def test_langchain_tools_are_the_memloci_tools(make_memory: Any) -> None:
    m: Memory = make_memory()
    tools = {t.name: t for t in lc.memory_tools(m, user="sam")}
    assert list(tools) == MAIN_TOOLS
    remember = tools["remember"]
    assert remember.args_schema is RememberArgs
    assert remember.description == TOOLS["remember"].description
    assert tools["recall"].metadata == {"read_only": True}
    assert [t.name for t in lc.memory_tools(m, names="search_memory")] == ["search_memory"]
    with pytest.raises(ValidationError):
        lc.memory_tools(m, names=["nope"])
    with pytest.raises(ValidationError):
        lc.memory_tools(m, user="bad\nid")


def test_langchain_tools_remember_recall_and_never_raise(make_memory: Any) -> None:
    m: Memory = make_memory()
    sam = {t.name: t for t in lc.memory_tools(m, user="sam", session="s1")}
    alex = {t.name: t for t in lc.memory_tools(m.tools(user="alex"))}
    text = sam["remember"].invoke({"content": "Sam keeps bees on the roof", "key": "hobby"})
    assert text.startswith("Remembered")
    assert "bees" in sam["recall"].invoke({"query": "bees"})
    assert "bees" in sam["recall"].invoke("bees")  # a plain string goes to the first field
    assert "roof" not in alex["recall"].invoke({"query": "bees"})  # bound: alex cannot see it
    assert m.list(owner="sam")[0].session == "s1"
    # invalid arguments (LangChain's own validation) and refusals come back as text
    bad = sam["remember"].invoke({"content": "hi"})
    assert bad.startswith("Error: invalid arguments for remember: content")
    assert sam["forget"].invoke({"memory_id": "a1B2c3D4"}).startswith("Error:")
    msg = sam["remember"].invoke(
        {"type": "tool_call", "id": "c1", "name": "remember", "args": {"content": 3}}
    )
    assert isinstance(msg, ToolMessage) and msg.status == "error"
    assert msg.content.startswith("Error: invalid arguments for remember")
    # async, from inside a running loop (the sync path then runs in a worker thread)
    assert "bees" in run(sam["recall"].ainvoke({"query": "bees"}))

    async def sync_inside_loop() -> str:
        return str(sam["recall"].invoke({"key": "hobby"}))

    assert "bees" in run(sync_inside_loop())


def test_langgraph_agent_remembers_then_recalls(make_memory: Any) -> None:
    m: Memory = make_memory()
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "remember",
                            "args": {"content": "The user is allergic to peanuts"},
                            "id": "c1",
                        }
                    ],
                ),
                AIMessage(
                    "", tool_calls=[{"name": "recall", "args": {"query": "peanuts"}, "id": "c2"}]
                ),
                AIMessage("You are allergic to peanuts."),
            ]
        )
    )

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(lc.memory_tools(m, user="u1")))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    out = graph.compile().invoke({"messages": [HumanMessage("I can't eat peanuts")]})
    results = [x.content for x in out["messages"] if isinstance(x, ToolMessage)]
    assert results[0].startswith("Remembered")
    assert "allergic to peanuts" in results[1]
    assert out["messages"][-1].content == "You are allergic to peanuts."
    assert [n.content for n in m.list(owner="u1")] == ["The user is allergic to peanuts"]


# ---------------------------------------------------------------------- LangGraph store
def test_langgraph_store_put_get_search_delete(make_memory: Any) -> None:
    m: Memory = make_memory()
    store = lc.MemlociStore(m, user_label=1)
    store.put(("memories", "u1"), "hobby", {"content": "Keeps bees on the roof", "n": 1})
    store.put(("memories", "u2"), "hobby", {"content": "Plays the cello at night", "n": 5})
    store.put(("docs",), "Read Me", {"title": "Deploy guide", "n": 3})

    one = store.get(("memories", "u1"), "hobby")
    assert one is not None and one.value == {"content": "Keeps bees on the roof", "n": 1}
    assert one.namespace == ("memories", "u1") and one.key == "hobby"
    two = store.get(("memories", "u2"), "hobby")
    assert two is not None and two.value["content"] == "Plays the cello at night"
    assert store.get(("memories", "u3"), "hobby") is None
    assert store.get(("docs",), "read_me") is None  # keys are exact, not fuzzy

    # the user mapping: items belong to the memloci user, and their tools see them
    assert [n.content for n in m.list(owner="u1")] == ["Keeps bees on the roof"]
    assert "bees" in m.tools(user="u1").call("recall", {"query": "bees"})
    assert "roof" not in m.tools(user="u2").call("recall", {"query": "bees"})

    hits = store.search(("memories",), query="bees on the roof")
    assert hits[0].key == "hobby" and hits[0].namespace == ("memories", "u1")
    assert hits[0].score is not None and all(h.namespace[0] == "memories" for h in hits)
    assert [h.namespace for h in store.search(("memories", "u2"), query="bees")] == [
        ("memories", "u2")
    ]
    assert [h.key for h in store.search((), filter={"n": {"$gte": 3}})] == ["Read Me", "hobby"]
    assert [h.value["n"] for h in store.search((), filter={"n": 1})] == [1]
    assert len(store.search((), limit=2)) == 2 and len(store.search((), offset=2)) == 1

    assert store.list_namespaces() == [("docs",), ("memories", "u1"), ("memories", "u2")]
    assert store.list_namespaces(prefix=("memories",), max_depth=1) == [("memories",)]
    assert store.list_namespaces(suffix=("u2",)) == [("memories", "u2")]
    assert store.list_namespaces(prefix=("*", "u1")) == [("memories", "u1")]

    store.put(("memories", "u1"), "hobby", {"content": "Keeps three hives of bees"})
    again = store.get(("memories", "u1"), "hobby")
    assert again is not None and again.value == {"content": "Keeps three hives of bees"}
    assert again.created_at == one.created_at
    node = m.list(owner="u1")[0]
    assert node.version == 2 and node.content == "Keeps three hives of bees"

    store.delete(("memories", "u1"), "hobby")
    assert store.get(("memories", "u1"), "hobby") is None
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "u2")]
    assert m.count(owner="u1") == 0
    with pytest.raises(NotImplementedError):
        store.put(("docs",), "x", {"content": "expires soon"}, ttl=5)


def test_langgraph_store_text_and_async(make_memory: Any) -> None:
    m: Memory = make_memory(namespace="app")
    store = lc.MemlociStore(m, namespace="graph-items", category="notes")

    async def go() -> None:
        await store.aput(
            ("a",), "k", {"meta": {"title": "Quarterly planning notes"}}, index=["meta.title"]
        )
        await store.aput(("a",), "tiny", {"text": "ok"})
        await store.aput(("a",), "long", {"memory": "x" * 900})
        item = await store.aget(("a",), "k")
        assert item is not None and item.value == {"meta": {"title": "Quarterly planning notes"}}
        hits = await store.asearch(("a",), query="quarterly planning")
        assert hits[0].key == "k"
        assert await store.alist_namespaces() == [("a",)]

    run(go())
    texts = {n.metadata["langgraph"]["key"]: n.content for n in m.list(namespace="graph-items")}
    assert texts["k"] == "Quarterly planning notes"
    assert json.loads(texts["tiny"]) == {"tiny": {"text": "ok"}}  # too short alone
    assert len(texts["long"]) == 500 and texts["long"].endswith("…")
    assert {n.category for n in m.list(namespace="graph-items")} == {"notes"}
    assert m.list() == []  # the memory's own namespace is untouched
    with pytest.raises(ValidationError):
        lc.MemlociStore(m, user_label=-1)


def test_langgraph_store_inside_a_graph(make_memory: Any) -> None:
    m: Memory = make_memory()

    def write(state: MessagesState) -> dict[str, Any]:
        get_store().put(("memories", "u9"), "note", {"content": "Graph nodes can write memory"})
        return {}

    def read(state: MessagesState) -> dict[str, Any]:
        hits = get_store().search(("memories", "u9"), query="graph memory")
        return {"messages": [AIMessage(hits[0].value["content"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("write", write)
    graph.add_node("read", read)
    graph.add_edge(START, "write")
    graph.add_edge("write", "read")
    app = graph.compile(store=lc.MemlociStore(m, user_label=1))
    out = app.invoke({"messages": [HumanMessage("go")]})
    assert out["messages"][-1].content == "Graph nodes can write memory"
    assert m.list(owner="u9")[0].content == "Graph nodes can write memory"


# ---------------------------------------------------------------------- pydantic-ai
def test_pydantic_ai_agent_remembers_then_recalls(db_path: str) -> None:
    calls: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            p
            for msg in messages
            for p in getattr(msg, "parts", [])
            if isinstance(p, ToolReturnPart)
        ]
        calls.extend(p.content for p in returns[len(calls) :])
        if not returns:
            assert {t.name for t in info.function_tools} == set(MAIN_TOOLS)
            return ModelResponse(parts=[ToolCallPart("remember", {"content": "hi"})])
        if len(returns) == 1:
            args = {"content": "The user lives in Lisbon", "key": "home_city"}
            return ModelResponse(parts=[ToolCallPart("remember", args)])
        if len(returns) == 2:
            return ModelResponse(parts=[ToolCallPart("recall", {"key": "home city"})])
        return ModelResponse(parts=[TextPart(str(returns[-1].content))])

    async def go() -> str:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            agent = Agent(FunctionModel(model), toolsets=[pa.memory_toolset(m, user="u1")])
            result = await agent.run("Remember where I live")
            assert [n.content for n in await m.list(owner="u1")] == ["The user lives in Lisbon"]
            return result.output

    output = run(go())
    assert calls[0].startswith("Error: invalid arguments for remember")  # no exception
    assert calls[1].startswith("Remembered")
    assert "Lisbon" in output


def test_pydantic_ai_test_model_calls_the_tools(make_memory: Any) -> None:
    m: Memory = make_memory()
    m.tools(user="u1").call("remember", {"content": "The user prefers tea over coffee"})
    tools = pa.memory_tools(m, user="u1", names=["recall", "memory_stats"])
    assert [t.metadata for t in tools] == [{"read_only": True}] * 2
    assert tools[0].tool_def.parameters_json_schema == TOOLS["recall"].parameters()
    agent = Agent(TestModel(call_tools=["recall", "memory_stats"]), tools=tools)
    result = run(agent.run("?"))  # not run_sync: it leaves its event loop open
    out = json.loads(result.output)
    assert "tea over coffee" in out["recall"] and "1 semantic" in out["memory_stats"]


# ---------------------------------------------------------------------- OpenAI Agents
def test_openai_agents_session_round_trip(db_path: str) -> None:
    items: list[Any] = [
        {"role": "user", "content": "Hello there"},
        {"type": "function_call", "call_id": "c1", "name": "recall", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "No memories yet."},
        {
            "type": "message", "role": "assistant", "status": "completed", "id": "m1",
            "content": [{"type": "output_text", "text": "Hi!", "annotations": []}],
        },
    ]  # fmt: skip

    async def go() -> None:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            s = oa.MemlociSession("chat-1", m, user="u1", agent="helper")
            assert isinstance(s, Session)  # the SDK's runtime-checkable protocol
            assert s.thread_id == "u1|chat-1|helper"
            assert await s.get_items() == [] and await s.pop_item() is None
            await s.add_items(items)
            assert await s.get_items() == items
            assert await s.get_items(limit=2) == items[2:]
            assert await s.pop_item() == items[3]
            assert await s.get_items() == items[:3]
            thread = await m.service.records.get_thread(s.thread_id)
            assert [x.role for x in thread.messages] == ["user", "tool", "tool"]
            assert thread.messages[2].content == "No memories yet."  # readable text
            # the same thread as the conversation memory of that user + chat + agent
            conv = m.conversation(user="u1", chat="chat-1", agent="helper")
            await conv.start(resume=True)
            await conv.record("assistant", "Noted.")
            assert (await s.get_items())[-1] == {"role": "assistant", "content": "Noted."}
            await s.clear_session()
            assert await s.get_items() == []
            other = oa.MemlociSession("chat-2", m)
            await other.add_items([{"role": "user", "content": "Only here"}])
            assert other.thread_id == "chat-2" and len(await other.get_items()) == 1

    run(go())


def test_openai_agents_session_keeps_large_items_within_limits(db_path: str) -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 80_000}
    big: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": "What is this?"}, image]},
        {"type": "function_call_output", "call_id": "c9", "output": "y" * (TURN_MAX + 10)},
        {"role": "user", "content": "nul\x00byte"},
    ]

    async def go() -> list[Any]:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            s = oa.MemlociSession("big", m)
            await s.add_items(big)
            return await s.get_items()

    first, output, nul = run(go())
    assert first["role"] == "user" and "What is this?" in first["content"]
    assert output["call_id"] == "c9" and output["type"] == "function_call_output"
    assert len(output["output"]) == TURN_MAX and output["output"].endswith("[truncated]")
    assert nul == {"role": "user", "content": "nulbyte"}


def test_openai_agents_runner_with_tools_and_session(db_path: str) -> None:
    model = ScriptedModel(
        [
            [function_call("remember", {"content": "The user lives in Lisbon"}, call_id="c1")],
            [function_call("recall", {"query": "Lisbon"}, call_id="c2")],
            [function_call("forget", '{"memory_id": "nope"}', call_id="c3")],
            [assistant_message("You live in Lisbon.")],
        ]
    )

    async def go() -> tuple[str, list[Any]]:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            tools = oa.memory_tools(m, user="u1")
            assert [t.name for t in tools] == MAIN_TOOLS
            assert tools[0].params_json_schema == TOOLS["recall"].parameters(strict=True)
            agent = OpenAIAgent(name="helper", model=model, tools=tools)
            session = oa.MemlociSession("chat-7", m, user="u1", agent="helper")
            result = await Runner.run(
                agent, "Where do I live?", session=session,
                run_config=RunConfig(tracing_disabled=True),
            )  # fmt: skip
            assert [n.content for n in await m.list(owner="u1")] == ["The user lives in Lisbon"]
            return str(result.final_output), await session.get_items()

    final, history = run(go())
    assert final == "You live in Lisbon."
    outputs = [i["output"] for i in history if i.get("type") == "function_call_output"]
    assert outputs[0].startswith("Remembered") and "Lisbon" in outputs[1]
    assert outputs[2].startswith("Error:")
    assert history[0] == {"role": "user", "content": "Where do I live?"}
    assert history[-1]["role"] == "assistant"
