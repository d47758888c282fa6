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
