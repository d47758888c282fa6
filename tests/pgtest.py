"""PostgreSQL for the tests: the server from ``MEMLOCI_TEST_DATABASE_URL`` and one fresh
schema per test (created empty, dropped after), so tests never see each other's rows.

Without the variable PostgreSQL tests skip with the reason, except under CI (``CI`` set),
where a missing server is a failure: CI must run both backends (``make test`` starts one
with ``scripts/pg-test-env.sh``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

ENV = "MEMLOCI_TEST_DATABASE_URL"
BACKENDS = ["sqlite", "postgres"]


def database_url() -> str:
    """The test server's URL, or skip (locally) / fail (under CI) without one."""
    url = os.environ.get(ENV, "")
    if url:
        return url
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {ENV} is not: the PostgreSQL tests must run in CI")
    pytest.skip(f"postgres: set {ENV} (e.g. via scripts/pg-test-env.sh start) to run")


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A new empty schema ``memloci_test_<random>``, dropped (with its rows) afterwards."""
    import psycopg

    name = f"memloci_test_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def schema_url(url: str, schema: str) -> str:
    """``url`` with a ``schema=`` parameter (read by the PostgreSQL store)."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@contextmanager
def store_location(backend: str, tmp_path: Path) -> Iterator[str]:
    """Where a test's store lives: a SQLite file path (not created yet), or a PostgreSQL
    URL naming a fresh schema (dropped afterwards)."""
    if backend == "sqlite":
        yield str(tmp_path / "m.db")
        return
    url = database_url()
    with fresh_schema(url) as schema:
        yield schema_url(url, schema)


# Run a test that builds its ``Memory`` from ``db_path`` (``mem``, ``make_memory``) on
# both backends: ``@both_backends`` on a test, or ``pytestmark = both_backends``.
both_backends = pytest.mark.parametrize("db_path", BACKENDS, indirect=True)


@contextmanager
def throwaway_cluster(*settings: str) -> Iterator[str]:
    """A second PostgreSQL cluster of the test server's installation (initdb + pg_ctl, as
    ``scripts/pg-test-env.sh`` starts one), with ``settings`` (``"work_mem=64kB"`` …) on
    its command line, trust auth on loopback, a database ``memtest`` with pgvector;
    yields its URL (user ``postgres``), and stops and removes it afterwards. Skips
    without a test server or the server binaries (``PGBIN``, else Debian's path)."""
    import shutil
    import socket
    import subprocess
    import tempfile

    import psycopg

    url = database_url()
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    major = int(row[0]) // 10000 if row else 15
    pgbin = Path(os.environ.get("PGBIN", f"/usr/lib/postgresql/{major}/bin"))
    if not (pgbin / "initdb").exists():
        pytest.skip(f"no PostgreSQL server binaries in {pgbin} (set PGBIN)")
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="memloci-pg-cluster-"))
    folder.chmod(0o755)
    data = folder / "data"
    data.mkdir()
    if as_pg:
        shutil.chown(data, "postgres", "postgres")
    with socket.socket() as s:  # a free port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = " ".join(
        [f"-p {port} -c listen_addresses=127.0.0.1 -k {data} -c fsync=off"]
        + [f"-c {item}" for item in settings]
    )
    run = partial(subprocess.run, check=True, capture_output=True, timeout=120)
    try:
        run(
            [
                *as_pg,
                str(pgbin / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]
        )
        run(
            [
                *as_pg,
                str(pgbin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(data / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ]
        )
        base = f"postgresql://postgres@127.0.0.1:{port}"
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE memtest")
        with psycopg.connect(f"{base}/memtest", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        yield f"{base}/memtest"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_pg, str(pgbin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(folder, ignore_errors=True)
