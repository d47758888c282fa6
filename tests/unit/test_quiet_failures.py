"""Quiet where it should be (issue 11 item 12): opening a store while another process
holds its write lock works (an up-to-date schema takes no write lock); a write under a
held lock fails with one StorageError; closing a Memory while background work runs
prints nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memloci import Memory
from memloci.errors import StorageError
from memloci.providers.fake import FakeEmbedder
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
