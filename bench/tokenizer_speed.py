"""Timing script for memloci's WordPiece tokenizer against the ``tokenizers`` package
(layer: bench). Not a test.

Run: ``python bench/tokenizer_speed.py [--data FILE] [--texts 1000] [--rounds 7]``.
Tokenizes the first ``--texts`` LoCoMo turns as one batch (median of ``--rounds``; memloci's
also with its word cache emptied before each round) and one short query (median of 2,000),
with bge-small-en's ``tokenizer.json``; checks both give the same ids.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from common import data_path, load_conversations
from memloci.providers.bge import _default_folder
from memloci.providers.wordpiece import WordPieceTokenizer

QUERY = "what did Caroline paint last summer?"


def median(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="LoCoMo JSONL (default: ../shared/data/locomo_dev.jsonl)")
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    conversations = load_conversations(data_path(args.data))
    texts = [t["text"] for c in conversations for t in c["turns"]][: args.texts]
    file = _default_folder() / "tokenizer.json"
    start = time.perf_counter()
    mine = WordPieceTokenizer.from_file(file, max_length=256)
    loads = {"memloci wordpiece": time.perf_counter() - start}

    def cold() -> None:
        mine._words.clear()
        mine.encode_batch(texts)

    rows = [
        ("memloci wordpiece", median(lambda: mine.encode_batch(texts), args.rounds)),
        ("memloci wordpiece, no word cached", median(cold, args.rounds)),
    ]
    query = {"memloci wordpiece": median(lambda: mine.encode(QUERY), 2000)}
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("tokenizers is not installed: memloci's figures only")
    else:
        start = time.perf_counter()
        theirs = Tokenizer.from_file(str(file))
        theirs.no_padding()
        theirs.enable_truncation(max_length=256)
        loads["tokenizers"] = time.perf_counter() - start
        rows.append(("tokenizers", median(lambda: theirs.encode_batch(texts), args.rounds)))
        query["tokenizers"] = median(lambda: theirs.encode(QUERY), 2000)
        same = all(
            a.ids == b.ids
            for a, b in zip(mine.encode_batch(texts), theirs.encode_batch(texts), strict=True)
        )
        print(f"same ids on all {len(texts)} texts: {same}")
    print(f"\n| tokenizer | load | {len(texts)} texts (batch) | one query |")
    print("|---|---|---|---|")
    for name, batch in rows:
        load = f"{loads[name] * 1000:.0f} ms" if name in loads else ""
        one = f"{query[name] * 1e6:.0f} µs" if name in query else ""
        print(f"| {name} | {load} | {batch * 1000:.1f} ms | {one} |")


if __name__ == "__main__":
    main()
