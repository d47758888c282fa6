"""``memloci chat`` end to end, against scripted models behind real HTTP servers that speak
the OpenAI chat-completions and the Anthropic Messages protocols (``fake_models.py``).

Most runs go through typer's CliRunner with stdin; the recall-across-sessions scenario
runs two real processes. Every scenario runs on both protocols.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_models import FakeModelServer, closed_port, serving
from typer.testing import CliRunner, Result

from memloci import Memory
from memloci.interfaces.cli import app
from memloci.providers.chat import ChatTurn, ToolCall
from memloci.runtime import load_role, thread_id
from memloci.runtime.agent import AGENT_TOOLS, MEMORY_GUIDANCE, STOPPED, Agent
from memloci.tools import anthropic_tools, openai_tools

NS = "helper"  # the role's name, so its namespace
PROMPT = "You are Helper, a friendly assistant."
runner = CliRunner()
PROTOCOLS = ["openai", "anthropic"]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=PROTOCOLS)
def model(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    with serving(request.param) as server:
        yield server


def write_role(
    tmp_path: Path, server: FakeModelServer | None, *, memory: dict[str, Any] | None = None,
    base_url: str | None = None, provider: str | None = None, name: str = "role.yaml",
) -> Path:  # fmt: skip
    doc: dict[str, Any] = {"name": NS, "system_prompt": PROMPT}
    if server is not None or base_url is not None:
        doc["model"] = {
            "provider": provider or (server.protocol if server else "openai"),
            "name": "scripted-1",
            "base_url": base_url or (server.base_url if server else None),
        }
    doc["memory"] = {
        "store_path": "memory.db",
        "embeddings": {"provider": "fake"},
        **(memory or {}),
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def chat(role: Path, *args: str, input: str | None = None) -> Result:
    return runner.invoke(app, ["chat", str(role), "--user", "sam", *args], input=input)


def ok(role: Path, *args: str, input: str | None = None) -> Result:
    result = chat(role, *args, input=input)
    assert result.exit_code == 0, result.output + result.stderr
    assert "Traceback" not in result.stderr
    return result


def store(tmp_path: Path) -> Memory:
    return Memory(str(tmp_path / "memory.db"), namespace=NS, embedder="fake")


def facts(tmp_path: Path) -> list[Any]:
    with store(tmp_path) as m:
        return m.list(type=["semantic", "opinion"], include_forgotten=True)


def all_nodes(tmp_path: Path) -> list[Any]:
    with store(tmp_path) as m:
        return m.list(include_forgotten=True, limit=1000)


# ---------------------------------------------------------------------- recall
def test_a_fact_told_in_session_1_is_recalled_in_session_2(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOCI_", "OPENAI_", "ANTH"))}

    def session(text: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "memloci.interfaces.cli", "chat", str(role), "--user", "sam"],
            input=f"{text}\nexit\n", cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        return proc

    first = session("Remember that Alec is my boss")
    tool = "add_to_memory" if model.protocol == "openai" else "remember"
    assert model.tool_calls() == [tool]
    assert "Done. (Remembered [" in first.stdout
    assert f"[{tool}] Remembered" in first.stderr  # tool activity goes to stderr
    ask, follow_up = model.chats()
    # the tools sent are exactly the published schemas, for this protocol
    expected = (
        openai_tools(AGENT_TOOLS) if model.protocol == "openai" else anthropic_tools(AGENT_TOOLS)
    )
    assert ask.body["tools"] == expected
    assert follow_up.messages[-1]["role"] == "tool"  # the result went back to the model
    [fact] = facts(tmp_path)
    assert fact.content == "Alec is my boss" and fact.user == "sam"

    model.requests.clear()
    second = session("What do you know about Alec?")  # a new process
    [turn] = model.chats()
    assert turn.system.startswith(PROMPT)
    assert "## Using your memory" in turn.system and "## Your Memory" in turn.system
    assert f"- [id:{fact.id}] Alec is my boss" in turn.system
    assert turn.texts("user") == ["What do you know about Alec?"]  # a new session: no history
    assert "I know: Alec is my boss" in second.stdout


# ---------------------------------------------------------------------- resume
def test_resume_restores_the_window(model: FakeModelServer, tmp_path: Path) -> None:
    role = write_role(tmp_path, model)
    ok(role, input="My favourite colour is green\nexit\n")
    model.requests.clear()
    resumed = ok(role, "--resume", input="What did I say before?\n")
    [turn] = model.chats()
    assert [m["role"] for m in turn.messages] == ["user", "assistant", "user"]
    assert turn.messages[1]["content"] == "OK: My favourite colour is green"
    assert "Earlier you said: My favourite colour is green" in resumed.stdout
    assert "resumed session" in resumed.stderr
    assert PROMPT in turn.system  # the system prompt is the role's, never a stored copy

    model.requests.clear()
    fresh = ok(role, input="What did I say before?\n")
    assert "Earlier you said: nothing yet" in fresh.stdout


def test_with_the_conversation_tier_off_nothing_is_resumed(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model, memory={"conversation": {"enabled": False}})
    first = ok(role, input="My favourite colour is green\nWhat did I say before?\n")
    assert "Earlier you said: My favourite colour is green" in first.stdout  # this process
    resumed = ok(role, "--resume", input="What did I say before?\n")
    assert "Earlier you said: nothing yet" in resumed.stdout
    with store(tmp_path) as m:
        assert m.service.store.people.get_thread(NS, thread_id("sam", agent=NS)) is None


# ---------------------------------------------------------------------- ask before storing
def test_a_declined_memory_is_not_stored(model: FakeModelServer, tmp_path: Path) -> None:
    role = write_role(tmp_path, model)
    result = ok(role, input="I'm working with James on this project\nNo, it's just for this task\n")
    assert "Would you like me to remember that James is a project collaborator?" in result.stdout
    assert "No problem, I won't store that." in result.stdout
    assert model.tool_calls() == []
    assert all_nodes(tmp_path) == []
    assert not any(s.structured for s in model.requests)  # nothing to consolidate either

    agreed = ok(role, input="I'm working with Priya on this project\nYes please\n")
    assert model.tool_calls() == ["add_to_memory"]
    assert "Done. (Remembered [" in agreed.stdout
    [fact] = facts(tmp_path)
    assert fact.content == "Priya is a project collaborator" and fact.subject == "Priya"


def test_an_update_keeps_the_id_and_bumps_the_version(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model)
    with store(tmp_path) as m:
        old = m.remember(
            "Sarah works on the Platform team", user="sam", subject="Sarah", category="person"
        ).memory
    result = ok(role, input="Sarah moved to the Design team last week\n")
    assert model.tool_calls() == ["update_memory"]
    assert f"- [id:{old.id}] [Sarah] Sarah works on the Platform team" in model.chats()[0].system
    assert f"Done. (Updated [id:{old.id}] (category: person) to version 2" in result.stdout
    [fact] = facts(tmp_path)
    assert (fact.id, fact.version) == (old.id, 2)
    assert fact.content == "Sarah works on the Design team"


# ---------------------------------------------------------------------- one-shot runs
def test_one_shot_records_an_episode_and_consolidates(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model)
    result = ok(role, "-p", "I moved to Porto last month")
    assert result.stdout == "OK: I moved to Porto last month\n"  # only the answer on stdout
    with store(tmp_path) as m:
        [episode] = m.list(type="episodic", include_forgotten=True)
        assert (
            episode.content
            == "Task: I moved to Porto last month\nOutcome: OK: I moved to Porto last month"
        )
        assert episode.user == "sam" and episode.session
        assert episode.episode is not None and episode.episode.outcome == {
            "success": True, "final_output": "OK: I moved to Porto last month",
        }  # fmt: skip
        assert episode.episode.trigger == {"channel": "cli", "mode": "autonomous", "agent": NS}
        assert episode.category == "autonomous_run" and not episode.metadata  # reference 004
        assert m.service.store.jobs.pending_sessions(NS) == []  # consolidated (after_session)
        [fact] = m.list(type="semantic")
        assert fact.content == "The user lives in Porto"
    assert [s.structured for s in model.requests] == [False, True]
    assert "Consolidated 1 session(s): 1 new memory." in result.stderr


def test_consolidation_after_a_run_keeps_to_max_episodes_per_run(
    model: FakeModelServer, tmp_path: Path
) -> None:
    """Reference 004: each run consolidates at most ``max_episodes_per_run`` episodes,
    oldest first; the rest wait for the next run (as `memory consolidate` does)."""
    role = write_role(tmp_path, model, memory={"consolidation": {"max_episodes_per_run": 2}})
    with store(tmp_path) as m:
        for i in range(5):
            m.add(f"Old turn number {i}", user="sam", session="old1", speaker="user")
    ok(role, "-p", "I moved to Porto last month")
    with store(tmp_path) as m:
        assert m.service.store.jobs.pending_sessions(NS) != []  # 6 episodes, 2 a run


def test_manual_consolidation_leaves_the_episode_pending(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model, memory={"consolidation": {"interval": "manual"}})
    ok(role, "-p", "I moved to Porto last month")
    assert not any(s.structured for s in model.requests)
    with store(tmp_path) as m:
        assert len(m.service.store.jobs.pending_sessions(NS)) == 1
        assert m.list(type="semantic") == []


@pytest.mark.parametrize(
    ("interval", "runs"), [("after_session", True), ("after_autonomous", False)]
)
def test_leaving_the_repl_consolidates_after_session_only(
    model: FakeModelServer, tmp_path: Path, interval: str, runs: bool
) -> None:
    role = write_role(tmp_path, model, memory={"consolidation": {"interval": interval}})
    ok(role, input="record episode: deployed v2 to staging, tests passed\nquit\n")
    assert model.tool_calls() == ["record_episode"]
    assert any(s.structured for s in model.requests) is runs
    with store(tmp_path) as m:
        assert len(m.service.store.jobs.pending_sessions(NS)) == (0 if runs else 1)


# ---------------------------------------------------------------------- the prompt and tools
def test_the_role_decides_tools_procedures_and_knowledge(
    model: FakeModelServer, tmp_path: Path
) -> None:
    memory = {
        "episodic": {"enabled": False},
        "procedural": {"enabled": False},
        "knowledge": {"sources": ["faq"], "similarityThreshold": 0.0},
    }
    role = write_role(tmp_path, model, memory=memory)
    doc = tmp_path / "faq.md"
    doc.write_text("# Refunds\n\nRefunds take five working days.\n", encoding="utf-8")
    with store(tmp_path) as m:
        m.learn_procedure("Always answer in French", user="sam")
        m.add_knowledge([doc], collection="faq")
    ok(role, input="How long do refunds take?\n")
    [turn] = model.chats()
    assert "learn_procedure" not in turn.tools and "record_episode" not in turn.tools
    assert {"recall", "add_to_memory", "update_memory", "list_memories"} <= set(turn.tools)
    # procedures are off for this agent: the stored one is not injected (reference 004)
    assert "## Learned Procedures and Policies" not in turn.system
    assert "Always answer in French" not in turn.system
    assert (
        "## Relevant Knowledge" in turn.system and "Refunds take five working days" in turn.system
    )
    assert turn.system.index(PROMPT) < turn.system.index(MEMORY_GUIDANCE[:20])
    assert turn.system.index(MEMORY_GUIDANCE[:20]) < turn.system.index("## Relevant Knowledge")


def test_memory_commands_are_answered_without_the_model(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model)
    with store(tmp_path) as m:
        mid = m.remember("Alec is my boss", user="sam", category="person").memory.id
    result = ok(role, input=f"/memory\n/memory delete {mid}\n/memory\n/help\n")
    assert model.requests == []
    assert f"[{mid}] Alec is my boss" in result.stdout
    assert "Deleted: 'Alec is my boss'" in result.stdout
    assert "/memory delete <id>" in result.stdout  # /help
    assert facts(tmp_path)[0].valid_until is not None


# ---------------------------------------------------------------------- failures
def test_no_model_configured_says_what_to_set(tmp_path: Path) -> None:
    role = write_role(tmp_path, None)
    result = chat(role, "-p", "hello")
    assert result.exit_code == 2
    assert "role.yaml names no chat model" in result.stderr
    assert "model: {provider: openai, name: gpt-4o-mini}" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "MEMLOCI_LLM" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "memory.db").exists()  # nothing opened


KEYS = [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]


@pytest.mark.parametrize(("provider", "variable"), KEYS)
def test_a_cloud_model_without_its_key_names_the_variable(
    tmp_path: Path, provider: str, variable: str
) -> None:
    path = tmp_path / "role.yaml"
    path.write_text(yaml.safe_dump({"model": {"provider": provider, "name": "m"}}), "utf-8")
    result = chat(path, "-p", "hello")
    assert result.exit_code == 2
    assert f"needs an API key: set {variable}" in result.stderr and "api_key_env" in result.stderr


def test_a_model_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving("openai") as server:
        role = write_role(tmp_path, None)
        monkeypatch.setenv("MEMLOCI_LLM", "openai")
        monkeypatch.setenv(
            "MEMLOCI_LLM_OPTIONS", f'{{"model": "env-model", "base_url": "{server.base_url}"}}'
        )
        result = ok(role, "-p", "hello")
        assert result.stdout == "OK: hello\n"
        assert server.chats()[0].body["model"] == "env-model"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_unreachable_model_is_a_clear_error(tmp_path: Path, protocol: str) -> None:
    base = f"http://127.0.0.1:{closed_port()}" + ("/v1" if protocol == "openai" else "")
    role = write_role(tmp_path, None, base_url=base, provider=protocol)
    result = chat(role, "-p", "hello")
    assert result.exit_code == 7
    assert "cannot reach the LLM at http://127.0.0.1:" in result.stderr
    assert "connection refused" in result.stderr and "hint:" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert all_nodes(tmp_path) == []  # no episode of a failed run

    repl = chat(role, input="hello\n/memory\n")  # the REPL reports and goes on
    assert repl.exit_code == 0
    assert "cannot reach the LLM" in repl.stderr
    assert "No memories yet" in repl.stdout


# ---------------------------------------------------------------------- the loop, in process
class _LoopingModel:
    """A model that calls recall forever."""

    model_id = "loop"

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages: Any, **_: Any) -> ChatTurn:
        self.calls += 1
        return ChatTurn("", (ToolCall(f"c{self.calls}", "recall", '{"query": "x"}'),))


class _ForbiddenToolModel:
    model_id = "forbidden"

    def chat(self, messages: Any, **_: Any) -> ChatTurn:
        if messages[-1]["role"] == "tool":
            return ChatTurn(f"got: {messages[-1]['content']}")
        return ChatTurn("", (ToolCall("c1", "learn_procedure", '{"content": "Always be late"}'),))


def test_tool_rounds_are_capped_and_disabled_tools_refused(tmp_path: Path) -> None:
    role_path = write_role(tmp_path, None, memory={"procedural": {"enabled": False}})
    role = load_role(role_path)
    with store(tmp_path) as m:
        looping = _LoopingModel()
        agent = Agent(m.service, role, looping, user="sam", max_tool_rounds=3)

        async def run(a: Agent) -> str:
            await a.start()
            reply = await a.ask("Always call recall")
            await a.finish()
            return reply.text

        assert asyncio.run(run(agent)) == STOPPED.format(n=3)
        assert looping.calls == 3
        refused = Agent(m.service, role, _ForbiddenToolModel(), user="sam")
        text = asyncio.run(run(refused))
        assert "Error: tool 'learn_procedure' is not available to this agent" in text
        assert m.list(type="procedural") == []


class _RecordingModel:
    """Answers every message and keeps the system prompt it was shown."""

    model_id = "recording"

    def __init__(self) -> None:
        self.systems: list[str] = []

    def chat(self, messages: Any, *, system: str | None = None, **_: Any) -> ChatTurn:
        self.systems.append(system or "")
        return ChatTurn("noted")


def test_the_memory_block_is_loaded_once_per_conversation(tmp_path: Path) -> None:
    role = load_role(write_role(tmp_path, None))
    # the bundled model: whether a fact answers the message is scored by its meaning
    with Memory(str(tmp_path / "memory.db"), namespace=NS, embedder="local") as m:
        m.remember("Sam prefers green tea", user="sam")
        model = _RecordingModel()
        agent = Agent(m.service, role, model, user="sam")

        async def talk(*texts: str) -> None:
            await agent.start()
            for text in texts:
                if text == "ADD":
                    await agent.service.memories.remember("Sam moved to Lisbon in May", user="sam")
                else:
                    await agent.ask(text)
            await agent.finish(consolidate=False)

        asyncio.run(talk("hello", "ADD", "where did I move?"))
        first, second = model.systems
        block = first[first.index("## Your Memory") :].split("\n\n## ")[0]
        prefix = first[: first.index(block) + len(block)]
        assert "green tea" in block and "Lisbon" not in block
        assert second.startswith(prefix)  # the same bytes: the provider's cache stays warm
        # the fact written since the block was loaded is brought up after it
        assert "Lisbon" in second[len(prefix) :].split("## Relevant Facts", 1)[1]
        asyncio.run(talk("hello again"))  # a new conversation loads the memory anew
        assert "Lisbon" in model.systems[-1]


def test_tiers_that_are_off_do_not_act(tmp_path: Path) -> None:
    role = load_role(
        write_role(tmp_path, None, memory={"facts": {"enabled": False},
                                           "procedural": {"enabled": False}})
    )  # fmt: skip
    with store(tmp_path) as m:
        theirs = m.remember("Sam prefers green tea", user="sam", agent="other-agent").memory
        m.learn_procedure("Always answer in British English")
        m.record_episode("Sam asked about the tea shop opening hours", user="sam")
        model = _RecordingModel()
        agent = Agent(m.service, role, model, user="sam")
        assert "recall" in agent.tool_names and "forget" not in agent.tool_names
        assert not {"remember", "add_to_memory", "learn_procedure"} & set(agent.tool_names)

        async def talk() -> str:
            await agent.start()
            await agent.ask("what tea do I like?")
            assert agent.tools is not None
            recalled = await agent.tools.call("recall", {"query": "tea", "memory_type": "all"})
            forgot = await agent.tools.call("forget", {"memory_id": theirs.id})
            await agent.finish(consolidate=False)
            return recalled + "\n" + forgot

        out = asyncio.run(talk())
        (system,) = model.systems
        assert "## Your Memory" not in system and "Learned Procedures" not in system
        assert "green tea" not in system and "British English" not in system
        assert "add_to_memory" not in system and "update_memory" not in system  # guidance
        assert "tea shop" in out and "green tea" not in out  # episodes only
        assert "Error: no memory with id" in out  # facts are not this agent's to forget
        assert m.get(theirs.id).is_current


def test_with_episodes_off_no_past_turn_reaches_the_prompt(tmp_path: Path) -> None:
    role = load_role(write_role(tmp_path, None, memory={"episodic": {"enabled": False}}))
    with store(tmp_path) as m:
        m.add("I adopted a cat named Miso", user="sam", session="old")
        m.add("Miso loves tuna", user="sam", session="old")
        m.remember("Sam's cat is called Miso", user="sam")
        m.flush()
        model = _RecordingModel()
        agent = Agent(m.service, role, model, user="sam")

        async def talk() -> None:
            await agent.start()
            await agent.ask("what does Miso like to eat?")
            await agent.finish(consolidate=False)

        asyncio.run(talk())
        (system,) = model.systems
        assert "Sam's cat is called Miso" in system  # facts still come
        assert "tuna" not in system and "Relevant Past Conversations" not in system


def test_another_agents_memory_can_be_read_not_changed(tmp_path: Path) -> None:
    with store(tmp_path) as m:
        theirs = m.remember("The deploy window is Friday", agent="ops-agent", scope="global")
        theirs = theirs.memory
        tools = m.tools(agent="support-agent")
        assert theirs.id in tools.call("recall", {"query": "deploy window"})
        for name, extra in (
            ("forget", {}), ("update_memory", {"content": "The deploy window is Monday"}),
            ("correct_fact", {"content": "The deploy window is Sunday"}), ("confirm_fact", {}),
        ):  # fmt: skip
            out = tools.call(name, {"memory_id": theirs.id, **extra})
            assert out.startswith("Error: memory") and "belongs to agent 'ops-agent'" in out
        assert m.get(theirs.id).content == "The deploy window is Friday"
        assert (
            m.tools(agent="ops-agent").call("forget", {"memory_id": theirs.id}).startswith("Forgot")
        )


def test_an_unknown_knowledge_source_is_reported(tmp_path: Path) -> None:
    role = load_role(
        write_role(tmp_path, None, memory={"knowledge": {"sources": ["faq", "manuals"]}})
    )
    doc = tmp_path / "faq.md"
    doc.write_text("# Refunds\n\nRefunds take five working days.\n", encoding="utf-8")
    with store(tmp_path) as m:
        m.add_knowledge([doc], collection="faq")
        said: list[str] = []
        agent = Agent(m.service, role, _RecordingModel(), user="sam", warn=said.append)

        async def run() -> None:
            await agent.start()
            await agent.finish(consolidate=False)

        asyncio.run(run())
    assert len(said) == 1 and "knowledge source 'manuals' has no documents" in said[0]
    assert "--collection manuals" in said[0]


# ---------------------------------------------------------------------- no memory
def no_memory_role(tmp_path: Path, server: FakeModelServer) -> Path:
    """Reference 000/003: an agent whose role file has no ``memory:`` block."""
    doc = {
        "agents": [
            {
                "name": "nomem",
                "system_prompt": PROMPT,
                "model": {
                    "provider": server.protocol,
                    "name": "scripted-1",
                    "base_url": server.base_url,
                },
            },
        ],
    }
    path = tmp_path / "kn2.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_an_agent_without_memory_keeps_nothing(
    model: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("MEMLOCI_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    role = no_memory_role(tmp_path, model)
    args = ["chat", str(role), "--agent", "nomem", "-u", "carol"]

    once = runner.invoke(app, [*args, "-p", "hello"])
    assert once.exit_code == 0, once.output + once.stderr
    assert once.stdout == "OK: hello\n"
    [turn] = model.chats()
    assert turn.tools == []  # no memory tools
    assert "## Your Memory" not in turn.system and "Using your memory" not in turn.system
    assert turn.system.strip() == PROMPT  # no user profile, no memory block
    assert not any(s.structured for s in model.requests)  # nothing to consolidate
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kn2.yaml"]  # no ./memloci.db

    # --resume: a usage error that says why and what to do, before any model call
    model.requests.clear()
    resumed = runner.invoke(app, [*args, "--resume", "-p", "hello again"])
    assert resumed.exit_code == 2, resumed.output + resumed.stderr
    assert "agent 'nomem' has no memory" in resumed.stderr
    assert "memory: block" in resumed.stderr and "Traceback" not in resumed.stderr
    assert model.requests == []

    # the REPL: the conversation lives in this process only; /memory says there is none
    talk = runner.invoke(
        app, args, input="My favourite colour is green\nWhat did I say before?\n/memory\n"
    )
    assert talk.exit_code == 0, talk.output + talk.stderr
    assert "Earlier you said: My favourite colour is green" in talk.stdout
    assert "Agent 'nomem' has no memory" in talk.stdout
    assert "no memory (the role file has no memory: block)" in talk.stderr
    again = runner.invoke(app, args, input="What did I say before?\n")
    assert "Earlier you said: nothing yet" in again.stdout
    # a --db given anyway is not created either, and the user hears it is unused
    used = runner.invoke(app, [*args, "--db", str(tmp_path / "other.db"), "-p", "hi"])
    assert used.exit_code == 0 and "--db is not used" in used.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kn2.yaml"]

    # an autonomous run of the same agent stores nothing either
    done = runner.invoke(app, ["run", str(role), "--agent", "nomem", "-p", "check the queue"])
    assert done.exit_code == 0, done.output + done.stderr
    assert "Finished: check the queue" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kn2.yaml"]


# ---------------------------------------------------------------------- procedure uses
def procedure_uses(tmp_path: Path, pid: str) -> tuple[int, float | None, float | None]:
    with store(tmp_path) as m:
        p = m.get(pid).procedure
        assert p is not None
        return p.times_used, p.success_rate, p.avg_duration_ms


def test_chat_turns_record_the_procedures_they_apply(
    model: FakeModelServer, tmp_path: Path
) -> None:
    """Reference 000: a turn whose message matches a procedure's trigger, or whose answer
    cites a procedure, counts a use of it; a use the model reports itself (the
    record_procedure_use tool) is counted once, with the model's outcome."""
    role = write_role(tmp_path, model)
    with store(tmp_path) as m:
        deploy = m.learn_procedure(
            "Always run the tests before deploying", triggers={"goal_contains": ["deploy"]}
        ).memory.id
        rule = m.learn_procedure("Always answer in British English").memory.id

    ok(role, "-p", "hello there")  # no trigger matches, nothing cited
    assert procedure_uses(tmp_path, deploy) == (0, None, None)
    ok(role, "-p", "How do I deploy the app?")
    used, rate, ms = procedure_uses(tmp_path, deploy)
    assert (used, rate) == (1, 1.0) and ms is not None and ms >= 0
    assert procedure_uses(tmp_path, rule)[0] == 0  # a standing instruction, not cited

    cited = ok(role, input="Which rule do you follow?\n")
    assert f"I follow [id:{rule}]." in cited.stdout
    assert procedure_uses(tmp_path, rule)[:2] == (1, 1.0)

    model.requests.clear()
    told = ok(role, "-p", f"report procedure {deploy} failed during the deploy")
    assert model.tool_calls() == ["record_procedure_use"]
    assert "Recorded a use of [id:" in told.stdout
    used, rate, _ = procedure_uses(tmp_path, deploy)
    assert (used, rate) == (2, 0.5)  # once, with the model's outcome
    assert "record_procedure_use" in model.chats()[0].tools


def test_without_procedures_no_use_is_recorded(model: FakeModelServer, tmp_path: Path) -> None:
    role = write_role(tmp_path, model, memory={"procedural": {"enabled": False}})
    with store(tmp_path) as m:
        pid = m.learn_procedure(
            "Always run the tests before deploying", triggers={"goal_contains": ["deploy"]}
        ).memory.id
    ok(role, "-p", "How do I deploy the app?")
    assert procedure_uses(tmp_path, pid) == (0, None, None)
    [turn] = [c for c in model.chats()]
    assert "record_procedure_use" not in turn.tools
