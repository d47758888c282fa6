"""Closing a store while it is used (audit fixes): a call after close, or still waiting
when another thread closes, is a StorageError — never a hang, nor the event loop's
RuntimeError; close() from several threads at once closes once; a write whose caller
stopped waiting still keeps the store within its cap. A program that ends without
close() while consolidation runs exits quietly (a subprocess, its stderr empty)."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pysqlite3.dbapi2 as sqlite3
import pytest

from memloci import AsyncMemory, Memory
from memloci.errors import StorageError
from memloci.providers.fake import FakeEmbedder


def test_every_sync_call_after_close_is_a_storage_error(tmp_path: Path) -> None:
    mem = Memory(str(tmp_path / "c.db"), embedder=FakeEmbedder())
    fact = mem.remember("User likes black tea", user="u1").memory
    mem.close()
    calls = {
        "remember": lambda: mem.remember("User likes green tea", user="u1"),
        "get": lambda: mem.get(fact.id),
        "list": lambda: mem.list(),
        "stats": lambda: mem.stats(),
        "flush": lambda: mem.flush(),
        "end_session": lambda: mem.end_session("s1"),
        "search": lambda: mem.search("tea"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        for name, call in calls.items():
            with pytest.raises(StorageError, match="closed"):
                call()
            assert name
    mem.close()  # again: nothing


def test_async_flush_and_end_session_after_close_raise(tmp_path: Path) -> None:
    async def main() -> None:
        mem = AsyncMemory(str(tmp_path / "a.db"), embedder=FakeEmbedder())
        await mem.add("Remember that I prefer window seats", user="u1", session="s1")
        await mem.close()
        with pytest.raises(StorageError, match="closed"):
            await asyncio.wait_for(mem.flush(), 10)
        with pytest.raises(StorageError, match="closed"):
            await mem.end_session("s1")

    asyncio.run(main())


def test_closing_while_other_threads_call_never_leaves_one_waiting(tmp_path: Path) -> None:
    mem = Memory(str(tmp_path / "r.db"), embedder=FakeEmbedder())
    fid = mem.remember("User likes black tea", user="u1").memory.id
    outcome: dict[int, str] = {}

    def use(i: int) -> None:
        n = 0
        while True:
            n += 1
            try:
                if i % 3 == 0:
                    mem.remember(f"User {i} fact number {n}", user=f"u{i}")
                elif i % 3 == 1:
                    mem.get(fid)
                else:
                    mem.flush()
            except StorageError:
                outcome[i] = "closed"
                return
            except BaseException as exc:  # reported below
                outcome[i] = repr(exc)
                return

    users = [threading.Thread(target=use, args=(i,), daemon=True) for i in range(6)]
    for t in users:
        t.start()
    time.sleep(0.3)
    closers = [threading.Thread(target=mem.close, daemon=True) for _ in range(3)]
    for t in closers:
        t.start()
    for t in [*closers, *users]:
        t.join(30)
    assert not any(t.is_alive() for t in [*closers, *users])
    assert outcome == dict.fromkeys(range(6), "closed")


def test_a_remember_whose_caller_timed_out_keeps_the_store_within_its_cap(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "cap.db")

    def hold_write_lock(seconds: float) -> None:  # another process's long write
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    async def main() -> int:
        mem = AsyncMemory(path, embedder=FakeEmbedder(), max_memories=3)
        for i in range(3):
            await mem.remember(f"Baseline fact number {i} about tea", user="u1")
        for i in range(3):
            holder = threading.Thread(target=hold_write_lock, args=(0.5,))
            holder.start()
            await asyncio.sleep(0.05)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(mem.remember(f"Fact {i} about planets", user="u1"), 0.2)
            await asyncio.to_thread(holder.join)
        await asyncio.sleep(0.5)  # the writes the callers gave up on land meanwhile
        stored = await mem.count(type="semantic", include_forgotten=True)
        await mem.close()
        return stored

    assert asyncio.run(main()) == 3


def test_sync_methods_show_their_parameters() -> None:
    params = inspect.signature(Memory.remember).parameters
    assert "content" in params and "P" not in str(inspect.signature(Memory.remember))
    assert Memory.remember.__qualname__ == "Memory.remember"


def test_an_in_memory_store_after_close_is_a_storage_error() -> None:
    mem = Memory(":memory:", embedder=FakeEmbedder())
    mem.add("I live in Lisbon", user="u1")
    store = mem.service.store
    mem.close()
    with pytest.raises(StorageError, match="closed"):
        store.get_meta("schema_version")


EXIT_CHILD = Path(__file__).resolve().parent / "exit_child.py"


def test_leaving_without_close_while_consolidation_runs_is_quiet(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    done = subprocess.run(
        [sys.executable, str(EXIT_CHILD), db], capture_output=True, text=True, env=env,
        timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout == "leaving without close()\n"
    assert done.stderr == ""  # no "cannot schedule new futures after interpreter shutdown"
    with Memory(db, embedder=FakeEmbedder(), consolidate_on_session_switch=False) as mem:
        assert mem.count(type="episodic") == 180  # every turn kept (what consolidation
        # had not reached stays pending for the next run)


class _ShutDownEmbedder(FakeEmbedder):
    """Embeds as a pool does once the interpreter is shutting down: it refuses."""

    def embed(self, texts: object) -> object:  # type: ignore[override]
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")


def test_the_embedding_worker_stops_quietly_when_the_interpreter_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A program that ends without close() while a batch is being embedded: the worker
    thread ends without a traceback or a retry warning, and the memory stays queued for
    the next run (the exit test above meets this only when the timing falls that way)."""
    import memloci.service.worker as worker_module

    db = str(tmp_path / "m.db")
    monkeypatch.setattr(worker_module, "exiting", lambda: True, raising=False)
    mem = Memory(db, embedder=_ShutDownEmbedder(), consolidate_on_session_switch=False)
    worker = mem.service.worker
    assert worker is not None
    with caplog.at_level("DEBUG", logger="memloci"):
        mem.add("I moved to Porto", user="u1")
        worker._thread.join(10)
    assert not worker._thread.is_alive()
    assert worker.last_error is None and caplog.records == []
    monkeypatch.undo()
    mem.close()
    with Memory(db, embedder=FakeEmbedder(), consolidate_on_session_switch=False) as again:
        assert again.flush(10) and again.search("Porto", user="u1", recipe="vector")
