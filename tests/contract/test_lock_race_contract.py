"""Named locks under contention: many stores (separate connections, as separate
processes or servers would have) race for one lock; exactly one wins, every time."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from memloci.models import MemoryNode, NodeType, Scope, short_id
from memloci.storage.base import Store

from .conftest import StoreFactory

RACERS, ROUNDS = 6, 5
TTL = timedelta(minutes=5)


def _race(stores: list[Store], name: str, now: datetime) -> list[bool]:
    start = threading.Barrier(len(stores))
    won = [False] * len(stores)

    def race(i: int) -> None:
        start.wait()
        won[i] = stores[i].jobs.acquire_lock(name, f"owner-{i}", now=now, ttl=TTL)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


def test_exactly_one_of_many_racers_takes_a_lock(store_factory: StoreFactory) -> None:
    stores = [store_factory.open() for _ in range(RACERS)]
    for round_ in range(ROUNDS):
        now = datetime.now(UTC)
        won = _race(stores, f"maintenance-{round_}", now)
        assert sum(won) == 1, won
        holder = stores[0].jobs.lock_holder(f"maintenance-{round_}", now=now)
        assert holder is not None and holder[0] == f"owner-{won.index(True)}"


def test_concurrent_turns_of_a_chat_without_sessions_form_one_chain(
    store_factory: StoreFactory,
) -> None:
    """Four stores (as four processes would) add one owner's session-less turns at once:
    every turn after the first follows exactly one, and none is followed twice."""
    stores = [store_factory.open() for _ in range(4)]
    start = threading.Barrier(len(stores))
    at = datetime(2024, 5, 1, tzinfo=UTC)

    def write(k: int) -> None:
        start.wait()
        for i in range(8):
            when = at + timedelta(seconds=10 * i + k)
            node = MemoryNode(
                id=short_id(), namespace="default", type=NodeType.EPISODIC,
                content=f"writer {k} turn {i}", scope=Scope.USER, user="u1", speaker="user",
                event_time=when, created_at=when, updated_at=when, valid_from=when,
            )  # fmt: skip
            stores[k].memories.insert_node(node, link_previous=True)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    edges = [(e.source_id, e.target_id) for e in stores[0].memories.iter_edges("default")]
    assert len(edges) == 31  # 32 turns, one chain
    assert len({s for s, _ in edges}) == 31 and len({t for _, t in edges}) == 31
