"""Touch benchmark: what counting a read of 10 search hits costs, in ``node_access``
against the old in-row update of ``nodes``.

    python bench/touch_bench.py [--n 20000] [--backends sqlite,postgres] [--pg-url URL]
                                [--rounds 300] [--hot 1000] [--pool 500] [--json OUT]

Not a test. Per backend, a fresh store of N conversation turns with real MiniLM vectors
(scale_bench's load: PostgreSQL with its HNSW index built after the load). Then
--rounds calls of each path, alternating, each on 10 ids drawn from its own --hot
memories (disjoint sets, so a memory is read a few times, as search hits are):

* new: ``MemoryStore.touch`` (the counts and the reinforced confidence in ``node_access``);
* old: the statements ``touch`` ran before, on the same store: read ``access_count`` and
  ``confidence`` of the hits, then ``UPDATE nodes SET access_count, last_accessed,
  confidence`` per hit (the whole row written again).

Figures per path: call time p50/p95; PostgreSQL: WAL bytes per call
(``pg_current_wal_lsn()`` before and after), and the updates ``pg_stat_user_tables``
counted on ``nodes`` (all / HOT: a non-HOT update adds an entry to every index of the
table, the HNSW graph included) and on ``node_access``; SQLite: WAL bytes per call (the
WAL is checkpointed and truncated before each call, so its size after is what the call
wrote).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import table
from latency_bench import sentence_pool, summary
from memloci.models import short_id
from memloci.providers.base import load_embedder
from memloci.rules import reinforced
from memloci.service.compose import open_store
from memloci.storage.base import Store
from memloci.storage.sqlfilter import ts
from scale_bench import embed_pool, load

HITS = 10


def old_touch(store: Any, namespace: str, ids: Sequence[str], now: datetime) -> None:
    """The touch of memloci ≤ this change: the counts written into the ``nodes`` row."""
    d = store.dialect
    test, params = d.any("id", ids)
    lock = f" ORDER BY {d.rowid} FOR UPDATE" if d.row_locks else ""
    with store.db.tx() as c:
        rows = c.execute(
            d.q(
                f"SELECT {d.rowid}, access_count, confidence FROM nodes"
                f" WHERE {d.unindexed('namespace')} = ? AND {test}{lock}"
            ),
            [namespace, *params],
        ).fetchall()
        d.many(
            c,
            "UPDATE nodes SET access_count = ?, last_accessed = ?, confidence = ?"
            f" WHERE {d.rowid} = ?",
            [(n + 1, ts(now), reinforced(conf, n), rowid) for rowid, n, conf in rows],
        )


class PgProbe:
    """WAL position and table update counters of one PostgreSQL schema."""

    def __init__(self, url: str, schema: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)
        self.schema = schema

    def lsn(self) -> str:
        return str(self.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])

    def wal_since(self, lsn: str) -> int:
        sql = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)"
        return int(self.conn.execute(sql, (lsn,)).fetchone()[0])

    def counters(self) -> dict[str, tuple[int, int, int]]:
        """Per table: (inserts, updates, HOT updates), once the writers' stats are in."""
        time.sleep(11)  # an idle backend flushes its counters within 10 s (PGSTAT_IDLE_INTERVAL)
        rows = self.conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE schemaname = %s AND relname IN ('nodes', 'node_access')",
            (self.schema,),
        ).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}


def wal_bytes(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0


def run(
    backend: str, args: argparse.Namespace, emb: Any, vecs: dict[str, Any]
) -> list[dict[str, Any]]:
    schema = f"touch_{short_id().lower()}"
    if backend == "sqlite":
        location = str(Path(tempfile.mkdtemp(prefix="memloci-touch-")) / "touch.db")
    else:
        location = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    store: Store = open_store(location)
    store.bind_embedder(emb.model_id, emb.dimension)
    bulk = getattr(store, "bulk_load", None)
    t = time.perf_counter()
    if bulk:
        with bulk():
            _, _, ids, _ = load(store, args.n, list(vecs), vecs, args.seed)
    else:
        _, _, ids, _ = load(store, args.n, list(vecs), vecs, args.seed)
    print(f"[{backend}] loaded {args.n} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    rng = random.Random(args.seed)
    picked = rng.sample(ids, 2 * args.hot)
    hot = {"old": picked[: args.hot], "new": picked[args.hot :]}
    paths: dict[str, Callable[[list[str], datetime], None]] = {
        "old": lambda hits, now: old_touch(store, "default", hits, now),
        "new": lambda hits, now: store.memories.touch("default", hits, now=now),
    }
    probe = PgProbe(args.pg_url, schema) if backend == "postgres" else None
    wal_file = location + "-wal"
    if backend == "sqlite":
        import sqlite3

        side = sqlite3.connect(location, isolation_level=None)
    ms: dict[str, list[float]] = {"old": [], "new": []}
    wal: dict[str, list[int]] = {"old": [], "new": []}
    before = probe.counters() if probe else {}
    counts: dict[str, dict[str, tuple[int, ...]]] = {}
    for path in ("old", "new"):  # one path at a time: the counters are per table
        for _ in range(args.rounds):
            hits = rng.sample(hot[path], HITS)
            now = datetime.now(UTC)
            if probe:
                lsn = probe.lsn()
            else:
                side.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            t = time.perf_counter()
            paths[path](hits, now)
            ms[path].append((time.perf_counter() - t) * 1000)
            wal[path].append(probe.wal_since(lsn) if probe else wal_bytes(wal_file))
        if probe:
            after = probe.counters()
            counts[path] = {
                k: tuple(a - b for a, b in zip(after[k], before.get(k, (0, 0, 0)), strict=True))
                for k in ("nodes", "node_access")
            }
            before = after
    store.close()
    out = []
    for path in ("old", "new"):
        res: dict[str, Any] = {"backend": backend, "n": args.n, "path": path}
        res |= {f"ms_{k}": v for k, v in summary(ms[path]).items() if k in ("p50", "p95")}
        res["wal_bytes_per_call"] = sum(wal[path]) / len(wal[path])
        if probe:
            res["nodes_ins_upd_hot"] = counts[path]["nodes"]
            res["node_access_ins_upd_hot"] = counts[path]["node_access"]
        out.append(res)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--pg-url", default=os.environ.get("MEMLOCI_TEST_DATABASE_URL", ""))
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--hot", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    emb = load_embedder("local")
    pool = sentence_pool(args.seed, args.pool)
    matrix = embed_pool(emb, pool, None)
    vecs = {text: matrix[i] for i, text in enumerate(pool)}
    results = []
    for backend in args.backends.split(","):
        results += run(backend, args, emb, vecs)
    rows = [
        [
            r["backend"],
            r["n"],
            r["path"],
            f"{r['ms_p50']:.2f}",
            f"{r['ms_p95']:.2f}",
            f"{r['wal_bytes_per_call']:,.0f}",
            "/".join(map(str, r.get("nodes_ins_upd_hot", ()))) or "–",
            "/".join(map(str, r.get("node_access_ins_upd_hot", ()))) or "–",
        ]
        for r in results
    ]
    header = [
        "backend",
        "memories",
        "path",
        "p50 ms",
        "p95 ms",
        "WAL B/call",
        "nodes ins/upd/HOT",
        "node_access ins/upd/HOT",
    ]
    print(table(rows, header))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
