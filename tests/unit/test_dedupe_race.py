"""Concurrent ``remember`` of the same facts stores each fact once (issue 11 item 2):
the duplicate check and the insert (with its vector) are one ``store.exclusive``
transaction, serialised across threads and processes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from dedupe_child import fact

from memloci import Memory
from memloci.models import NodeType
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite import SQLiteStore
from procs import release_together

CHILD = Path(__file__).resolve().parent / "dedupe_child.py"


def _together(workers: int, job: Callable[[int], list[str]]) -> list[list[str]]:
    """Run ``job(i)`` in ``workers`` threads released at the same moment."""
    start = threading.Barrier(workers)
    out: list[list[str]] = [[] for _ in range(workers)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()
            out[i] = job(i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    return out


def _stored(mem: Memory, user: str = "team") -> Counter[str]:
    return Counter(n.content for n in mem.list(user=user, limit=1000))


def test_sixteen_threads_store_twenty_facts_once(mem: Memory) -> None:
    def job(i: int) -> list[str]:
        order = list(range(20))
        random.Random(i).shuffle(order)
        return [mem.remember(fact(n), user="team").action for n in order]

    actions = Counter(a for run in _together(16, job) for a in run)
    assert actions == {"created": 20, "confirmed": 16 * 20 - 20}
    stored = _stored(mem)
    assert len(stored) == 20 and set(stored.values()) == {1}
    confirmed = sum(n.times_confirmed for n in mem.list(user="team", limit=100))
    assert confirmed == 16 * 20 - 20  # every confirmation counted on the one row


def test_sixteen_threads_learn_a_procedure_once(mem: Memory) -> None:
    text = "Always run the linter before pushing a branch"
    actions = Counter(a for run in _together(16, lambda i: [mem.learn_procedure(text).action])
                      for a in run)  # fmt: skip
    assert actions == {"created": 1, "confirmed": 15}
    assert mem.count(type=NodeType.PROCEDURAL) == 1


def test_racing_near_duplicates_see_each_others_vectors(mem: Memory) -> None:
    """Different texts (so no hash match) with the same meaning: only a vector stored
    in the same transaction as its row lets the racing writers find each other."""
    base = "The user keeps the backup drive in the top drawer"
    variants = [base + "!" * i for i in range(1, 17)]  # same words, other text

    def job(i: int) -> list[str]:
        return [mem.remember(variants[i], user="team").action]

    actions = Counter(a for run in _together(16, job) for a in run)
    assert actions == {"created": 1, "confirmed": 15}
    assert sum(_stored(mem).values()) == 1


def test_six_processes_store_fifty_facts_once(tmp_path: Path) -> None:
    db = str(tmp_path / "race.db")
    with Memory(db, embedder=FakeEmbedder()):
        pass  # create the schema once
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), db, "50", str(seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in range(6)
    ]
    outputs = release_together(procs, timeout=600)
    actions = Counter(a for out in outputs for a in json.loads(out.strip().splitlines()[-1]))
    assert actions == {"created": 50, "confirmed": 250}
    with Memory(db, embedder=FakeEmbedder()) as mem:
        stored = _stored(mem)
        assert len(stored) == 50 and set(stored.values()) == {1}
        assert mem.count(type=NodeType.SEMANTIC) == 50


def test_exclusive_reads_see_their_own_writes(db_path: str) -> None:
    store = SQLiteStore(db_path)
    try:
        with store.exclusive("facts:default"):
            store.set_meta("probe", "inside")
            assert store.get_meta("probe") == "inside"
        assert store.get_meta("probe") == "inside"
    finally:
        store.close()
