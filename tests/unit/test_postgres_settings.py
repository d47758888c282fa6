"""The PostgreSQL server's settings, checked on open: a server started with poor settings
(a second, throw-away cluster) gets one warning per setting, with its fix, also in
``memloci doctor``; the test server (PostgreSQL's defaults, an empty store) gets none."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from pgtest import database_url, fresh_schema, schema_url, throwaway_cluster

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from memloci.interfaces.cli import app  # noqa: E402
from memloci.storage.postgres import PostgresStore  # noqa: E402
from memloci.storage.postgres.settings_check import advice, read_facts  # noqa: E402

LOGGER = "memloci.storage.postgres.settings_check"
POOR = (
    "shared_buffers=128kB",
    "work_mem=64kB",
    "effective_cache_size=1MB",
    "maintenance_work_mem=1MB",
)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_poor_server_is_warned_about_once_with_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with throwaway_cluster(*POOR) as url:
        # a role that may not create extensions: btree_gin and unaccent stay missing
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE ROLE plain LOGIN")
            conn.execute("CREATE SCHEMA mem AUTHORIZATION plain")
        plain = schema_url(url.replace("postgres@", "plain@"), "mem")
        store = PostgresStore(plain)
        try:
            said = _warnings(caplog)
            for setting, fix in (
                ("shared_buffers is 128 kB", "ALTER SYSTEM SET shared_buffers = '128MB'"),
                ("work_mem is 64 kB", "ALTER SYSTEM SET work_mem = '4MB'"),
                ("effective_cache_size is 1 MB", "effective_cache_size = '512MB'"),
                ("maintenance_work_mem is 1 MB", "maintenance_work_mem = '64MB'"),
                ("the btree_gin extension is not installed", "CREATE EXTENSION btree_gin"),
                ("the unaccent extension is not installed", "CREATE EXTENSION unaccent"),
            ):
                found = [s for s in said if setting in s]
                assert len(found) == 1, (setting, said)
                assert fix in found[0]
            assert len(said) == 6
            assert store.server_advice == [s.split(": ", 1)[1] for s in said]
            # once per server and schema in a process: opening it again says nothing
            caplog.clear()
            PostgresStore(plain).close()
            assert _warnings(caplog) == []
            assert all(a in store.doctor().notes for a in store.server_advice)
        finally:
            store.close()
        # and `memloci doctor` shows it
        result = CliRunner().invoke(app, ["doctor", "--db", plain])
        assert result.exit_code == 0, result.output
        assert "work_mem is 64 kB" in " ".join(result.output.split())


def test_a_server_with_good_settings_gets_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    url = database_url()
    with fresh_schema(url) as name:
        store = PostgresStore(url, schema=name)
        try:
            assert store.server_advice == []
            assert _warnings(caplog) == []
            # the same facts with an older pgvector or a big vector index: advice
            with store.db.reading() as c:
                facts = read_facts(c)
        finally:
            store.close()
    old = advice(dataclasses.replace(facts, vector_version="0.7.4"))
    assert [name for name, _ in old] == ["vector"]
    assert "ALTER EXTENSION vector UPDATE" in old[0][1]
    big = facts.shared_buffers + facts.maintenance_work_mem
    grown = advice(dataclasses.replace(facts, vector_index=big, search_indexes=big))
    assert {name for name, _ in grown} >= {"shared_buffers", "maintenance_work_mem"}


def test_serve_says_it_once_at_startup() -> None:
    httpx = pytest.importorskip("httpx")
    with throwaway_cluster("work_mem=64kB") as url:
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
        cmd = [
            sys.executable,
            "-m",
            "memloci.interfaces.cli",
            "serve",
            "--embedder",
            "fake",
            "--port",
            str(port),
            "--no-maintenance",
            "--db",
            url,
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, "did not start"
                time.sleep(0.2)
        finally:
            proc.terminate()
            out = proc.communicate(timeout=30)[0].decode()
    said = [line for line in out.splitlines() if "work_mem is 64 kB" in line]
    assert len(said) == 1, out
    assert "ALTER SYSTEM SET work_mem = '4MB'" in said[0]
    assert out.index("work_mem is 64 kB") < out.index("memloci serving")  # before the banner
