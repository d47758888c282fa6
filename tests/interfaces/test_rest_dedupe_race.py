"""16 threads POSTing the same 20 facts to a real server store each fact once
(issue 11 item 2: the dedupe check and the insert are one transaction)."""

from __future__ import annotations

import random
import threading
from collections import Counter

import httpx
from rest_server import client

from memloci import Memory


def fact(i: int) -> str:
    return f"Posted fact {i}: the on-call phone of team t{i} is extension {i * 11}"


def test_sixteen_threads_posting_the_same_facts(server: str, mem: Memory) -> None:
    start = threading.Barrier(16)
    statuses: list[int] = []
    ids: dict[int, set[str]] = {i: set() for i in range(20)}
    lock = threading.Lock()

    def run(seed: int) -> None:
        order = list(range(20))
        random.Random(seed).shuffle(order)
        with client(server) as http:
            start.wait()
            for i in order:
                r: httpx.Response = http.post(
                    "/api/memory/", json={"content": fact(i), "category": "project"}
                )
                with lock:
                    statuses.append(r.status_code)
                    if r.status_code in (200, 201):  # created / confirmed the existing one
                        ids[i].add(r.json()["id"])

    threads = [threading.Thread(target=run, args=(s,)) for s in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Counter(statuses) == {201: 20, 200: 16 * 20 - 20}
    assert all(len(found) == 1 for found in ids.values())  # every answer names one memory
    stored = Counter(n.content for n in mem.list(limit=1000))
    assert sorted(stored) == sorted(fact(i) for i in range(20))
    assert set(stored.values()) == {1}
