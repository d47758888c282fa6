"""One process of the record-race tests (``test_record_races.py``).

``python records_child.py STORE KIND INDEX [FILE]``: opens the store, prints ``ready``, waits
for a line on stdin (so every process starts together), runs the KIND of writes and
prints one JSON line: the outcome of each call (``ok`` or the error's class name).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from memloci import Memory
from memloci.errors import MemlociError
from memloci.providers.fake import FakeEmbedder

ROUNDS = 8  # calls per process for the repeated kinds


def calls(
    memory: Memory, kind: str, index: int, path: str = ""
) -> list[Callable[[], Awaitable[Any]]]:
    service = memory.service
    if kind == "import":  # every process imports the same export into one namespace
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        return [lambda: service.admin.import_lines(lines, "team")]
    if kind == "contact":  # every call starts a new conversation: none may be lost
        return [lambda: service.records.touch_user("u1", new_conversation=True)] * ROUNDS
    if kind == "identifiers":  # each process adds channels of its own to one user
        return [
            lambda j=j: service.records.save_user(
                "u1", identifiers={f"c{index}x{j}": f"{index}.{j}"}
            )
            for j in range(ROUNDS)
        ]
    if kind == "claim":  # every process claims the same channel id for a user of its own
        return [lambda: service.records.save_user(f"user{index}", identifiers={"telegram": "42"})]
    if kind == "merge":  # process 0 merges a into b, process 1 b into a
        src, dst = ("a", "b") if index % 2 == 0 else ("b", "a")
        return [lambda: service.records.merge_users(src, dst)]
    if kind == "entity":  # every process names the same things
        return [lambda j=j: service.records.save_entity(f"Thing {j}") for j in range(ROUNDS)]
    raise SystemExit(f"unknown kind {kind!r}")


def turn(n: int) -> str:
    return f"Message {n} of the chat mentions the word tok{n}zq"


def talk(memory: Memory) -> list[str]:
    """Turns of user ``u`` one after another, until a forget took some, then 20 more."""
    written, after = 0, None
    while written < 5000 and (after is None or written < after + 20):
        memory.add(turn(written), user="u", session="s")
        written += 1
        if after is None and memory.count(user="u") < written:
            after = written  # forgotten meanwhile
    return [f"wrote {written}"]


def forget(memory: Memory) -> list[str]:
    """Forget user ``u`` once some of their turns are stored (while more arrive)."""
    while memory.count(user="u") < 20:
        pass
    return [f"forgot {memory.forget_user('u').memories}"]


def main(location: str, kind: str, index: int, path: str = "") -> None:
    outcomes: list[str] = []
    with Memory(location, embedder=FakeEmbedder()) as memory:
        todo = calls(memory, kind, index, path) if kind not in ("talk", "forget") else []
        print("ready", flush=True)
        sys.stdin.readline()
        if kind in ("talk", "forget"):
            outcomes = talk(memory) if kind == "talk" else forget(memory)
        for call in todo:
            try:
                done = memory._call(call())
                outcomes.append(f"imported {done.nodes}" if kind == "import" else "ok")
            except MemlociError as exc:
                outcomes.append(type(exc).__name__)
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:])
