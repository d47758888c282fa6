"""A store written by a newer memloci (its schema version is ahead of this one's) is
never written: opening it raises :class:`StoreTooNewError` saying to upgrade, on both
backends, through the SDK and the CLI; a SQLite file a newer memloci migrates while this
one has it open refuses the next write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memloci import MemlociError, Memory, StorageError, StoreTooNewError
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite.base import sqlite3
from pgtest import both_backends, schema_url


def run_sql(location: str, sql: str) -> None:
    """``sql`` on the store's database, as another program (or a newer memloci) would."""
    if location.startswith("postgresql://"):
        import psycopg

        url, _, schema = location.rpartition("?schema=")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'SET search_path = "{schema}"')
            conn.execute(sql)
        assert schema_url(url, schema) == location
        return
    conn = sqlite3.connect(location, isolation_level=None)
    try:
        conn.execute(sql)
    finally:
        conn.close()


BUMP = "UPDATE meta SET value = '999' WHERE key = 'schema_version'"


@both_backends
def test_a_store_of_a_newer_memloci_is_refused_and_left_as_it_is(db_path: str) -> None:
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        mem.remember("the old store's one fact")
    run_sql(db_path, BUMP)
    with pytest.raises(StoreTooNewError) as caught:
        Memory(db_path, embedder=FakeEmbedder())
    err = caught.value
    assert isinstance(err, StorageError) and isinstance(err, MemlociError)
    assert "newer memloci" in err.message and "999" in err.message
    assert err.hint is not None and "upgrade memloci" in err.hint
    assert err.to_dict()["code"] == "store_too_new"
    # nothing was written: back at this version's schema it opens with its one fact
    run_sql(db_path, "UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    run_sql(db_path, _current_version_sql(db_path))
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        assert mem.count() == 1


def _current_version_sql(location: str) -> str:
    from memloci.storage.base import migration_scripts

    backend = "postgres" if location.startswith("postgresql://") else "sqlite"
    latest = max(n for n, _ in migration_scripts(backend))
    return f"UPDATE meta SET value = '{latest}' WHERE key = 'schema_version'"


def test_a_file_migrated_by_a_newer_memloci_while_open_refuses_the_next_write(
    db_path: str,
) -> None:
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        mem.remember("written before the upgrade")
        run_sql(db_path, BUMP)  # a newer memloci opened the same file meanwhile
        with pytest.raises(StoreTooNewError, match="newer memloci"):
            mem.remember("written after it")
        with pytest.raises(StoreTooNewError):
            mem.add("a turn", user="u1", session="s1")
        assert mem.count() == 1  # reads still work; nothing more was written
        run_sql(db_path, _current_version_sql(db_path))


def test_cli_on_a_newer_store_says_to_upgrade(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(str(db), embedder=FakeEmbedder()) as mem:
        mem.remember("a fact")
    run_sql(str(db), BUMP)
    before = db.read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    done = subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", "memory", "add", "another fact",
         "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == StoreTooNewError.exit_code == 8, done.stderr
    assert "newer memloci" in done.stderr and "upgrade memloci" in done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == before
