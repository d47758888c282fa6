"""What the optional cross-encoder reranker (``reranker="minilm-ce"``) gives on the turn
and fact DEV splits, and what it costs per query.

    python bench/rerank_bench.py [--store-dir DIR] [--stride 2] [--weight 0.5]
                                 [--splits turns,facts] [--timing-stride 5]

Reuses ``quick_eval.py``'s stores (ingested once into ``DIR``). For every ``stride``-th
scored question: the top 30 hybrid hits (reranker off), the cross-encoder's relevance
of each (computed once: a candidate's relevance does not depend on N), then recall of
the fused order vs the order :func:`memloci.retrieval.fusion.rerank` makes of the top
N = 10, 20, 30 (the library's own blend, ``--weight``). Latency: on every
``timing-stride``-th of those questions the reranker is timed alone on the top N
candidates, for each N (one onnxruntime thread, as configured by default). The
search itself is not timed here: see ``latency_bench.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import DEFAULT_DATA, table
from memloci.providers.crossencoder import MiniLMCrossEncoder
from memloci.retrieval.fusion import Fused, rerank
from memloci.retrieval.query import document_text
from quick_eval import FACTS, open_split

DEPTHS = (10, 20, 30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--store-dir", default=None)
    ap.add_argument("--splits", default="turns,facts")
    ap.add_argument("--stride", type=int, default=2, help="every n-th scored question")
    ap.add_argument("--timing-stride", type=int, default=5, help="time every n-th of those")
    ap.add_argument("--weight", type=float, default=0.5, help="rerank_weight")
    args = ap.parse_args()
    base = Path(args.store_dir or tempfile.mkdtemp())
    base.mkdir(parents=True, exist_ok=True)
    model = MiniLMCrossEncoder()
    model.load()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for split in args.splits.split(","):
        data = DEFAULT_DATA if split == "turns" else FACTS
        mem, convs = open_split(base / f"{split}.db", data, split == "facts")
        hits_at: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        by_cat: dict[str, dict[str, list[int]]] = defaultdict(dict)
        timings: dict[int, list[float]] = defaultdict(list)
        n = index = 0
        for conv in convs:
            for q in conv["questions"]:
                if q.get("adversarial") or not q.get("evidence"):
                    continue
                index += 1
                if (index - 1) % args.stride:
                    continue
                found = mem.search(q["question"], user=conv["conv_id"], k=max(DEPTHS))
                texts = [
                    document_text(
                        h.memory.content, h.memory.speaker, h.memory.key, h.memory.subject
                    )
                    for h in found
                ]
                relevance = [float(p) for p in model.score(q["question"], texts)]
                if n % args.timing_stride == 0:
                    for depth in DEPTHS:
                        started = time.perf_counter()
                        model.score(q["question"], texts[:depth])
                        timings[depth].append((time.perf_counter() - started) * 1000)
                n += 1
                evidence = set(q["evidence"])
                turn = {h.memory.id: h.memory.metadata.get("turn") for h in found}
                orders = {"fused": [h.memory.id for h in found]}
                for depth in DEPTHS:
                    head = [
                        Fused(h.memory.id, h.score, {"fused": i + 1})
                        for i, h in enumerate(found[:depth])
                    ]
                    reordered = rerank(head, relevance[: len(head)], args.weight)
                    orders[f"N={depth}"] = [f.id for f in reordered] + orders["fused"][depth:]
                for name, order in orders.items():
                    ranked = [turn[i] for i in order]
                    for cut in (1, 5, 10):
                        hits_at[name][f"any@{cut}"] += bool(set(ranked[:cut]) & evidence)
                    cell = by_cat[name].setdefault(str(q.get("category")), [0, 0])
                    cell[0] += bool(set(ranked[:10]) & evidence)
                    cell[1] += 1
        mem.close()
        print(f"\n{split}: {n} questions (every {args.stride}th), rerank_weight {args.weight}\n")
        rows = [
            [name if name == "fused" else f"reranked top {name[2:]}"]
            + [f"{hits_at[name][f'any@{c}'] / n:.3f}" for c in (1, 5, 10)]
            + [f"{a / b:.3f}" for _, (a, b) in sorted(by_cat[name].items())]
            for name in hits_at
        ]
        cats = [f"{c} ({b})" for c, (_, b) in sorted(by_cat["fused"].items())]
        print(table(rows, ["order", "any@1", "any@5", "any@10", *cats]))
        print(f"\nreranker alone, per query ({len(timings[DEPTHS[0]])} queries timed):\n")
        print(
            table(
                [
                    [
                        str(d),
                        f"{statistics.median(timings[d]):.0f}",
                        f"{sorted(timings[d])[int(0.95 * (len(timings[d]) - 1))]:.0f}",
                    ]
                    for d in DEPTHS
                ],
                ["N", "p50 ms", "p95 ms"],
            )
        )
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
