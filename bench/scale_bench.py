"""Scale benchmark: N memories in each backend (SQLite, PostgreSQL + pgvector).

    python bench/scale_bench.py [--n 100000] [--backends sqlite,postgres] [--pg-url URL]
                                [--pool 2000] [--queries 100] [--json OUT]
                                [--pool-cache DIR] [--schema LOADED_SCHEMA]

Not a test. Per backend, in a fresh store (a temp SQLite file; a fresh schema in the
PostgreSQL database of --pg-url, default ``$MEMLOCI_TEST_DATABASE_URL``):

* load: N conversation turns (latency_bench's generator: realistic turn lengths, N/20
  sessions of 20 turns over 50 users) written through the Store protocol in batches of
  1,000 (``insert_nodes`` + ``save_embeddings``, one transaction each). Vectors are real:
  a pool of --pool distinct sentences embedded once with the bundled MiniLM model, each
  use perturbed slightly (gaussian noise σ=0.01, renormalised) — never random vectors, on
  which HNSW recall is meaningless.
* index: PostgreSQL: the load runs inside ``PostgresStore.bulk_load()`` (HNSW index
  dropped, built once at the end with --pg-work-mem): build time and index size; SQLite:
  the first vector search after reopening (the vector cache load), and the file size.
* hot-path add: ``Memory.add(turn, user, session)`` on the loaded store (real model).
* hybrid search: ``Memory.search(question, user=…, k=10)``, query embedding included.
* context: ``Memory.context(prompt, user=…)``.
* recall@10: ``SearchStore.vector_search`` against an exact numpy scan over the same vectors
  with the same filter — one user's memories, and the whole namespace unfiltered — as
  exact id sets ("ids") and counting a hit within 1e-3 cosine of the exact 10th ("ties":
  near-duplicate turns score alike, which tied copy comes back is arbitrary).
* peak RSS of this (the memloci) process, both backends' stores open in it;
  PostgreSQL's own memory is not included.

The backends are loaded one after the other, then measured together: each question,
prompt and add runs on every backend back to back (the order turning), so on a machine
shared with other jobs both see the same load and their ratio holds.

``--schema`` re-measures a PostgreSQL schema an earlier run loaded (no load; its vectors
are read back for the recall check); ``--pool-cache`` keeps embedded pools as .npy files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import table
from latency_bench import (
    CONTEXT_PROMPTS,
    QUESTIONS,
    _fill,
    sentence_pool,
    sessions,
    summary,
    timed,
)
from memloci import Memory
from memloci.models import MemoryNode, NodeType, Scope, short_id
from memloci.providers.base import load_embedder
from memloci.service.compose import open_store
from memloci.storage.base import NodeFilter, PendingEmbedding, Store
from memloci.storage.location import describe
from memloci.storage.rows import content_hash

BATCH = 1000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(store: Store, n: int, pool: list[str], vecs: dict[str, np.ndarray], seed: int
         ) -> tuple[float, np.ndarray, list[str], list[str]]:  # fmt: skip
    """Write N turns; returns (seconds, vectors, ids, users) in load order."""
    rng = np.random.default_rng(seed)
    all_vecs: list[np.ndarray] = []
    ids: list[str] = []
    users: list[str] = []
    nodes: list[MemoryNode] = []
    started = time.perf_counter()

    def flush() -> None:
        if not nodes:
            return
        mat = np.stack([vecs[n.content] for n in nodes])
        mat = mat + rng.normal(0, 0.01, mat.shape).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        items = [PendingEmbedding(n.id, content_hash(n.content), n.content, n.speaker, None, None)
                 for n in nodes]  # fmt: skip
        with store.batch():
            store.memories.insert_nodes(nodes)
            store.search.save_embeddings(items, mat.astype(np.float32))
        all_vecs.append(mat.astype(np.float32))
        nodes.clear()

    for sess in sessions(n, pool, seed):
        for i, turn in enumerate(sess["turns"]):
            when = sess["when"] + timedelta(minutes=i)
            node = MemoryNode(
                id=short_id(), type=NodeType.EPISODIC, content=turn["content"],
                scope=Scope.USER, user=sess["user"], session=sess["session"],
                speaker=turn["name"], event_time=when, created_at=when, updated_at=when,
                valid_from=when, category="conversation",
            )  # fmt: skip
            nodes.append(node)
            ids.append(node.id)
            users.append(sess["user"])
            if len(nodes) >= BATCH:
                flush()
    flush()
    return time.perf_counter() - started, np.concatenate(all_vecs), ids, users


def pg_index(url: str, schema: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        size = conn.execute(
            "SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace s"
            " ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relname = 'nodes_embedding'",
            (schema,),
        ).fetchone()
        bits = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace s ON s.oid = c.relnamespace"
            " WHERE s.nspname = %s AND c.relname = 'node_bits'",
            (schema,),
        ).fetchone()
        out = {} if size is None else {"index_mb": size[0] / 2**20}
        return out | ({"bits_mb": float(bits[0]) / 2**20} if bits else {})


def read_back(url: str, schema: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(vectors, ids, users) of a loaded schema, in load order (for recall)."""
    import psycopg
    from pgvector.psycopg import register_vector

    vecs: list[np.ndarray] = []
    ids: list[str] = []
    users: list[str] = []
    with psycopg.connect(url.split("?")[0]) as conn:
        register_vector(conn)
        cur = conn.cursor(name="readback", binary=True)
        cur.execute(
            f'SELECT id, user_id, embedding FROM "{schema}".nodes'
            " WHERE embedding IS NOT NULL ORDER BY seq"
        )
        while rows := cur.fetchmany(20_000):
            ids += [r[0] for r in rows]
            users += [r[1] for r in rows]
            vecs.append(np.stack([np.asarray(r[2].to_numpy(), np.float32) for r in rows]))
    return np.concatenate(vecs), ids, users


def embed_pool(emb: Any, pool: list[str], cache: Path | None) -> np.ndarray:
    """The pool's vectors, from ``cache`` (a .npy file per seed and size) when present."""
    if cache is not None and cache.exists():
        matrix = np.load(cache)
        if matrix.shape == (len(pool), emb.dimension):
            return matrix
    t = time.perf_counter()
    matrix = emb.embed(pool)
    print(f"embedded a pool of {len(pool)} sentences in {time.perf_counter() - t:.1f} s",
          file=sys.stderr)  # fmt: skip
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, matrix)
    return matrix


TIE = 1e-3  # a hit within this cosine of the exact 10th counts (ann-benchmarks' epsilon)


def recall(store: Store, vecs: np.ndarray, ids: list[str], users: list[str], emb: Any,
           rng: random.Random, queries: int) -> dict[str, float]:  # fmt: skip
    """recall@10 of ``SearchStore.vector_search`` against an exact scan over the same vectors
    with the same filter (one user's memories; and, unfiltered, the whole namespace).
    ``ids``: the exact top-10 id set; ``ties``: a returned hit also counts when its true
    cosine is within TIE of the exact 10th (near-duplicate turns score alike, and which
    of the tied copies comes back is arbitrary)."""
    owner = np.array(users)
    where = {node_id: i for i, node_id in enumerate(ids)}
    out = {"user_ids": 0.0, "user_ties": 0.0, "all_ids": 0.0, "all_ties": 0.0}
    for q in range(queries):
        user = f"user-{q % 50:02d}"
        qv = emb.embed_query(_fill(rng, rng.choice(QUESTIONS)))
        for name, mask, flt in (
            ("user", np.flatnonzero(owner == user), NodeFilter(user=user)),
            ("all", np.arange(len(ids)), NodeFilter()),
        ):
            scores = vecs[mask] @ qv
            top = np.argsort(-scores)[:10]
            exact = {ids[mask[i]] for i in top}
            got = [i for i, _ in store.search.vector_search(flt, qv, 10)]
            out[f"{name}_ids"] += len(exact & set(got)) / 10
            floor = scores[top[-1]] - TIE
            out[f"{name}_ties"] += sum(float(vecs[where[i]] @ qv) >= floor for i in got) / 10
    return {k: v / queries for k, v in out.items()}


def prepare(
    backend: str, args: argparse.Namespace, pool: list[str], vecs: dict[str, np.ndarray], emb: Any
) -> dict[str, Any]:
    """Load (or reuse) one backend's store; returns its figures so far plus, under
    private keys, where it lives and the vectors the recall check compares against."""
    res: dict[str, Any] = {"backend": backend, "n": args.n}
    schema = f"scale_{short_id().lower()}"
    if backend == "sqlite":
        location = str(Path(tempfile.mkdtemp(prefix="memloci-scale-")) / "scale.db")
    else:
        location = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    if args.schema and backend == "postgres":  # measure a store an earlier run loaded
        schema = args.schema
        location = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    res["location"] = describe(location)
    store = open_store(location)
    store.bind_embedder(emb.model_id, emb.dimension)
    if args.schema and backend == "postgres":
        t = time.perf_counter()
        all_vecs, ids, users = read_back(args.pg_url, schema)
        res["reused_schema"], res["n"] = schema, len(ids)
        print(f"[{backend}] read back {len(ids)} rows of {schema} in"
              f" {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)  # fmt: skip
    else:
        bulk = getattr(store, "bulk_load", None)  # PostgreSQL: HNSW built once, after the load
        with bulk(work_mem=args.pg_work_mem) if bulk else contextlib.nullcontext():
            res["load_s"], all_vecs, ids, users = load(store, args.n, pool, vecs, args.seed)
            print(f"[{backend}] loaded {args.n} into {schema} in {res['load_s']:.1f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
            t = time.perf_counter()
        if bulk:
            res["index_build_s"] = time.perf_counter() - t
    store.close()
    if backend == "postgres":
        res.update(pg_index(args.pg_url, schema))
    else:
        res["file_mb"] = os.path.getsize(location) / 2**20
    return res | {"_location": location, "_vecs": all_vecs, "_ids": ids, "_users": users}


def measure(runs: list[dict[str, Any]], args: argparse.Namespace, emb: Any) -> None:
    """Time the hot paths of every prepared backend in one loop: each question (prompt,
    add) runs on every backend back to back, the order turning each time, so a machine
    shared with other jobs slows both alike and the ratio between them holds."""
    with contextlib.ExitStack() as stack:
        mems = []
        for r in runs:
            store = stack.enter_context(contextlib.closing(open_store(r["_location"])))
            m = stack.enter_context(
                Memory(store=store, embedder=emb, consolidate_on_session_switch=False)
            )
            r["first_search_ms"] = timed(lambda m=m: m.search("hello there", user="user-00", k=10))
            mems.append(m)
        rng = random.Random(args.seed)
        timings: list[dict[str, list[float]]] = [defaultdict(list) for _ in runs]

        def each(i: int, what: str, call: Any) -> None:
            for j in [(i + k) % len(runs) for k in range(len(runs))]:
                timings[j][what].append(timed(partial(call, mems[j])))

        for i in range(args.queries):
            user, question = f"user-{i % 50:02d}", _fill(rng, rng.choice(QUESTIONS))
            each(i, "search", lambda m, q=question, u=user: m.search(q, user=u, k=10))
        for i in range(max(20, args.queries // 2)):
            user, prompt = f"user-{i % 50:02d}", _fill(rng, rng.choice(CONTEXT_PROMPTS))
            each(i, "context", lambda m, p=prompt, u=user: m.context(p, user=u))
        for r, m in zip(runs, mems, strict=True):
            store = m.service.store
            r["recall_at_10"] = recall(
                store,
                r["_vecs"],
                r["_ids"],
                r["_users"],
                emb,
                random.Random(args.seed),
                args.recall_queries,
            )
        for i in range(args.adds):
            text, user = f"A new note number {i} about the weekend plans", f"user-{i % 50:02d}"
            each(i, "add", lambda m, t=text, u=user: m.add(t, user=u, session="hot-session"))
        for m in mems:
            m.flush(120)
    for r, t in zip(runs, timings, strict=True):
        for what, values in t.items():
            r[what] = summary(values)
        r["peak_rss_mb"] = peak_rss_mb()
        for key in [k for k in r if k.startswith("_")]:
            del r[key]
        print(f"[{r['backend']}] {json.dumps(r, default=str)}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--pg-url", default=os.environ.get("MEMLOCI_TEST_DATABASE_URL", ""))
    ap.add_argument("--pool", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--adds", type=int, default=200)
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pg-work-mem", default="1GB", help="maintenance_work_mem of the HNSW build")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--pool-cache", type=Path, help="folder keeping embedded pools (.npy)")
    ap.add_argument("--schema", help="PostgreSQL: measure this already loaded schema (no load)")
    args = ap.parse_args()
    emb = load_embedder("local")
    pool = sentence_pool(args.seed, args.pool)
    cache = args.pool_cache / f"pool-{args.seed}-{args.pool}.npy" if args.pool_cache else None
    matrix = embed_pool(emb, pool, cache)
    vecs = {text: matrix[i] for i, text in enumerate(pool)}
    results = []
    for backend in args.backends.split(","):
        if backend == "postgres" and not args.pg_url:
            print("postgres: no --pg-url / MEMLOCI_TEST_DATABASE_URL, skipped", file=sys.stderr)
            continue
        results.append(prepare(backend, args, pool, vecs, emb))
    measure(results, args, emb)
    rows = []
    for r in results:
        index = (
            f"{r.get('index_build_s', float('nan')):.1f} s, {r['index_mb']:.0f} MB"
            if "index_mb" in r
            else f"cache load {r['first_search_ms']:.0f} ms, file {r['file_mb']:.0f} MB"
        )
        rows.append([
            r["backend"], f"{r['n']:,}",
            f"{r['load_s']:.0f} s" if "load_s" in r else "reused", index,
            f"{r['add']['p50']:.1f} / {r['add']['p95']:.1f}",
            f"{r['search']['p50']:.1f} / {r['search']['p95']:.1f}",
            f"{r['context']['p95']:.1f}", f"{r['peak_rss_mb']:.0f} MB",
            f"{r['recall_at_10']['user_ids']:.3f} / {r['recall_at_10']['user_ties']:.3f}",
            f"{r['recall_at_10']['all_ids']:.3f} / {r['recall_at_10']['all_ties']:.3f}",
        ])  # fmt: skip
    print(table(rows, ["backend", "N", "load", "index build / size", "add p50/p95 ms",
                       "hybrid search p50/p95 ms", "context p95 ms", "peak RSS",
                       "recall@10 user (ids / ties)", "recall@10 all (ids / ties)"]))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
