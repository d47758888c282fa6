"""Maintenance: decay (protected facts and episodes untouched, pruning, no compounding),
access reinforcement, enrichment and causal links with a scripted LLM, one run at a
time across threads and processes, and ``memloci maintain``."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from consolidation_helpers import SlowRules, turns
from typer.testing import CliRunner

from memloci import Memory
from memloci.consolidation.maintenance import LOCK, Maintenance, MaintenanceReport
from memloci.interfaces.cli import app
from memloci.models import EdgeType, utcnow
from memloci.providers.fake import FakeEmbedder

MakeMemory = Callable[..., Memory]
YEARS = timedelta(days=3650)


@pytest.fixture
def mem(make_memory: MakeMemory) -> Memory:
    return make_memory(consolidate_on_session_switch=False)


def maintain(m: Memory, **kwargs: Any) -> MaintenanceReport:
    return m._call(m.service.consolidation.maintain(**kwargs))


# ---------------------------------------------------------------------- decay
def test_decay_prunes_weak_facts_and_spares_protected_ones_and_episodes(mem: Memory) -> None:
    weak = mem.remember("Sam likes jazz on Sundays", user="sam").memory
    opinion = mem.remember("Sam thinks Lisbon is lovely", user="sam", type="opinion").memory
    kept = mem.remember("Sam's passport number is private", user="sam").memory
    mem.confirm(kept.id)
    proc = mem.learn_procedure("Always greet Sam in Portuguese", user="sam").memory
    turn = mem.add("Good morning, how are you?", user="sam")  # consolidates into nothing
    report = maintain(mem, now=utcnow() + YEARS)
    assert report.ran and report.forgotten == 3 and not report.errors
    for gone in (weak, opinion, proc):
        assert mem.get(gone.id).valid_until is not None
    protected = mem.get(kept.id)
    assert protected.valid_until is None and protected.confidence == 1.0
    episode = mem.get(turn.id)  # type: ignore[union-attr]
    assert episode.valid_until is None and episode.confidence == 1.0
    assert [n.id for n in mem.list(user="sam", type=["semantic", "opinion"])] == [kept.id]


def test_decay_follows_one_curve_and_does_not_compound(mem: Memory) -> None:
    fact = mem.remember("Sam collects vinyl records", user="sam").memory
    start = fact.updated_at
    expected = {d: math.exp(-0.1 * d**0.8) for d in (10, 20)}
    maintain(mem, now=start + timedelta(days=10))
    assert mem.get(fact.id).confidence == pytest.approx(expected[10], rel=1e-6)
    maintain(mem, now=start + timedelta(days=10))  # same night again: no change
    assert mem.get(fact.id).confidence == pytest.approx(expected[10], rel=1e-6)
    report = maintain(mem, now=start + timedelta(days=20))
    assert mem.get(fact.id).confidence == pytest.approx(expected[20], rel=1e-6)
    assert report.decayed == 1
    assert mem.get(fact.id).updated_at == start  # decay is not an edit


def test_weak_facts_after_maintenance_does_not_decay_twice(mem: Memory) -> None:
    fact = mem.remember("Sam collects vinyl records", user="sam").memory
    night = fact.updated_at + timedelta(days=10)
    maintain(mem, now=night)
    maintained = mem.get(fact.id).confidence
    assert maintained == pytest.approx(math.exp(-0.1 * 10**0.8), rel=1e-6)  # ≈ 0.53
    weak = mem._call(mem.service.records.weak_facts(threshold=0.9, now=night))
    assert [(n.id, round(c, 6)) for n, c in weak] == [(fact.id, round(maintained, 6))]
    later = mem._call(mem.service.records.weak_facts(threshold=0.9, now=night + timedelta(days=10)))
    assert later[0][1] == pytest.approx(math.exp(-0.1 * 20**0.8), rel=1e-6)  # one curve


def test_an_access_moves_the_decay_anchor(mem: Memory) -> None:
    fact = mem.remember("Sam owns a greyhound called Pixel", user="sam").memory
    maintain(mem, now=fact.updated_at + timedelta(days=10))
    decayed = mem.get(fact.id).confidence
    hits = mem.search("greyhound Pixel", user="sam")
    assert hits and hits[0].memory.id == fact.id
    mem.flush(10)  # reinforcement is applied by the background worker
    touched = mem.get(fact.id)
    assert touched.access_count == 1 and touched.last_accessed is not None
    assert touched.confidence == pytest.approx(decayed + 0.05 * math.log1p(1 / 20))
    maintain(mem, now=touched.last_accessed + timedelta(days=10))
    assert mem.get(fact.id).confidence == pytest.approx(
        touched.confidence * math.exp(-0.1 * 10**0.8), rel=1e-6
    )


def test_reinforcement_is_capped_at_one(mem: Memory) -> None:
    fact = mem.remember("Sam drinks oat flat whites", user="sam", confidence=0.99).memory
    for _ in range(30):
        mem.service.store.memories.touch("default", [fact.id], now=utcnow())
    touched = mem.get(fact.id)
    assert touched.confidence == 1.0 and touched.access_count == 30


# ---------------------------------------------------------------------- the whole job
def test_maintenance_consolidates_pending_sessions_and_records_the_run(mem: Memory) -> None:
    turns(mem, "s1", "Alec is my boss by the way")
    turns(mem, "s2", "I prefer tea over coffee")
    mem.add("noted", namespace="other", user="ann", session="o1")
    report = maintain(mem)
    assert report.ran and report.sessions_consolidated == 3 and report.facts_created == 2
    assert report.namespaces == ["default", "other"] and report.llm is None
    assert mem.stats().pending_sessions == 0
    assert mem.stats().last_maintenance is not None
    again = maintain(mem)
    assert again.sessions_consolidated == 0 and again.facts_created == 0


def test_maintenance_catches_up_on_embeddings(mem: Memory) -> None:
    mem.add("a turn to embed", user="sam")
    report = maintain(mem)  # the background worker may have been first
    assert report.embedded <= 1 and mem.stats().pending_embeddings == 0
    job = Maintenance(mem.service.store, mem.settings, consolidator=None, llm=None, embed=lambda: 7)
    assert job.run().embedded == 7


class ScriptedLLM:
    """A local fake LLM: summaries for profile prompts, a causal link for the first
    pair of every causal prompt, garbage for extraction."""

    model_id = "scripted"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> str:
        prompt = str(messages[-1]["content"])
        self.prompts.append(prompt)
        if prompt.startswith("Entity:"):
            name = prompt.split(",")[0].removeprefix("Entity: ")
            return f"{name} is someone the user talks about a lot."
        ids = re.findall(r"^\s+\[([A-Za-z0-9]{8})\]", prompt, flags=re.MULTILINE)
        if prompt.startswith("Pair 1") and len(ids) >= 2:
            link = {"cause_id": ids[0], "effect_id": ids[1], "confidence": 0.9,
                    "explanation": "the question led to the answer"}  # fmt: skip
            return json.dumps({"links": [link]})
        return "I cannot do that."


def test_enrichment_and_causal_links_with_an_llm(mem: Memory) -> None:
    llm = ScriptedLLM()
    mem.service.consolidation.llm = llm
    first = mem.add("Why is the build red?", user="sam", session="s1", role="user")
    mem.add("Because the API key expired.", user="sam", session="s1", role="assistant")
    alec = mem._call(mem.service.records.save_entity("Alec", type="person"))
    for text in ("Alec is the user's boss", "Alec likes early meetings", "Alec lives in Porto"):
        node = mem.remember(text, user="sam").memory
        mem._call(mem.service.records.link_entities(node.id, [alec.id]))
    for _ in range(2):
        mem._call(mem.service.records.save_entity("Alec"))  # two more mentions: 3 in all
    mem.service.consolidation.extractor = SlowRules(delay=0)
    report = maintain(mem)
    assert report.ran and report.llm == "scripted" and not report.errors, report.errors
    assert report.entities_enriched == 1 and report.causal_edges == 1
    assert mem._call(mem.service.records.get_entity(alec.id)).summary == (
        "Alec is someone the user talks about a lot."
    )
    edges = mem._call(mem.service.records.explain(first.id)).edges  # type: ignore[union-attr]
    (causal,) = [e for e in edges if e.relation is EdgeType.CAUSAL]
    assert causal.source_id == first.id and causal.confidence == 0.9  # type: ignore[union-attr]
    assert causal.evidence == ["the question led to the answer"]
    again = maintain(mem)  # the pairs were looked at: nothing new
    assert again.causal_edges == 0 and again.entities_enriched == 0


def test_a_malformed_llm_reply_in_maintenance_changes_nothing(mem: Memory) -> None:
    mem.service.consolidation.llm = ScriptedLLM()  # answers extraction prompts with prose
    eps = turns(mem, "s1", "Alec is my boss by the way")
    report = maintain(mem)
    assert report.ran and report.sessions_failed == 1 and report.errors
    assert mem.list(type=["semantic", "opinion"]) == []
    assert mem.get(eps[0].id).consolidated_at is None and mem.stats().pending_sessions == 1


# ---------------------------------------------------------------------- one run at a time
def test_two_threads_do_the_work_once(make_memory: MakeMemory) -> None:
    a = make_memory(consolidate_on_session_switch=False)
    b = make_memory(consolidate_on_session_switch=False)  # same file, own connections
    turns(a, "s1", "Alec is my boss by the way")
    release = threading.Event()
    slow = SlowRules(delay=10, release=release)
    a.service.consolidation.extractor = slow
    reports: list[MaintenanceReport] = []
    first = threading.Thread(target=lambda: reports.append(maintain(a)))
    first.start()
    assert slow.started.wait(10)
    second = maintain(b)  # while the first holds the lock
    release.set()
    first.join(10)
    assert not second.ran and "already running" in second.message
    assert second.holder is not None and reports[0].ran and reports[0].facts_created == 1
    assert a.count(type="semantic") == 1


def test_a_stale_lock_expires_and_a_live_one_blocks(mem: Memory) -> None:
    store = mem.service.store
    assert store.jobs.acquire_lock(LOCK, "crashed-host:1", now=utcnow() - timedelta(hours=2),
                              ttl=timedelta(minutes=30))  # fmt: skip
    assert maintain(mem).ran  # the crashed run's lock had expired
    assert store.jobs.acquire_lock(LOCK, "busy-host:2", now=utcnow(), ttl=timedelta(minutes=30))
    blocked = maintain(mem)
    assert not blocked.ran and blocked.holder == "busy-host:2"
    store.jobs.release_lock(LOCK, "busy-host:2")
    assert maintain(mem).ran


def _maintain_in_process(path: str, barrier: Any, results: Any) -> None:
    m = Memory(path, embedder=FakeEmbedder(), consolidate_on_session_switch=False)
    try:
        m.service.consolidation.extractor = SlowRules(delay=1.5)
        barrier.wait(60)
        report = m.service.consolidation.maintain.now()
        results.put((report.ran, report.facts_created, report.message))
    finally:
        m.close()


def test_two_processes_do_the_work_once(make_memory: MakeMemory, db_path: str) -> None:
    m = make_memory(consolidate_on_session_switch=False)
    turns(m, "s1", "Alec is my boss by the way")
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_maintain_in_process, args=(db_path, barrier, results))
             for _ in range(2)]  # fmt: skip
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    (skipped, did) = outcomes
    assert did[:2] == (True, 1) and skipped[0] is False and "already running" in skipped[2]
    assert m.count(type="semantic") == 1


# ---------------------------------------------------------------------- CLI
def test_cli_maintain(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder="fake", consolidate_on_session_switch=False) as m:
        turns(m, "s1", "Alec is my boss by the way")
        m.remember("Sam likes jazz on Sundays", user="sam")
    runner = CliRunner()
    base = ["--db", db, "--embedder", "fake"]
    result = runner.invoke(app, ["maintain", "--json", *base])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ran"] is True and data["sessions_consolidated"] == 1
    result = runner.invoke(app, ["maintain", *base], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "consolidation" in result.stdout and "skipped (no LLM configured)" in result.stdout
    with Memory(db, embedder="fake") as m:
        m.service.store.jobs.acquire_lock(LOCK, "other", now=utcnow(), ttl=timedelta(minutes=5))
    result = runner.invoke(app, ["maintain", *base])
    assert result.exit_code == 0 and "already running" in result.stdout


def test_an_unusable_llm_leaves_sessions_pending(make_memory: MakeMemory) -> None:
    m = make_memory(consolidate_on_session_switch=False, llm="no-such-llm")
    turns(m, "s1", "Alec is my boss by the way")
    report = maintain(m)
    assert report.ran and report.errors[0].startswith("llm 'no-such-llm'")
    assert report.sessions_consolidated == 0 and m.stats().pending_sessions == 1
    assert m.stats().last_maintenance is not None  # the other steps ran


# ------------------------------------------------------------- a run killed on this host
CHILD = Path(__file__).resolve().parent / "maintain_child.py"


def held_by(db: str) -> str | None:
    with Memory(db, embedder=None) as m:
        held = m.service.store.jobs.lock_holder(LOCK, now=utcnow())
    return held[0] if held else None


def test_a_sigkilled_maintain_leaves_no_lock_behind_on_this_host(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=FakeEmbedder(), consolidate_on_session_switch=False) as m:
        turns(m, "s1", "I moved to Porto last spring", "My sister Ana lives in Braga")
    child = subprocess.Popen(
        [sys.executable, str(CHILD), db], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # only guards against a hang
        while (owner := held_by(db)) is None:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never took the lock"
            time.sleep(0.05)
        assert owner.split(":")[:2] == [socket.gethostname(), str(child.pid)]
        # alive: another maintain on this host waits for it, as before
        busy = run_cli(db, "maintain", "--embedder", "fake", "--json")
        assert busy.returncode == 0, busy.stderr
        assert json.loads(busy.stdout)["ran"] is False
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(60)
        if child.stderr:
            child.stderr.close()
    assert held_by(db) == owner  # the killed run freed nothing: its lock is still there
    done = run_cli(db, "maintain", "--embedder", "fake", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ran"] is True, report["message"]  # taken over, not "already running"
    assert report["sessions_consolidated"] == 1
    assert held_by(db) is None


def run_cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    return subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", *args, "--db", db],
        capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_only_a_dead_process_of_this_host_counts_as_gone() -> None:
    from memloci.consolidation.maintenance import dead_here, lock_owner

    mine = lock_owner()
    host, _pid, run, *token = mine.split(":")
    assert not dead_here(mine)  # this very process
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(60)
    dead = ":".join([host, str(gone.pid), run, *token])
    assert dead_here(dead)
    assert not dead_here(":".join(["another-host", str(gone.pid), run, *token]))
    assert not dead_here(":".join([host, str(gone.pid), run, "0000ffff"]))  # another container
    assert not dead_here(":".join([host, "1", run, *token]))  # alive (init)
    assert not dead_here("crashed-host:1") and not dead_here("nonsense")
