"""SIGKILL crash trials: a writer process (``crash_child.py``) is killed at a random
point, again and again, on one SQLite file. After every kill the file is reopened
and checked: every acknowledged write is there with its content, no import batch is
half written, ``PRAGMA integrity_check`` and the FTS5 integrity checks pass, and the
full-text index holds exactly the rows of the table.

Scale: ``MEMLOCI_RELIABILITY_TRIALS`` (CI 20; ``make reliability`` runs 300).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from scale import SEED, TRIALS

from memloci import Memory
from memloci.providers.fake import FakeEmbedder

try:  # the binding memloci itself uses (FTS5 with contentless_delete)
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3  # type: ignore[no-redef]

pytestmark = pytest.mark.reliability
CHILD = Path(__file__).resolve().parent / "crash_child.py"


@dataclass
class Expected:
    """What must be in the file, accumulated over every trial so far."""

    content: dict[str, set[str]] = field(default_factory=dict)  # id -> acceptable contents
    batches: list[tuple[list[str], bool]] = field(default_factory=list)  # (ids, acked)
    acked: int = 0

    def read(self, log: Path) -> None:
        """Fold one child's log in. The last ``intent`` without its ``ack`` may or may
        not have landed: its new content is acceptable too, nothing else is."""
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        pending: dict[str, str] | None = None
        for line in lines:
            op, phase = line["op"], line["phase"]
            if op == "ready":
                continue
            if phase == "intent":
                pending = line
                if op == "import":
                    self.batches.append((line["ids"], False))
                continue
            pending = None
            self.acked += 1
            if op == "import":
                self.batches[-1] = (line["ids"], True)
            elif op == "update" or line.get("action", "created") == "created":
                self.content[line["id"]] = {line["content"]}
            else:  # remember answered "confirmed"/"updated": the id must exist
                self.content.setdefault(line["id"], set())
        if pending is not None and pending["op"] == "update":
            self.content[pending["id"]].add(pending["content"])


def check_file(db: Path, expected: Expected) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tables = {r for (r,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "nodes" not in tables:
            # killed during the first open, before its migrations committed (they run in
            # one transaction): no schema at all, and so nothing can have been acknowledged
            assert not tables - {"meta"}, f"a half-created schema: {sorted(tables)}"
            assert expected.acked == 0 and not expected.content and not expected.batches
            return
        for table in ("nodes_fts", "knowledge_fts"):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        in_fts = {r for (r,) in conn.execute("SELECT rowid FROM nodes_fts")}
        in_nodes = {r for (r,) in conn.execute("SELECT rowid FROM nodes")}
        assert in_fts == in_nodes, "the full-text index and the nodes table disagree"
        stored = dict(conn.execute("SELECT id, content FROM nodes"))
    finally:
        conn.close()
    lost = [mid for mid in expected.content if mid not in stored]
    assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
    wrong = {
        mid: stored[mid] for mid, ok in expected.content.items() if ok and stored[mid] not in ok
    }
    assert not wrong, f"acknowledged content changed: {list(wrong.items())[:3]}"
    for ids, acked in expected.batches:
        present = sum(mid in stored for mid in ids)
        assert present in ((len(ids),) if acked else (0, len(ids))), (
            f"import batch half written: {present} of {len(ids)} (acknowledged: {acked})"
        )


def wait_ready(proc: subprocess.Popen[bytes], log: Path, err: Path) -> None:
    deadline = time.monotonic() + 60
    while not (log.exists() and log.read_text().startswith('{"op": "ready"')):
        assert proc.poll() is None, f"the writer died on its own:\n{err.read_text()}"
        assert time.monotonic() < deadline, "the writer never became ready"
        time.sleep(0.01)


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "crash.db"
    expected = Expected()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    during_startup = 0
    for trial in range(TRIALS):
        log, err = tmp_path / f"trial{trial}.log", tmp_path / f"trial{trial}.err"
        with err.open("wb") as errfh:
            proc = subprocess.Popen(
                [sys.executable, str(CHILD), str(db), str(log), str(rng.randrange(1 << 30))],
                env=env, stdout=subprocess.DEVNULL, stderr=errfh,
            )  # fmt: skip
            try:
                if rng.random() < 0.15:  # kill while it opens (recovery, migrations)
                    during_startup += 1
                    time.sleep(rng.uniform(0, 0.5))
                else:
                    wait_ready(proc, log, err)
                    time.sleep(rng.uniform(0.01, 0.8))
                assert proc.poll() is None, f"the writer died on its own:\n{err.read_text()}"
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        if log.exists():
            expected.read(log)
        check_file(db, expected)
    # and the SDK opens the survivor and finds what was acknowledged
    with Memory(str(db), embedder=FakeEmbedder()) as memory:
        some = list(expected.content)[:50]
        assert all(memory.get(mid).id == mid for mid in some)
    print(
        f"\ncrash trials: {TRIALS} kills ({during_startup} during start-up), "
        f"{expected.acked} acknowledged writes, {len(expected.content)} memories checked, "
        f"{len(expected.batches)} import batches, 0 lost (seed {SEED})"
    )
    assert expected.acked > 0
