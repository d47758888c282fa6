"""One process of the concurrent-writers test.

``python writer_child.py DB ROLE INDEX SECONDS`` where ROLE is ``writer`` or
``reader``. A writer alternates hot-path turns (``add``) and distinct facts
(``remember``) under its own user for SECONDS; a reader searches, lists and counts.
Either prints one JSON line at the end: how many calls returned, and every error
seen (``database is locked`` included) — it never stops at the first one.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

from memloci import Memory
from memloci.providers.fake import FakeEmbedder


def main(db: str, role: str, index: int, seconds: float) -> None:
    turns = facts = reads = 0
    errors: list[str] = []
    with Memory(db, embedder=FakeEmbedder()) as memory:
        print("ready", flush=True)
        sys.stdin.readline()  # every process starts at the same moment
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            n += 1
            try:
                if role == "reader":
                    memory.search(f"writer fact number {n % 97}", k=5)
                    memory.list(limit=20)
                    memory.count()
                    reads += 1
                elif n % 2:
                    memory.add(f"turn {n} of writer {index}", user=f"w{index}", session="s")
                    turns += 1
                else:
                    text = f"Writer {index} token x{n}y{index}q keeps fact {n}"
                    result = memory.remember(text, user=f"w{index}", key=f"w{index}_k{n}")
                    facts += result.action == "created"
            except Exception:  # every failure is counted and reported
                errors.append(traceback.format_exc(limit=3))
    print(json.dumps({"turns": turns, "facts": facts, "reads": reads, "errors": errors}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
