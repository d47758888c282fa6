"""Named locks under contention: many stores (separate connections, as separate
processes or servers would have) race for one lock; exactly one wins, every time."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from memloci.storage.base import Store

from .conftest import StoreFactory

RACERS, ROUNDS = 6, 5
TTL = timedelta(minutes=5)


def _race(stores: list[Store], name: str, now: datetime) -> list[bool]:
    start = threading.Barrier(len(stores))
    won = [False] * len(stores)

    def race(i: int) -> None:
        start.wait()
        won[i] = stores[i].acquire_lock(name, f"owner-{i}", now=now, ttl=TTL)

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
        holder = stores[0].lock_holder(f"maintenance-{round_}", now=now)
        assert holder is not None and holder[0] == f"owner-{won.index(True)}"
