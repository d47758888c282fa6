"""Quiet where it should be (issue 11 item 12): opening a store while another process
holds its write lock works (an up-to-date schema takes no write lock); a write under a
held lock fails with one StorageError; closing a Memory while background work runs
prints nothing."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from memloci import Memory
from memloci.consolidation.base import ExtractedFact, Extraction
from memloci.errors import StorageError
from memloci.models import MemoryNode
from memloci.providers.fake import FakeEmbedder
from memloci.service.consolidation import Consolidation
from memloci.storage.sqlite import SQLiteStore

HOLDER = Path(__file__).resolve().parent / "lock_holder.py"


@contextmanager
def write_lock_held(db: str) -> Iterator[None]:
    """Another process holds ``BEGIN IMMEDIATE`` on ``db`` for the duration."""
    proc = subprocess.Popen(
        [sys.executable, str(HOLDER), db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield
    finally:
        proc.communicate("done\n", timeout=60)  # releases the lock, closes the pipes


def test_opening_a_current_store_under_a_held_write_lock(tmp_path: Path) -> None:
    db = str(tmp_path / "held.db")
    with Memory(db, embedder=FakeEmbedder()) as mem:
        mem.remember("The user waters the plants on Sunday", user="u1")
        mem.flush()
    with write_lock_held(db):
        # a short busy timeout: without the fix the open itself waits, then fails
        store = SQLiteStore(db, busy_timeout=0.2)
        with Memory(store=store, embedder=FakeEmbedder()) as mem:
            assert [n.content for n in mem.list(user="u1")] == [
                "The user waters the plants on Sunday"
            ]
            assert mem.search("plants", user="u1")
            with pytest.raises(StorageError):  # a write still needs the lock: one clear error
                mem.remember("Another fact that must wait", user="u1")
    with Memory(db, embedder=FakeEmbedder()) as mem:
        assert mem.count(user="u1") == 1


def test_a_new_store_still_migrates_and_binds(tmp_path: Path) -> None:
    db = str(tmp_path / "new.db")
    store = SQLiteStore(db, busy_timeout=0.2)
    try:
        assert store.schema_version() > 0
        store.bind_embedder("fake:8", 8)
        store.bind_embedder("fake:8", 8)  # bound already: a no-op
        assert store.get_meta("embedding_model") == "fake:8"
    finally:
        store.close()


class GatedExtractor:
    """An extractor (a slow LLM in real life) that is still thinking when the store
    closes: it returns only once the store is closed, so the consolidation's writes
    meet a closed store."""

    name = "gated"

    def __init__(self, mem: Memory) -> None:
        self.mem = mem
        self.started = threading.Event()
        self.users: list[str | None] = []

    def _store_open(self) -> bool:
        try:
            self.mem.service.store.get_meta("schema_version")
        except StorageError:
            return False
        return True

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        self.users.append(episodes[0].user)
        self.started.set()
        while self._store_open():
            time.sleep(0.01)  # polling for the close, not a timing assertion
        return Extraction(facts=[ExtractedFact(content="The user likes quiet closes")])


def test_closing_during_background_consolidation_is_quiet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # close waits this long for background consolidation (30 s by default), then goes on
    original = Consolidation.close
    monkeypatch.setattr(Consolidation, "close", lambda self: original(self, timeout=0.05))
    mem = Memory(str(tmp_path / "bg.db"), embedder=FakeEmbedder())
    gate = GatedExtractor(mem)
    mem.service.consolidation.extractor = gate
    for user in ("u1", "u2"):  # a session switch queues a job per user
        mem.add("We talked about the garden", user=user, session="s1")
        mem.add("Now something else", user=user, session="s2")
    assert gate.started.wait(60)
    with caplog.at_level(logging.DEBUG, logger="memloci"):
        mem.close()
        assert mem.service.consolidation.wait_for_consolidation(60)  # the background thread ends
    assert gate.users == ["u1"]  # the queued job did not start after close
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    assert any("stopped by close" in r.getMessage() for r in caplog.records)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "store is closed" not in err


CLOSE_UNDER_READS = """
import sys, threading
from memloci.errors import StorageError
from memloci.storage.sqlite import SQLiteStore

store = SQLiteStore(sys.argv[1])
refused = []

def read() -> None:  # reads until the store refuses one (each thread ends refused)
    while True:
        try:
            store.get_meta("schema_version")
        except StorageError:
            refused.append(1)
            return

threads = [threading.Thread(target=read) for _ in range(4)]
for t in threads:
    t.start()
for _ in range(200):
    store.get_meta("schema_version")
store.close()
for t in threads:
    t.join()
print("refused", len(refused))
"""


def test_closing_while_other_threads_read_never_crashes(tmp_path: Path) -> None:
    # closing a connection under a running statement crashes the SQLite binding: close()
    # must refuse new reads and wait for running ones (a subprocess, to see a crash)
    import subprocess
    import sys

    for trial in range(5):
        db = tmp_path / f"r{trial}.db"
        done = subprocess.run(
            [sys.executable, "-c", CLOSE_UNDER_READS, str(db)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "refused 4"
