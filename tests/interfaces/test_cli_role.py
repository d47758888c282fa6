"""Reference 004's memory commands, driven verbatim with a role file as the first argument
(``initrunner`` → ``memloci``): list, clear, export, consolidate; the store folder made
for a new role; chat's retry hint run as printed; a closed pipe ends quietly."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_models import serving
from typer.testing import CliRunner, Result

from memloci import Memory
from memloci.interfaces.cli import app

NS = "helper"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MEMLOCI_LLM", "MEMLOCI_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def write_role(
    tmp_path: Path, *, base_url: str | None = None, memory: dict[str, Any] | None = None
) -> Path:
    doc: dict[str, Any] = {"name": NS, "system_prompt": "You help."}
    if base_url is not None:
        doc["model"] = {"provider": "openai", "name": "scripted-1", "base_url": base_url}
    doc["memory"] = {
        "store_path": "memory.db",
        "embeddings": {"provider": "fake"},
        **(memory or {}),
    }
    path = tmp_path / "role.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def store(tmp_path: Path, **options: Any) -> Memory:
    return Memory(str(tmp_path / "memory.db"), namespace=NS, embedder="fake", **options)


def reference(line: str, *, input: str | None = None) -> Result:
    """Run one of reference 004's command lines as written (initrunner → memloci)."""
    words = shlex.split(line.split("#")[0])
    assert words[0] == "initrunner"
    return runner.invoke(app, words[1:], input=input)


def seed(tmp_path: Path) -> dict[str, str]:
    """Two facts, a procedure, two episodes and two threads (one of another agent)."""
    with store(tmp_path, consolidate_on_session_switch=False) as m:
        ids = {
            "fact": m.remember("The user prefers dark mode", category="preference").memory.id,
            "deploy": m.remember("Staging runs on port 8080", category="deployment").memory.id,
            "proc": m.learn_procedure("Always run tests before deploying").memory.id,
        }
        episode = m.record_episode("Deployed v2.1 to staging", user="sam", session="s1")
        ids["episode"] = episode.memory.id
        for agent in (NS, "other"):
            m._call(
                m.service.records.append_messages(
                    f"sam||{agent}", [{"role": "user", "content": "hello"}], namespace=NS,
                    user="sam", agent=agent,
                )
            )  # fmt: skip
    return ids


# ---------------------------------------------------------------------- list
def test_memory_list_takes_the_role_file(tmp_path: Path) -> None:
    write_role(tmp_path)
    ids = seed(tmp_path)
    listed = reference("initrunner memory list role.yaml")
    assert listed.exit_code == 0, listed.output
    assert all(i in listed.stdout for i in ids.values())
    episodic = reference("initrunner memory list role.yaml --type episodic")
    assert ids["episode"] in episodic.stdout and ids["fact"] not in episodic.stdout
    procedural = reference("initrunner memory list role.yaml --type procedural")
    assert ids["proc"] in procedural.stdout and ids["fact"] not in procedural.stdout
    deploy = reference("initrunner memory list role.yaml --category deployment")
    assert ids["deploy"] in deploy.stdout and ids["fact"] not in deploy.stdout
    assert reference("initrunner memory list role.yaml --limit 50").exit_code == 0
    # --db / -n still override the role
    other = runner.invoke(app, ["memory", "list", "role.yaml", "-n", "elsewhere", "--json"])
    assert other.exit_code == 0 and json.loads(other.stdout) == []


def test_list_clear_and_export_pick_one_agent_of_an_agents_file(tmp_path: Path) -> None:
    """A role file listing several agents: --agent picks one (its store and namespace)."""
    agents = [
        {"name": name, "system_prompt": "You help.",
         "memory": {"store_path": "team.db", "embeddings": {"provider": "fake"}}}
        for name in ("support", "sales")
    ]  # fmt: skip
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    with Memory(str(tmp_path / "team.db"), namespace="sales", embedder="fake") as m:
        mid = m.remember("Sales closes the quarter on Friday").memory.id
    unpicked = runner.invoke(app, ["memory", "list", "agents.yaml"])
    assert unpicked.exit_code == 2 and "choose one by name" in unpicked.stderr
    sales = runner.invoke(app, ["memory", "list", "agents.yaml", "--agent", "sales", "--json"])
    assert sales.exit_code == 0, sales.output
    assert [n["id"] for n in json.loads(sales.stdout)] == [mid]
    support = runner.invoke(app, ["memory", "list", "agents.yaml", "--agent", "support", "--json"])
    assert json.loads(support.stdout) == []
    out = tmp_path / "sales.json"
    done = runner.invoke(
        app, ["memory", "export", "agents.yaml", "--agent", "sales", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert [m["id"] for m in json.loads(out.read_text())] == [mid]
    cleared = runner.invoke(app, ["memory", "clear", "agents.yaml", "--agent", "sales", "--yes"])
    assert cleared.exit_code == 0 and "Erased 1 memory" in cleared.stdout
    stray = runner.invoke(app, ["memory", "list", "--agent", "sales"])
    assert stray.exit_code == 2 and "give the role file first" in stray.stderr


# ---------------------------------------------------------------------- clear
def counts(tmp_path: Path) -> tuple[int, int, int]:
    with store(tmp_path) as m:
        threads = m._call(m.service.records.list_threads(namespace=NS))
        mine = sum(t.agent == NS for t in threads)
        return m.count(include_forgotten=True), mine, len(threads) - mine


def test_clear_asks_then_erases_memories_and_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_role(tmp_path)
    seed(tmp_path)
    refused = reference("initrunner memory clear role.yaml")  # no terminal: refuses
    assert refused.exit_code == 2 and "--force" in refused.stderr
    assert counts(tmp_path) == (4, 1, 1)
    monkeypatch.setattr("memloci.interfaces.cli_common.interactive", lambda: True)
    declined = reference("initrunner memory clear role.yaml", input="n\n")
    assert declined.exit_code == 1 and counts(tmp_path) == (4, 1, 1)
    asked = reference("initrunner memory clear role.yaml", input="y\n")
    assert asked.exit_code == 0, asked.output
    assert "Erase 4 memories and 1 session" in asked.stderr
    assert counts(tmp_path) == (0, 0, 1)  # the other agent's conversation stays


def test_clear_options(tmp_path: Path) -> None:
    write_role(tmp_path)
    seed(tmp_path)
    assert reference("initrunner memory clear role.yaml --sessions-only --force").exit_code == 0
    assert counts(tmp_path) == (4, 0, 1)
    result = reference("initrunner memory clear role.yaml --type semantic --force")
    assert result.exit_code == 0, result.output
    with store(tmp_path) as m:
        assert m.count(type="semantic") == 0 and m.count(type="procedural") == 1
    seed(tmp_path)
    result = reference("initrunner memory clear role.yaml --memories-only --force")
    assert result.exit_code == 0 and counts(tmp_path) == (0, 1, 1)
    assert reference("initrunner memory clear role.yaml --force").exit_code == 0
    assert counts(tmp_path) == (0, 0, 1)
    both = runner.invoke(app, ["memory", "clear", "role.yaml", "--sessions-only", "--type",
                               "episodic", "--force"])  # fmt: skip
    assert both.exit_code == 2 and "--sessions-only" in both.stderr


# ---------------------------------------------------------------------- export
def test_export_writes_the_reference_json_array(tmp_path: Path) -> None:
    write_role(tmp_path)
    ids = seed(tmp_path)
    result = reference("initrunner memory export role.yaml                    # memories.json")
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "memories.json").read_text(encoding="utf-8"))
    assert isinstance(data, list) and {r["id"] for r in data} == set(ids.values())
    for record in data:
        assert list(record)[:6] == [
            "id", "content", "category", "created_at", "memory_type", "metadata"
        ]  # fmt: skip
    by_id = {r["id"]: r for r in data}
    assert by_id[ids["fact"]]["memory_type"] == "semantic"
    assert by_id[ids["fact"]]["content"] == "The user prefers dark mode"
    assert by_id[ids["episode"]]["memory_type"] == "episodic"
    assert by_id[ids["fact"]]["metadata"] is None
    result = reference("initrunner memory export role.yaml -o my-export.json")
    assert result.exit_code == 0
    assert json.loads((tmp_path / "my-export.json").read_text(encoding="utf-8")) == data


def test_export_jsonl_stays_importable(tmp_path: Path) -> None:
    write_role(tmp_path)
    seed(tmp_path)
    result = runner.invoke(
        app, ["memory", "export", "role.yaml", "-o", "backup.out", "--format", "jsonl"]
    )
    assert result.exit_code == 0, result.output
    first = json.loads((tmp_path / "backup.out").read_text(encoding="utf-8").splitlines()[0])
    assert first["kind"] == "header"
    legacy = runner.invoke(
        app, ["memory", "export", "old.jsonl", "--db", "memory.db", "-n", NS, "--embedder", "fake"]
    )
    assert legacy.exit_code == 0 and (tmp_path / "old.jsonl").read_text().startswith('{"kind"')
    loaded = runner.invoke(
        app, ["memory", "import", "backup.out", "--db", "copy.db", "-n", NS, "--embedder", "fake"]
    )
    assert loaded.exit_code == 0, loaded.output
    with Memory(str(tmp_path / "copy.db"), namespace=NS, embedder="fake") as m:
        assert m.count() == 4


def test_the_json_array_export_imports_into_another_store(tmp_path: Path) -> None:
    write_role(tmp_path)
    ids = seed(tmp_path)
    assert reference("initrunner memory export role.yaml -o my-export.json").exit_code == 0
    exported = json.loads((tmp_path / "my-export.json").read_text(encoding="utf-8"))
    loaded = runner.invoke(
        app, ["memory", "import", "my-export.json", "--db", "copy.db", "-n", NS,
              "--embedder", "fake"],
    )  # fmt: skip
    assert loaded.exit_code == 0, loaded.output
    assert f"Imported {len(exported)} memories" in loaded.stdout
    with Memory(str(tmp_path / "copy.db"), namespace=NS, embedder="fake") as m:
        copied = {n.id: n for n in m.list(limit=100)}
        assert set(copied) == set(ids.values())
        for record in exported:
            node = copied[record["id"]]
            assert (node.content, node.type.value, node.category, node.scope.value) == (
                record["content"], record["memory_type"], record["category"], record["scope"]
            )  # fmt: skip
            assert (node.user, node.agent, node.session) == (
                record["user"], record["agent"], record["session"]
            )  # fmt: skip
        assert m.stats().pending_embeddings == 0  # embedded after the import
        assert m.search("dark mode", k=3)[0].memory.id == ids["fact"]
    again = runner.invoke(
        app, ["memory", "import", "my-export.json", "--db", "copy.db", "-n", NS,
              "--embedder", "fake"],
    )  # fmt: skip
    assert again.exit_code == 0 and "Imported 0 memories" in again.stdout


def test_the_json_array_keeps_triggers_speakers_fact_types_and_event_times(
    tmp_path: Path,
) -> None:
    """A triggered procedure must not come back as a standing instruction (injected into
    every prompt), nor a turn lose its speaker and the day it was said."""
    write_role(tmp_path)
    said = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    with store(tmp_path) as m:
        proc = m.learn_procedure(
            "Check the forecast before outdoor plans", triggers={"goal_contains": ["weather"]}
        ).memory.id
        turn = m.add("I went kayaking on the Tagus", user="sam", speaker="sam", event_time=said)
        assert not isinstance(turn, list)
        fact = m.remember(
            "The API limit is 100 requests a minute", scope="global", fact_type="world_knowledge"
        ).memory.id
        assert "forecast" not in m.context("what should I cook tonight")
    assert reference("initrunner memory export role.yaml -o my-export.json").exit_code == 0
    by_id = {r["id"]: r for r in json.loads((tmp_path / "my-export.json").read_text("utf-8"))}
    assert by_id[proc]["procedure"]["triggers"] == {"goal_contains": ["weather"]}
    assert (by_id[turn.id]["speaker"], by_id[turn.id]["event_time"]) == (
        "sam",
        "2024-03-01T09:00:00Z",
    )
    assert by_id[fact]["fact_type"] == "world_knowledge"
    loaded = runner.invoke(
        app, ["memory", "import", "my-export.json", "--db", "copy.db", "-n", NS,
              "--embedder", "fake"],
    )  # fmt: skip
    assert loaded.exit_code == 0, loaded.output
    with Memory(str(tmp_path / "copy.db"), namespace=NS, embedder="fake") as m:
        procedure = m.get(proc).procedure
        assert procedure is not None and procedure.triggers == {"goal_contains": ["weather"]}
        assert "forecast" not in m.context("what should I cook tonight")
        copied = m.get(turn.id)
        assert (copied.speaker, copied.event_time) == ("sam", said)
        assert (
            m.get(fact).fact_type is not None and m.get(fact).fact_type.value == "world_knowledge"
        )


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"content": "x"}', "not a memloci export"),
        ('[{"content": "ok"}, {"category": "general"}]', "memory 2 of the array"),
        ('[{"content": "ok"}, 5]', "memory 2 of the array"),
        ('[{"content": "ok", "memory_type": "dream"}]', "invalid"),
        ("[1, 2", "not valid JSON"),
    ],
)
def test_a_bad_json_array_imports_nothing(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "bad.json").write_text(text, encoding="utf-8")
    result = runner.invoke(
        app, ["memory", "import", "bad.json", "--db", "copy.db", "-n", NS, "--embedder", "fake"]
    )
    assert result.exit_code == 2 and says in result.stderr, result.output
    assert "Traceback" not in result.output
    with Memory(str(tmp_path / "copy.db"), namespace=NS, embedder="fake") as m:
        assert m.count(include_forgotten=True) == 0


# ---------------------------------------------------------------------- consolidate
def porto_sessions(tmp_path: Path, n: int) -> None:
    with store(tmp_path, consolidate_on_session_switch=False) as m:
        for i in range(n):
            m.add("I moved to Porto last month", user="sam", session=f"s{i}", agent=NS)
            m.add("Nice!", speaker="assistant", user="sam", session=f"s{i}", agent=NS)


def pending(tmp_path: Path) -> list[str]:
    with store(tmp_path) as m:
        return [p.session for p in m._call(m.service.consolidation.pending_sessions(namespace=NS))]


def test_consolidate_uses_the_roles_model_and_max_episodes_per_run(tmp_path: Path) -> None:
    with serving("openai") as model:
        write_role(
            tmp_path, base_url=model.base_url,
            memory={"consolidation": {"interval": "manual", "max_episodes_per_run": 3}},
        )  # fmt: skip
        porto_sessions(tmp_path, 3)
        result = reference("initrunner memory consolidate role.yaml")
        assert result.exit_code == 0, result.output
        assert "llm extractor" in result.stdout
        assert "max_episodes_per_run (3 episodes)" in result.stderr
        assert pending(tmp_path) == ["s1", "s2"]  # s0 done, s1 half done, s2 untouched
        assert [s.structured for s in model.requests] == [True, True]
        with store(tmp_path) as m:
            assert [n.content for n in m.list(type="semantic")] == ["The user lives in Porto"]
            assert m.count(type="episodic", include_forgotten=True) == 6
        again = reference("initrunner memory consolidate role.yaml")  # s1's last + s2's two
        assert again.exit_code == 0 and pending(tmp_path) == []
        assert "max_episodes_per_run" not in again.stderr
        done = reference("initrunner memory consolidate role.yaml")
        assert done.exit_code == 0 and "Nothing to consolidate" in done.stderr


def test_consolidate_without_a_model_leaves_the_episodes_pending(tmp_path: Path) -> None:
    write_role(tmp_path)
    porto_sessions(tmp_path, 1)
    result = reference("initrunner memory consolidate role.yaml")
    assert result.exit_code == 2
    assert "no model is set" in result.stderr and "--rules" in result.stderr
    assert pending(tmp_path) == ["s0"]
    rules = runner.invoke(app, ["memory", "consolidate", "role.yaml", "--rules"])
    assert rules.exit_code == 0 and "rules extractor" in rules.stdout
    assert pending(tmp_path) == []


# ---------------------------------------------------------------------- store folder, retry hint
class _Flaky(ThreadingHTTPServer):
    """OpenAI chat completions that answer chat turns and, while ``broken``, refuse the
    consolidation extractor's structured requests with HTTP 400."""

    daemon_threads = True
    broken = True


class _FlakyHandler(BaseHTTPRequestHandler):
    server: _Flaky

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "response_format" in body and self.server.broken:
            status, reply = 400, {"error": {"message": "extraction is down"}}
        elif "response_format" in body:
            content = json.dumps({"facts": [], "entities": []})
            status, reply = 200, _completion(content)
        else:
            status, reply = 200, _completion("OK")
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"id": "c1", "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip


@pytest.fixture
def flaky() -> Iterator[_Flaky]:
    server = _Flaky(("127.0.0.1", 0), _FlakyHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_store_folder_is_created_and_the_retry_hint_works_as_printed(
    tmp_path: Path, flaky: _Flaky
) -> None:
    role = write_role(
        tmp_path, base_url=f"http://127.0.0.1:{flaky.server_address[1]}/v1",
        memory={"store_path": "agents/new/memory.db"},
    )  # fmt: skip
    (tmp_path / "elsewhere").mkdir()
    os.chdir(tmp_path / "elsewhere")  # the hint must work from any folder
    result = runner.invoke(app, ["chat", str(role), "--user", "sam", "-p", "hello"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "agents" / "new" / "memory.db").is_file()
    hint = next(line for line in result.stderr.splitlines() if "retries" in line)
    command = hint.split("`")[1]
    assert command.startswith("memloci memory consolidate ")
    flaky.broken = False
    retried = runner.invoke(app, shlex.split(command)[1:])
    assert retried.exit_code == 0, retried.output
    with Memory(str(tmp_path / "agents/new/memory.db"), namespace=NS, embedder="fake") as m:
        assert m._call(m.service.consolidation.pending_sessions(namespace=NS)) == []


# ---------------------------------------------------------------------- closed pipe
def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    """``memloci memory consolidate --help | head -1``: the reader is gone before the
    help is written (its end of the pipe is closed first, so this is deterministic)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "memloci.interfaces.cli", "memory", "consolidate", "--help"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode == 1


# ---------------------------------------------------------------------- system role fallback
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_system_as_user_sends_the_system_prompt_as_the_first_user_message(
    tmp_path: Path, protocol: str
) -> None:
    with serving(protocol) as model:
        role = write_role(tmp_path, base_url=model.base_url)
        doc = yaml.safe_load(role.read_text(encoding="utf-8"))
        doc["model"].update(provider=protocol, system_as_user=True)
        role.write_text(yaml.safe_dump(doc), encoding="utf-8")
        result = runner.invoke(app, ["chat", "role.yaml", "--user", "sam", "-p", "hello"])
        assert result.exit_code == 0, result.output
        first = model.chats()[0]
        assert first.system == "" and "system" not in first.body
        assert first.messages[0]["role"] == "user"
        assert first.messages[0]["content"].startswith("You help.")
        assert first.messages[-1]["content"].endswith("hello")  # Anthropic joins user turns


def test_without_system_as_user_the_system_role_is_used(tmp_path: Path) -> None:
    with serving("openai") as model:
        write_role(tmp_path, base_url=model.base_url)
        assert runner.invoke(app, ["chat", "role.yaml", "--user", "sam", "-p", "hi"]).exit_code == 0
        assert model.chats()[0].system.startswith("You help.")
