"""Two real ``memloci serve`` processes on one PostgreSQL database: a write through one
is found through the other at once by full text and, once embedded, by meaning; the
maintenance lock is shared, so a run held elsewhere keeps both servers out.

Needs ``MEMLOCI_TEST_DATABASE_URL`` (skipped locally without it, never under CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
import pytest
from rest_server import free_port

from memloci.models import short_id, utcnow
from memloci.service.compose import open_store

LOCK = "maintenance"


def pg_url() -> str:
    url = os.environ.get("MEMLOCI_TEST_DATABASE_URL", "")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI needs MEMLOCI_TEST_DATABASE_URL (scripts/pg-test-env.sh sets it)")
        pytest.skip("postgres: set MEMLOCI_TEST_DATABASE_URL to run two servers on one database")
    return f"{url}{'&' if '?' in url else '?'}schema=two_{short_id().lower()}"


@contextmanager
def serve(url: str) -> Iterator[str]:
    """A real ``memloci serve --db URL`` subprocess; yields its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    cmd = [sys.executable, "-m", "memloci.interfaces.cli", "serve", "--embedder", "fake",
           "--port", str(port), "--no-maintenance", "--db", url]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        password = urlsplit(url).password
        assert not password or password not in out.decode()  # never the password


def found(base: str, query: str, recipe: str) -> list[str]:
    body = {"query": query, "user": "sam", "recipe": recipe, "k": 5}
    reply = httpx.post(f"{base}/api/v1/search", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    return [hit["memory"]["content"] for hit in reply.json()["hits"]]


def test_two_servers_share_one_database() -> None:
    url = pg_url()
    with ExitStack() as stack:
        a = stack.enter_context(serve(url))
        b = stack.enter_context(serve(url))
        for base in (a, b):  # warm both (vector caches, if any, are loaded now)
            assert found(base, "anything", "hybrid") == []
        text = "The quarterly budget review moved to Thursday afternoon"
        turns = {"messages": [{"role": "user", "content": text}], "user": "sam",
                 "session": "s1"}  # fmt: skip
        assert httpx.post(f"{a}/api/v1/turns/", json=turns, timeout=30).status_code == 201
        assert found(b, "quarterly budget", "fulltext") == [text]  # at once, by full text
        deadline = time.monotonic() + 60  # the writer's background worker embeds it
        while text not in found(b, text, "vector"):
            assert time.monotonic() < deadline, "never found by meaning on the other server"
            time.sleep(0.2)
        second = "Ana adopted a grey kitten called Pixel"
        turns["messages"] = [{"role": "user", "content": second}]
        assert httpx.post(f"{b}/api/v1/turns/", json=turns, timeout=30).status_code == 201
        assert found(a, "grey kitten Pixel", "fulltext")[0] == second  # at once
        deadline = time.monotonic() + 60
        while second not in found(a, second, "vector"):
            assert time.monotonic() < deadline, "never found by meaning on the other server"
            time.sleep(0.2)

        store = open_store(url)  # a third process-level owner holds the maintenance lock
        stack.callback(store.close)
        assert store.jobs.acquire_lock(LOCK, "elsewhere", now=utcnow(), ttl=timedelta(minutes=5))
        for base in (a, b):
            report = httpx.post(f"{base}/api/v1/maintain", timeout=60).json()
            assert report["ran"] is False and report["holder"] == "elsewhere", report
        store.jobs.release_lock(LOCK, "elsewhere")
        ran = [httpx.post(f"{base}/api/v1/maintain", timeout=120).json()["ran"] for base in (a, b)]
        assert ran == [True, True]  # one after the other: the lock was released each time
