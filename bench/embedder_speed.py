"""Timing script for the bundled local embedder (layer: bench). Not a test.

Run: ``python bench/embedder_speed.py [--batch-size 32] [--threads N] [--sentences 1024]``.
Prints model load time, single-query latency (p50/p95 over 200 distinct queries, so no
cache hits) and bulk throughput (sentences of 10-40 words).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from memloci.providers.local import LocalMiniLMEmbedder

VOCABULARY = (
    "the a my our user project memory meeting agent server database query vector note "
    "deploy release bug fix review team dog puppy coffee morning evening weekend travel "
    "paris berlin tokyo budget invoice client design api latency cache index search "
    "embedding model python rust postgres sqlite backup schedule reminder birthday gift "
    "prefers likes dislikes wants asked said decided moved changed started finished "
    "quickly slowly yesterday tomorrow today always never often because although while"
)
WORDS = tuple(VOCABULARY.split())


def sentences(count: int, low: int, high: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
        out.append(f"{' '.join(words)} #{i}")
    return out


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    embedder = LocalMiniLMEmbedder(batch_size=args.batch_size, threads=args.threads)
    start = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - start

    embedder.embed_query("warm up the caches")
    latencies = []
    for query in sentences(args.queries, 4, 14, seed=1):
        start = time.perf_counter()
        embedder.embed_query(query)
        latencies.append((time.perf_counter() - start) * 1000)

    rows = [
        ("model load", f"{load_s * 1000:.0f} ms"),
        ("query p50 (4-14 words)", f"{statistics.median(latencies):.2f} ms"),
        ("query p95 (4-14 words)", f"{percentile(latencies, 95):.2f} ms"),
    ]
    embedder.embed(sentences(64, 10, 40, seed=3))  # warm up the allocator and threads
    for low, high in ((10, 40), (12, 16)):
        docs = sentences(args.sentences, low, high, seed=low)
        start = time.perf_counter()
        embedder.embed(docs)
        rate = len(docs) / (time.perf_counter() - start)
        rows.append((f"bulk ({len(docs)} sentences, {low}-{high} words)", f"{rate:.0f} sent/s"))
    rows.append(("load average (1 min) at the end", f"{os.getloadavg()[0]:.2f}"))
    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    print(f"{'-' * width}  -----")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
