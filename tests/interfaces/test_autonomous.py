"""Runs without a person (reference 004): ``memloci run`` — one autonomous run that ends
with ``finish_task``, bounded by ``autonomy.max_steps``; a schedule and a webhook that
each record one episode per execution with ``trigger_type`` metadata and prune old
sessions. The scripted models (``fake_models.py``) sit behind real HTTP servers, so the
real OpenAI / Anthropic clients run; the webhook is a real port on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_models import FakeModelServer, closed_port, serving
from test_chat import NS, ok, store, write_role
from typer.testing import CliRunner, Result

from memloci.interfaces.cli import app
from memloci.runtime import thread_id

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["openai", "anthropic"])
def model(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    with serving(request.param) as server:
        yield server


def run(role: Path, *args: str) -> Result:
    return runner.invoke(app, ["run", str(role), "--user", "ops", *args])


def episodes(tmp_path: Path) -> list[Any]:
    with store(tmp_path) as m:
        return sorted(
            m.list(type="episodic", include_forgotten=True, limit=1000), key=lambda n: n.created_at
        )


def test_an_autonomous_run_works_until_finish_task(model: FakeModelServer, tmp_path: Path) -> None:
    role = write_role(tmp_path, model, memory={"consolidation": {"interval": "after_autonomous"}})
    result = run(role, "-p", "I moved to Porto last month")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout == "Finished: I moved to Porto last month\n"
    chats = model.chats()
    assert [c.tools.count("finish_task") for c in chats] == [1, 1]  # offered on each step
    assert model.tool_calls() == ["recall"]  # then finish_task ended the run: no 3rd call
    [episode] = episodes(tmp_path)
    assert episode.category == "autonomous_run" and episode.user == "ops"
    assert episode.content == "Finished: I moved to Porto last month"  # the summary
    assert episode.episode is not None
    assert episode.episode.outcome == {
        "success": True, "final_output": "Finished: I moved to Porto last month", "steps": 2,
    }  # fmt: skip
    assert [a["tool"] for a in episode.episode.actions or []] == ["recall"]
    with store(tmp_path) as m:  # after_autonomous: consolidated on the loop's exit
        assert m.service.store.jobs.pending_sessions(NS) == []
        assert [f.content for f in m.list(type="semantic")] == ["The user lives in Porto"]
    assert [s.structured for s in model.requests] == [False, False, True]


def test_finish_task_is_offered_only_in_autonomous_runs(tmp_path: Path) -> None:
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        ok(role, "-p", "hello", input=None)  # memloci chat -p: not an autonomous loop
        assert all("finish_task" not in c.tools for c in model.chats())
        result = runner.invoke(app, ["chat", str(role), "--user", "sam"], input="hi\nexit\n")
        assert result.exit_code == 0
        assert all("finish_task" not in c.tools for c in model.chats())
    [episode] = episodes(tmp_path)  # chat -p is captured with the reference's category
    assert episode.category == "autonomous_run"


def test_the_step_limit_stops_the_run_with_a_clear_message(tmp_path: Path) -> None:
    with serving("anthropic") as model:
        role = write_role(tmp_path, model)
        text = role.read_text() + "autonomy: {maxSteps: 3}\n"
        role.write_text(text)
        result = run(role, "-p", "Never finish this task")
        assert result.exit_code == 10
        assert "step limit of 3 model calls was reached before finish_task" in result.stderr
        assert "Traceback" not in result.stderr
        chats = model.chats()
        assert len(chats) == 3  # one model call per step
        assert chats[-1].texts("user")[-1].startswith("Continue working on the task")
        assert len(run(role, "-p", "Never finish this", "--max-steps", "1").stderr) > 0
        assert len(model.chats()) == 4  # --max-steps overrides the role
    first, _second = episodes(tmp_path)
    assert first.category == "autonomous_run"
    assert first.episode is not None and first.episode.outcome is not None
    assert first.episode.outcome["success"] is False and first.episode.outcome["steps"] == 3


def test_a_schedule_records_one_episode_per_run_and_prunes_sessions(
    model: FakeModelServer, tmp_path: Path
) -> None:
    role = write_role(tmp_path, model, memory={"max_sessions": 1})
    result = run(role, "--every", "0.01s", "-p", "Summarise new tickets", "--max-runs", "2")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout == "[cron] Finished: Summarise new tickets\n" * 2
    assert "stopped after 2 run(s)" in result.stderr
    runs = episodes(tmp_path)
    assert [e.metadata for e in runs] == [{"trigger_type": "cron", "every": "0.01s"}] * 2
    assert [e.category for e in runs] == ["autonomous_run"] * 2
    assert len({e.session for e in runs}) == 2  # one session per trigger execution
    with store(tmp_path) as m:  # max_sessions 1: the first run's session was pruned
        thread = m.service.store.people.get_thread(NS, thread_id("ops", agent=NS))
        assert thread is not None
        kept = {msg.metadata.get("session") for msg in thread.messages}
        assert kept == {runs[1].session}


def test_the_roles_triggers_and_bad_intervals(tmp_path: Path) -> None:
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        plain = role.read_text()
        role.write_text(plain + "triggers: [{type: cron, every: 0.01s, prompt: Check backups}]\n")
        result = run(role, "--max-runs", "1")
        assert result.exit_code == 0, result.output + result.stderr
        assert result.stdout == "[cron] Finished: Check backups\n"
        bad = run(role, "--every", "ten minutes")
        assert bad.exit_code != 0 and "every 'ten minutes' is neither an interval" in bad.stderr
        assert "5 fields" in bad.stderr and "(s|m|h|d)" not in bad.stderr  # words, no regex
        role.write_text(plain + "triggers: [{type: cron}]\n")
        assert "a cron trigger needs every:" in run(role).stderr
        role.write_text(plain)
        none = run(role)
        assert none.exit_code != 0 and "has no triggers and no task was given" in none.stderr
    assert len(episodes(tmp_path)) == 1  # refused commands wrote nothing


def _serve(role: Path, tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOCI_", "OPENAI_", "ANTH"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memloci.interfaces.cli", "run", str(role), "--user", "ops",
         "--webhook", "0", *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if "webhook: POST a task to " in line:
            return proc, line.split("POST a task to ", 1)[1].strip()
    proc.wait(60)
    raise AssertionError(f"the runner did not start: exit {proc.returncode}")


def test_a_webhook_post_starts_one_run(model: FakeModelServer, tmp_path: Path) -> None:
    role = write_role(tmp_path, model)
    proc, url = _serve(role, tmp_path, "--max-runs", "1")
    try:
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client(timeout=30) as http:
            assert http.get(url).status_code == 405
            assert http.post(url, content=b"").status_code == 400
            assert http.post(url, content=b"x" * 20_001).status_code == 413  # over a turn
            posted = http.post(url, json={"task": "Deploy v2.1 to staging", "ref": "abc"})
        assert posted.status_code == 202 and posted.json()["queued"] is True
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, stderr
    assert stdout == "[webhook] Finished: Deploy v2.1 to staging\n"
    [episode] = episodes(tmp_path)
    assert episode.category == "autonomous_run"
    assert episode.metadata == {"trigger_type": "webhook", "path": "/", "port": int(url[17:-1])}
    assert episode.content == "Finished: Deploy v2.1 to staging"


def test_sigterm_stops_the_runner_cleanly(tmp_path: Path) -> None:
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        proc, _url = _serve(role, tmp_path)
        try:
            proc.send_signal(signal.SIGTERM)
            _stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == 0, stderr
    assert "stopped after 0 run(s)" in stderr and "Traceback" not in stderr
    assert episodes(tmp_path) == []


def test_a_cron_expression_schedules_the_runner(tmp_path: Path) -> None:
    """``--every '*/5 * * * *'`` is a cron schedule: the runner says when it runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOCI_", "OPENAI_", "ANTH"))}
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        cli = [sys.executable, "-m", "memloci.interfaces.cli", "run", str(role)]
        proc = subprocess.Popen(
            [*cli, "--user", "ops", "--every", "*/5 * * * *", "-p", "Check backups"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline()
            proc.send_signal(signal.SIGTERM)
            _stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert first.strip() == "cron: at */5 * * * *: Check backups", first + stderr
    assert proc.returncode == 0 and "Traceback" not in stderr


def test_a_failing_model_does_not_stop_the_runner(tmp_path: Path) -> None:
    role = write_role(tmp_path, None, base_url=f"http://127.0.0.1:{closed_port()}/v1")
    result = run(role, "--every", "0.01s", "-p", "Check backups", "--max-runs", "2")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stderr.count("(The run failed:") == 2
    runs = episodes(tmp_path)  # each execution is still one episode, saying it failed
    assert len(runs) == 2
    assert all(e.episode.outcome["success"] is False for e in runs)
    assert all("error" in e.episode.outcome for e in runs)


def test_chat_autonomous_is_the_same_loop(tmp_path: Path) -> None:
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        result = runner.invoke(
            app, ["chat", str(role), "--user", "sam", "--autonomous", "-p", "Check the queue"]
        )
        assert result.exit_code == 0, result.output + result.stderr
        assert result.stdout == "Finished: Check the queue\n"
        assert all("finish_task" in c.tools for c in model.chats())
        missing = runner.invoke(app, ["chat", str(role), "--autonomous"])
        assert missing.exit_code != 0 and "--autonomous needs a task" in missing.stderr
    [episode] = episodes(tmp_path)
    assert episode.category == "autonomous_run" and episode.content == "Finished: Check the queue"


def test_a_busy_port_and_an_unreachable_model_are_clear_errors(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with serving("openai") as model:
            role = write_role(tmp_path, model)
            result = run(role, "--webhook", str(port))
        assert result.exit_code == 4  # ConflictError
        assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
        assert "Traceback" not in result.stderr
    assert episodes(tmp_path) == []  # nothing ran, nothing written
    role = write_role(tmp_path, None, base_url=f"http://127.0.0.1:{closed_port()}/v1")
    one = run(role, "-p", "Check backups")
    assert one.exit_code == 7 and "(The run failed: cannot reach" in one.stderr
    [episode] = episodes(tmp_path)  # the failed run is still one episode
    assert episode.category == "autonomous_run"
    assert episode.episode is not None and episode.episode.outcome is not None
    assert episode.episode.outcome["success"] is False


def test_auto_capture_off_records_no_episode(tmp_path: Path) -> None:
    with serving("anthropic") as model:
        role = write_role(tmp_path, model, memory={"episodic": {"auto_capture": False}})
        result = run(role, "-p", "Check the queue")
        assert result.exit_code == 0, result.output + result.stderr
        assert result.stdout == "Finished: Check the queue\n"
    assert episodes(tmp_path) == []


def test_a_run_records_the_procedures_it_applied(model: FakeModelServer, tmp_path: Path) -> None:
    """Reference 000: an autonomous run whose task matches a procedure's trigger counts a
    use of it, a success when finish_task ended the run, a failure at the step limit."""
    role = write_role(tmp_path, model, memory={"consolidation": {"interval": "manual"}})
    with store(tmp_path) as m:
        pid = m.learn_procedure(
            "Always check the deploy queue twice", triggers={"goal_contains": ["deploy"]}
        ).memory.id
        other = m.learn_procedure(
            "Always greet the customer", triggers={"goal_contains": ["customer"]}
        ).memory.id
    assert run(role, "-p", "Check the deploy queue").exit_code == 0
    stopped = run(role, "-p", "Never finish the deploy check", "--max-steps", "2")
    assert stopped.exit_code == 10, stopped.output + stopped.stderr
    with store(tmp_path) as m:
        p = m.get(pid).procedure
        assert p is not None and (p.times_used, p.success_rate) == (2, 0.5)
        assert p.avg_duration_ms is not None and p.avg_duration_ms >= 0
        untouched = m.get(other).procedure
        assert untouched is not None and untouched.times_used == 0


def test_a_file_watch_trigger_runs_when_a_watched_file_changes(tmp_path: Path) -> None:
    """``memloci run`` with a role's ``file_watch`` trigger (path relative to the role
    file): a real file written into the watched folder starts one run."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "old.md").write_text("here before", encoding="utf-8")
    with serving("openai") as model:
        role = write_role(tmp_path, model)
        role.write_text(
            role.read_text()
            + "triggers: [{type: file_watch, path: 'inbox/*.md', poll: 0.05s, prompt: Triage}]\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLOCI_", "OPENAI_"))}
        command = [sys.executable, "-m", "memloci.interfaces.cli", "run", str(role)]
        command += ["--user", "ops", "--max-runs", "1"]
        pipe = subprocess.PIPE
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=pipe, stderr=pipe, text=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.startswith("file_watch: "):
                    break
            else:
                raise AssertionError(f"the runner did not start: exit {proc.wait(60)}")
            (inbox / "new.md").write_text("a new note", encoding="utf-8")
            stdout, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == 0, stderr
    assert stdout.startswith("[file_watch] Finished: Triage"), stdout
    [episode] = episodes(tmp_path)
    assert episode.metadata == {
        "trigger_type": "file_watch",
        "path": str(inbox / "*.md"),
        "changed": [str(inbox / "new.md")],
    }
