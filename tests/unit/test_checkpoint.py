"""WAL checkpoints run on a background thread (a commit checkpoints only at the bound),
and the log stays bounded under a steady stream of writes."""

from __future__ import annotations

import time
from pathlib import Path

from memloci.models import MemoryNode, NodeType, Scope, short_id, utcnow
from memloci.storage.sqlite import SQLiteStore
from memloci.storage.sqlite import checkpoint as ckpt


def _node(i: int) -> MemoryNode:
    now = utcnow()
    return MemoryNode(
        id=short_id(), namespace="default", type=NodeType.EPISODIC, scope=Scope.GLOBAL,
        content=f"turn number {i} " + "about the garden " * 20, event_time=now,
        created_at=now, updated_at=now, valid_from=now,
    )  # fmt: skip


def test_commits_leave_checkpoints_to_the_background_and_the_log_stays_small(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(str(path))
    try:
        bound = store.db._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert bound == ckpt.WAL_BOUND
        assert store.db._checkpoints is not None
        for i in range(20 * ckpt.EVERY):
            store.memories.insert_node(_node(i))
        deadline = time.monotonic() + 10
        while store.db._checkpoints.runs < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.db._checkpoints.runs >= 10  # about one per EVERY commits
        wal = Path(str(path) + "-wal").stat().st_size
        assert wal < 2 * ckpt.WAL_BOUND * 4096, wal  # the log starts over: bounded
    finally:
        store.close()
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0


def test_a_quiet_store_checkpoints_after_idle(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "m.db"))
    try:
        store.memories.insert_node(_node(0))  # one commit: below EVERY
        assert store.db._checkpoints is not None
        deadline = time.monotonic() + 10
        while store.db._checkpoints.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.db._checkpoints.runs >= 1
    finally:
        store.close()


def test_in_memory_stores_have_no_checkpoint_thread() -> None:
    store = SQLiteStore(":memory:")
    try:
        store.memories.insert_node(_node(0))
        assert store.db._checkpoints is None
    finally:
        store.close()
