"""A writer that the crash trials kill with SIGKILL at a random point.

``python crash_child.py DB LOG SEED`` opens ``DB`` with the SDK and writes forever:
hot-path turns (``add``), facts (``remember``), in-place edits (``update``) and
import batches. Before each call it appends an ``intent`` line to ``LOG``; after the
call returns it appends an ``ack`` line. Lines go out with one unbuffered
``os.write`` on an ``O_APPEND`` descriptor, so a line is either whole in the file or
absent — and an ``ack`` line only exists for a call that returned.

Line format (JSON): ``{"op", "phase": "intent"|"ack", "id"|"ids", "content"}``.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import sys
from typing import Any

from memloci import Memory
from memloci.models import MemoryNode, NodeType, utcnow
from memloci.providers.fake import FakeEmbedder

BATCH = 12


def word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4))


def sentence(rng: random.Random, what: str) -> str:
    return f"{what} {word(rng)} keeps the {word(rng)} {word(rng)} beside {word(rng)}"


def new_id(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(rng.choice(alphabet) for _ in range(8))


def import_lines(ids: list[str], texts: list[str]) -> list[str]:
    header = {"kind": "header", "format": "memloci", "version": 1, "namespace": "crash"}
    lines, now = [json.dumps(header)], utcnow()
    for mid, text in zip(ids, texts, strict=True):
        node = MemoryNode(
            id=mid, type=NodeType.SEMANTIC, content=text, user="importer",
            event_time=now, created_at=now, updated_at=now, valid_from=now,
        )  # fmt: skip
        lines.append(json.dumps({"kind": "node", "node": node.model_dump(mode="json")}))
    return lines


def main(db: str, log: str, seed: int) -> None:
    rng = random.Random(seed)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def note(**line: Any) -> None:
        os.write(fd, (json.dumps(line) + "\n").encode())

    batch_file = f"{log}.batch.jsonl"
    mine: list[str] = []  # facts this child created, candidates for update
    with Memory(db, embedder=FakeEmbedder()) as memory:
        note(op="ready", phase="ack")
        session = f"s{secrets.token_hex(4)}"
        while True:
            roll = rng.random()
            if roll < 0.4:
                text = sentence(rng, "Turn")
                note(op="add", phase="intent", content=text)
                node = memory.add(text, user="crash", session=session)
                assert isinstance(node, MemoryNode)
                note(op="add", phase="ack", id=node.id, content=text)
            elif roll < 0.7 or not mine:
                text = sentence(rng, "Fact")
                note(op="remember", phase="intent", content=text)
                result = memory.remember(text, user="crash")
                if result.action == "created":
                    mine.append(result.memory.id)
                note(op="remember", phase="ack", id=result.memory.id, content=text,
                     action=result.action)  # fmt: skip
            elif roll < 0.9:
                mid, text = rng.choice(mine), sentence(rng, "Edited")
                note(op="update", phase="intent", id=mid, content=text)
                memory.update(mid, text)
                note(op="update", phase="ack", id=mid, content=text)
            else:
                ids = [new_id(rng) for _ in range(BATCH)]
                texts = [sentence(rng, "Imported") for _ in range(BATCH)]
                note(op="import", phase="intent", ids=ids)
                with open(batch_file, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(import_lines(ids, texts)) + "\n")
                report = memory.import_file(batch_file)
                note(op="import", phase="ack", ids=ids, nodes=report.nodes)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
