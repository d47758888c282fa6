"""Several processes write one SQLite file at once while another reads it: no call
fails (no ``database is locked``), and every write that returned is counted in the
file afterwards. Writers use distinct keys, so nothing is deduplicated.

Scale: ``MEMLOCI_RELIABILITY_WRITERS`` × ``MEMLOCI_RELIABILITY_SECONDS`` (CI 4 × 5 s;
``make reliability`` runs 6 × 60 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scale import SECONDS, WRITERS

from memloci import Memory
from memloci.models import NodeType
from memloci.providers.fake import FakeEmbedder
from procs import release_together

pytestmark = pytest.mark.reliability
CHILD = Path(__file__).resolve().parent / "writer_child.py"


def test_concurrent_writers_and_a_reader(tmp_path: Path) -> None:
    db = tmp_path / "writers.db"
    with Memory(str(db), embedder=FakeEmbedder()):
        pass  # create the schema once, as a deployment would
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    roles = [("writer", i) for i in range(WRITERS)] + [("reader", 0)]
    procs = []
    for role, i in roles:
        command = [sys.executable, str(CHILD), str(db), role, str(i), str(SECONDS)]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        procs.append(subprocess.Popen(command, env=env, text=True, **pipes))
    outputs = release_together(procs, timeout=SECONDS + 600)
    reports = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    errors = [e for r in reports for e in r["errors"]]
    locked = sum("locked" in e for e in errors)
    assert not errors, f"{len(errors)} failed calls ({locked} 'database is locked'):\n{errors[0]}"
    with Memory(str(db), embedder=FakeEmbedder()) as memory:
        for (_, i), report in zip(roles[:-1], reports[:-1], strict=True):
            user = f"w{i}"
            assert memory.count(owner=user, type=NodeType.EPISODIC) == report["turns"]
            assert memory.count(owner=user, type=NodeType.SEMANTIC) == report["facts"]
    writes = sum(r["turns"] + r["facts"] for r in reports)
    assert writes > 0 and reports[-1]["reads"] > 0
    print(
        f"\nwriters: {WRITERS} processes x {SECONDS} s + 1 reader: {writes} writes, "
        f"{reports[-1]['reads']} read rounds, 0 errors, 0 'database is locked'"
    )
