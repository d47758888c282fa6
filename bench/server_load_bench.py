"""Several ``memloci serve`` processes on one PostgreSQL database, under load.

    python bench/server_load_bench.py [--pg-url URL] [--servers 1,2,4] [--clients 8]
                                      [--seconds 60] [--embedder local] [--json OUT]

Not a test. For each server count N, in a fresh schema of the database of --pg-url
(default ``$MEMLOCI_TEST_DATABASE_URL``): N real ``memloci serve`` subprocesses (the
real embedder unless --embedder says otherwise, maintenance off), and --clients client
threads, client i talking to server i mod N over HTTP, each running a mix of operations
for --seconds: add a conversation turn (``POST /api/v1/turns/``, 40%), hybrid search
(``POST /api/v1/search``, 30%), context (``POST /api/v1/context``, 15%) and remember a
fact (``POST /api/v1/facts/``, 15%), over 20 users. Reported per N: throughput, p50/p95
per operation, errors (a non-2xx reply or a failed request), and, after the run, how
many acknowledged writes (the ids of the 201 replies) a fresh store opened on the
database reads back — every one must be there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import table
from latency_bench import CONTEXT_PROMPTS, QUESTIONS, _fill, percentile, sentence_pool
from memloci.service.compose import open_store

MIX = (("add", 0.40), ("search", 0.30), ("context", 0.15), ("remember", 0.15))
USERS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(url: str, embedder: str) -> Iterator[str]:
    """A ``memloci serve --db URL`` subprocess; yields its base URL once healthy."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    cmd = [
        sys.executable,
        "-m",
        "memloci.interfaces.cli",
        "serve",
        "--embedder",
        embedder,
        "--port",
        str(port),
        "--no-maintenance",
        "--db",
        url,
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "exited")
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start in 300 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


class Client(threading.Thread):
    """One client: a loop of mixed operations against one server until ``until``."""

    def __init__(self, n: int, base: str, until: float, pool: list[str]) -> None:
        super().__init__(daemon=True)
        self.base, self.until, self.pool = base, until, pool
        self.rng = random.Random(n)
        self.n = n
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.acked: list[str] = []
        self.first_error = ""

    def request(self, op: str) -> tuple[str, dict[str, Any]]:
        user = f"user-{self.rng.randrange(USERS):02d}"
        if op == "add":
            text = f"{self.rng.choice(self.pool)} (note {self.n}-{self.rng.randrange(10**9)})"
            body = {
                "messages": [{"role": "user", "content": text}],
                "user": user,
                "session": f"s-{user}-{self.n}",
            }
            return "/api/v1/turns/", body
        if op == "search":
            return "/api/v1/search", {
                "query": _fill(self.rng, self.rng.choice(QUESTIONS)),
                "user": user,
                "k": 10,
            }
        if op == "context":
            prompt = _fill(self.rng, self.rng.choice(CONTEXT_PROMPTS))
            return "/api/v1/context", {"prompt": prompt, "user": user}
        fact = f"{user} prefers option {self.rng.randrange(10**9)} for the weekly report"
        return "/api/v1/facts/", {"content": fact, "user": user}

    def run(self) -> None:
        ops, weights = zip(*MIX, strict=True)
        with httpx.Client(base_url=self.base, timeout=60) as http:
            while time.monotonic() < self.until:
                op = self.rng.choices(ops, weights)[0]
                path, body = self.request(op)
                started = time.perf_counter()
                try:
                    reply = http.post(path, json=body)
                except httpx.HTTPError as exc:
                    self.errors[op] += 1
                    self.first_error = self.first_error or f"{op}: {exc!r}"
                    continue
                self.ms[op].append((time.perf_counter() - started) * 1000)
                if reply.status_code >= 300:
                    self.errors[op] += 1
                    self.first_error = (
                        self.first_error or f"{op}: {reply.status_code} {reply.text[:200]}"
                    )
                elif op == "add":
                    self.acked += [m["id"] for m in reply.json()]
                elif op == "remember":
                    self.acked.append(reply.json()["memory"]["id"])


def fresh_schema(url: str) -> str:
    import psycopg

    name = f"load_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return name


def drop_schema(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def run(args: argparse.Namespace, servers: int, pool: list[str]) -> dict[str, Any]:
    schema = fresh_schema(args.pg_url)
    url = f"{args.pg_url}{'&' if '?' in args.pg_url else '?'}schema={schema}"
    res: dict[str, Any] = {"servers": servers, "clients": args.clients, "seconds": args.seconds}
    try:
        with ExitStack() as stack:
            t = time.perf_counter()
            bases = [stack.enter_context(server(url, args.embedder)) for _ in range(servers)]
            res["startup_s"] = time.perf_counter() - t
            until = time.monotonic() + args.seconds
            clients = [Client(i, bases[i % servers], until, pool) for i in range(args.clients)]
            started = time.perf_counter()
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            elapsed = time.perf_counter() - started
        ms: dict[str, list[float]] = defaultdict(list)
        errors: dict[str, int] = defaultdict(int)
        for c in clients:
            for op, values in c.ms.items():
                ms[op] += values
            for op, count in c.errors.items():
                errors[op] += count
        acked = [i for c in clients for i in c.acked]
        store = open_store(url)  # every acknowledged write, read back by another process
        try:
            readable = sum(store.memories.id_exists(i) for i in acked)
        finally:
            store.close()
        res |= {
            "ops_per_s": sum(len(v) for v in ms.values()) / elapsed,
            "ops": {
                op: {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95)}
                for op, v in ms.items()
            },
            "errors": dict(errors),
            "first_error": next((c.first_error for c in clients if c.first_error), ""),
            "acked_writes": len(acked),
            "readable_writes": readable,
        }
    finally:
        drop_schema(args.pg_url, schema)
    print(json.dumps(res), file=sys.stderr, flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", default=os.environ.get("MEMLOCI_TEST_DATABASE_URL", ""))
    ap.add_argument("--servers", default="1,2,4")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not args.pg_url:
        print("no --pg-url / MEMLOCI_TEST_DATABASE_URL", file=sys.stderr)
        return 2
    pool = sentence_pool(7, 500)
    results = [run(args, int(n), pool) for n in args.servers.split(",")]
    rows = []
    for r in results:
        cells = [
            f"{r['ops'][op]['p50']:.0f} / {r['ops'][op]['p95']:.0f}" if op in r["ops"] else "-"
            for op, _ in MIX
        ]
        rows.append(
            [
                r["servers"],
                r["clients"],
                f"{r['ops_per_s']:.1f}",
                *cells,
                sum(r["errors"].values()),
                f"{r['readable_writes']} / {r['acked_writes']}",
            ]
        )
    print(
        table(
            rows,
            [
                "servers",
                "clients",
                "ops/s",
                *(f"{op} p50/p95 ms" for op, _ in MIX),
                "errors",
                "acked writes readable",
            ],
        )
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
