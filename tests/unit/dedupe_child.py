"""One process of the concurrent-``remember`` test.

``python dedupe_child.py DB COUNT SEED``: opens the store, prints ``ready``, waits for
a line on stdin (so every process starts together), remembers the same COUNT facts
(in an order shuffled by SEED) and prints one JSON line: the action of each call.
"""

from __future__ import annotations

import json
import random
import sys

from memloci import Memory
from memloci.providers.fake import FakeEmbedder


def fact(i: int) -> str:
    return f"Shared fact {i}: the deploy window of service s{i} is slot {i * 7}"


def main(db: str, count: int, seed: int) -> None:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    with Memory(db, embedder=FakeEmbedder()) as memory:
        print("ready", flush=True)
        sys.stdin.readline()
        actions = [memory.remember(fact(i), user="team").action for i in order]
    print(json.dumps(actions))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
