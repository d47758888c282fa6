"""Forget-a-person timings and the cost of secure delete (not part of the package).

For each size N, builds a SQLite store of N memories spread over 10 users (turns in
sessions linked in order, facts with keys, 384-d vectors, entity links, a thread and
identifiers per user), then times:

- ``delete_user_data`` of one user (N/10 memories) — the one transaction;
- the first ``scrub`` of the file (FTS merge + one-time VACUUM + WAL truncate);
- a second user's forget and scrub (no VACUUM: what every later forget costs);
- a third user's forget and scrub while another connection holds a read snapshot
  (``BEGIN; SELECT 1 FROM nodes``), and one insert made during it: the scrub gives up
  at once (``scrubbed=False``) instead of waiting, and the insert does not wait;
- ``purge`` of 200 single memories with ``secure_delete`` on and off (write cost),
  and inserting 5,000 turns with it on and off.

    python bench/forget_bench.py                # 1k and 100k
    python bench/forget_bench.py --sizes 1000   # quick
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from memloci.models import Entity, MemoryNode, MemoryUser, NodeType, Scope, Thread, short_id
from memloci.storage.sqlite import SQLiteStore
from memloci.storage.sqlite.base import sqlite3

DIM = 384
USERS = 10
WORDS = [
    "lisbon", "coffee", "dog", "project", "garden", "river", "train", "violin", "soup", "market",
    "tennis", "python", "winter", "sister", "office", "recipe", "bicycle", "novel", "museum",
    "harbor",
]  # fmt: skip


def node(i: int, user: str, when: datetime, rng: np.random.Generator) -> MemoryNode:
    text = " ".join(rng.choice(WORDS, 12)) + f" {user} note {i}"
    fact = i % 5 == 0
    return MemoryNode(
        id=short_id(), namespace="default", type=NodeType.SEMANTIC if fact else NodeType.EPISODIC,
        content=text, key=f"{user}_key_{i}" if fact else None, value=i if fact else None,
        scope=Scope.USER, user=user, session=None if fact else f"{user}-s{i // 50}",
        event_time=when, created_at=when, updated_at=when, valid_from=when,
    )  # fmt: skip


def build(path: str, n: int) -> SQLiteStore:
    store = SQLiteStore(path)
    store.bind_embedder("bench:384", DIM)
    rng = np.random.default_rng(1)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    per = n // USERS
    for u in range(USERS):
        uid = f"user{u}"
        nodes = [node(i, uid, t0 + timedelta(minutes=i), rng) for i in range(per)]
        for start in range(0, per, 2000):
            store.memories.insert_nodes(nodes[start : start + 2000], link_previous=True)
        store.people.upsert_user(
            MemoryUser(id=uid, namespace="default", identifiers={"telegram": f"tg{u}"},
                       created_at=t0)
        )  # fmt: skip
        store.people.upsert_thread(
            Thread(id=f"{uid}-chat", namespace="default", user=uid, created_at=t0, updated_at=t0)
        )
        own = store.entities.insert_entity(
            Entity(id=short_id(), namespace="default", canonical_name=f"place {u}",
                   first_seen=t0, last_seen=t0)
        )  # fmt: skip
        with store.batch():
            for nd in nodes[:: max(1, per // 100)]:
                store.entities.link_entities("default", nd.id, [own.id])
    while pending := store.search.pending_embeddings(5000):
        vecs = rng.normal(size=(len(pending), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.search.save_embeddings(pending, vecs)
    return store


def timed(fn: object, *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start, out


def held_reader(path: str, store: SQLiteStore, user: str) -> tuple[float, bool, float]:
    """Forget ``user`` and scrub while another connection holds a read snapshot, with one
    insert started meanwhile: (forget + scrub seconds, scrubbed, insert seconds)."""
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT 1 FROM nodes").fetchall()
    rng = np.random.default_rng(3)
    when = datetime(2025, 1, 1, tzinfo=UTC)
    waited: list[float] = []

    def insert() -> None:
        start = time.perf_counter()
        store.memories.insert_node(node(0, "writer", when, rng))
        waited.append(time.perf_counter() - start)

    writer = threading.Thread(target=insert)
    start = time.perf_counter()
    writer.start()
    store.delete_user_data("default", user)
    scrub = store.scrub()
    took = time.perf_counter() - start
    writer.join()
    reader.execute("COMMIT")
    reader.close()
    return took, scrub.done, waited[0]


def secure_delete_cost(folder: str, on: bool) -> tuple[float, float]:
    """Seconds to insert 5,000 turns (one transaction each 50) and to purge 200 of them."""
    store = SQLiteStore(os.path.join(folder, f"sd-{on}.db"))
    store.db._writer.execute(f"PRAGMA secure_delete = {'ON' if on else 'OFF'}")
    rng = np.random.default_rng(2)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    nodes = [node(i, "u", t0, rng) for i in range(5000)]
    start = time.perf_counter()
    for i in range(0, len(nodes), 50):
        store.memories.insert_nodes(nodes[i : i + 50], link_previous=True)
    insert = time.perf_counter() - start
    start = time.perf_counter()
    for nd in nodes[::25]:
        store.memories.purge_node("default", nd.id)
    purge = time.perf_counter() - start
    store.db._scrub_pending = False  # measure the writes, not the close-time scrub
    store.close()
    return insert, purge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    args = parser.parse_args()
    print(f"{'memories':>9} {'forget':>8} {'removed':>8} {'scrub#1':>8} {'forget#2':>9}"
          f" {'scrub#2':>8} {'size MB':>8}")  # fmt: skip
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "f.db")
            store = build(path, n)
            size = os.path.getsize(path) / 1e6
            t1, report = timed(store.delete_user_data, "default", "user0")
            s1, _ = timed(store.scrub)
            t2, _ = timed(store.delete_user_data, "default", "user1")
            s2, _ = timed(store.scrub)
            held, scrubbed, insert = held_reader(path, store, "user2")
            store.close()
            removed = report["memories"]  # type: ignore[index]
            print(f"{n:>9} {t1:>7.2f}s {removed:>8} {s1:>7.2f}s {t2:>8.2f}s {s2:>7.2f}s"
                  f" {size:>8.1f}")  # fmt: skip
            print(f"{'':>9} held reader: forget + scrub {held:.2f}s (scrubbed={scrubbed}),"
                  f" an insert meanwhile {insert:.3f}s")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        for on in (False, True):
            insert, purge = secure_delete_cost(folder, on)
            print(f"secure_delete {'on ' if on else 'off'}: insert 5,000 turns {insert:.2f}s,"
                  f" purge 200 memories {purge:.2f}s")  # fmt: skip


if __name__ == "__main__":
    main()
