"""``Memory(path)`` on a file that is not a memloci store: a clear StorageError, and the
file is left exactly as it was (memloci never adds its tables to another database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memloci import Memory
from memloci.errors import StorageError
from memloci.storage.sqlite import SQLiteStore
from memloci.storage.sqlite import base as sqlite_base


def _foreign(path: Path, table: str) -> bytes:
    conn = sqlite_base.sqlite3.connect(str(path))
    conn.execute(f"CREATE TABLE {table} (x)")
    conn.execute(f"INSERT INTO {table} VALUES (1)")
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("table", ["foo", "nodes", "meta"])
def test_another_applications_database_is_refused_untouched(tmp_path: Path, table: str) -> None:
    path = tmp_path / "theirs.db"
    before = _foreign(path, table)
    with pytest.raises(StorageError) as exc:
        Memory(str(path), embedder=None)
    assert exc.value.message == (
        f"{str(path)!r} is not a memloci store: it is a SQLite database of something else "
        f"(it holds {table}); memloci adds nothing to it"
    )
    assert exc.value.hint and "new file" in exc.value.hint
    assert path.read_bytes() == before  # not even switched to WAL mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is a text file and no database at all\n" * 20)
    with pytest.raises(StorageError, match="is not a memloci store: it is not a SQLite database"):
        SQLiteStore(str(path))
    assert path.read_text().startswith("hello")


def test_an_empty_file_and_a_store_still_open(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with Memory(str(path), embedder=None) as mem:
        mem.remember("The user lives in Lisbon", user="sam")
    with Memory(str(path), embedder=None) as mem:  # its own tables are no obstacle
        assert mem.count(user="sam") == 1
