"""Turns stored without a session are consolidated too: per owner, like a session of
their own, by ``consolidate``, maintenance and ``memloci memory consolidate`` (not by
the session-switch trigger); once, even when two runs race."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memloci import Memory
from memloci.errors import ValidationError
from memloci.interfaces.cli import app
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.fixture
def mem(make_memory: MakeMemory) -> Memory:
    return make_memory(consolidate_on_session_switch=False)


def said(m: Memory, *texts: str, user: str = "sam", agent: str | None = None) -> list[str]:
    """User turns without a session; returns their ids."""
    return [m.add(t, user=user, agent=agent, role="user").id for t in texts]  # type: ignore[union-attr]


def facts(m: Memory, user: str) -> list[str]:
    return sorted(n.content for n in m.list(user=user, type=["semantic", "opinion"]))


@both_backends
def test_turns_without_a_session_become_facts_of_their_owner(mem: Memory) -> None:
    ids = said(mem, "Alec is my boss by the way", "I prefer tea over coffee")
    said(mem, "I work at Solara", user="ann")
    pending = mem._call(mem.service.consolidation.pending_sessions())
    assert [(p.session, p.user, p.episodes) for p in pending] == [
        (None, "sam", 2), (None, "ann", 1),
    ]  # fmt: skip
    assert mem.stats().pending_sessions == 2
    report = mem._call(mem.service.consolidation.consolidate(user="sam"))
    assert report.sessions == ["(no session: user sam)"] and report.episodes == 2
    assert facts(mem, "sam") == ["Alec is the user's boss", "User prefers tea over coffee"]
    assert facts(mem, "ann") == []  # another user's turns wait for their own run
    boss = next(n for n in mem.list(user="sam", type="semantic"))
    assert boss.session is None
    why = mem._call(mem.service.records.explain(boss.id))
    assert [s.id for s in why.sources] == [ids[0]]
    again = mem._call(mem.service.consolidation.consolidate(user="sam"))
    assert again.sessions == [] and again.created == []
    mem._call(mem.service.consolidation.consolidate())
    assert facts(mem, "ann") == ["User works at Solara"]
    assert mem.stats().pending_sessions == 0


@both_backends
def test_new_turns_without_a_session_are_consolidated_alone(mem: Memory) -> None:
    said(mem, "Alec is my boss by the way")
    mem._call(mem.service.consolidation.consolidate())
    said(mem, "I prefer green tea")
    report = mem._call(mem.service.consolidation.consolidate())
    assert report.episodes == 1 and len(report.created) == 1


def test_without_session_leaves_sessions_pending(mem: Memory) -> None:
    mem.add("I prefer tea over coffee", user="sam", session="s1", role="user")
    said(mem, "Alec is my boss by the way")
    report = mem._call(mem.service.consolidation.consolidate(without_session=True))
    assert report.sessions == ["(no session: user sam)"]
    assert [p.session for p in mem._call(mem.service.consolidation.pending_sessions())] == ["s1"]
    with pytest.raises(ValidationError, match="not both"):
        mem._call(mem.service.consolidation.consolidate("s1", without_session=True))
    assert [p.session for p in mem._call(mem.service.consolidation.pending_sessions())] == ["s1"]


def test_maintenance_consolidates_turns_without_a_session(mem: Memory) -> None:
    said(mem, "Alec is my boss by the way")
    report = mem._call(mem.service.consolidation.maintain())
    assert report.sessions_consolidated == 1 and report.facts_created == 1
    assert facts(mem, "sam") == ["Alec is the user's boss"]


def test_a_new_session_leaves_them_for_consolidate_or_maintenance(
    make_memory: MakeMemory,
) -> None:
    """The session-switch trigger consolidates the user's previous sessions only: turns
    stored without a session may belong to the conversation going on."""
    live = make_memory()
    said(live, "Alec is my boss by the way")
    live.add("I prefer tea over coffee", user="sam", session="s1", role="user")
    live.add("Good morning", user="sam", session="s2", role="user")
    assert live.service.consolidation.wait_for_consolidation(10)
    assert facts(live, "sam") == ["User prefers tea over coffee"]
    pending = live._call(live.service.consolidation.pending_sessions())
    assert [(p.session, p.user) for p in pending] == [(None, "sam"), ("s2", "sam")]


def test_two_runs_at_once_consolidate_each_turn_once(mem: Memory) -> None:
    said(mem, *(f"I prefer tea number {i} over coffee" for i in range(12)))
    reports = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        reports.append(mem._call(mem.service.consolidation.consolidate(without_session=True)))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(r.episodes for r in reports) == 12
    assert len(facts(mem, "sam")) == 12 and not any(r.failed for r in reports)


def test_cli_consolidates_turns_without_a_session(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    with Memory(db, embedder="fake", consolidate_on_session_switch=False) as m:
        said(m, "Alec is my boss by the way")
        said(m, "I prefer tea over coffee", user="ann")
        m.add("I work at Solara", user="sam", session="s1", role="user")
    runner = CliRunner()
    base = ["--db", db, "--embedder", "fake"]
    result = runner.invoke(app, ["memory", "consolidate", "--user", "sam", "--json", *base])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["sessions"] == ["s1", "(no session: user sam)"] and len(data["created"]) == 2
    result = runner.invoke(app, ["memory", "consolidate", *base])
    assert result.exit_code == 0, result.output
    assert "(no session:" in result.stdout and "ann)" in result.stdout  # the table wraps
    assert "Consolidated 1 of 1 sessions" in result.stdout
    result = runner.invoke(app, ["memory", "consolidate", *base])
    assert result.exit_code == 0 and "Nothing to consolidate" in result.output
