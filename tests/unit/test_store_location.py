"""A SQLite store path that cannot be a store this process writes: a StorageError that
says why (a folder, a file in the folder's place, a folder it may not write), before
SQLite's own "unable to open database file" / "attempt to write a readonly database"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memloci import Memory
from memloci.errors import StorageError

MOUNT_FAILED = 97


def test_a_folder_given_as_the_store(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as err:
        Memory(str(tmp_path), embedder=None)
    assert err.value.message == f"{str(tmp_path)!r} is a folder, not a store file"
    assert err.value.hint and "memloci.db" in err.value.hint


def test_a_file_in_the_folders_place(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("x")
    with pytest.raises(StorageError) as err:
        Memory(str(tmp_path / "notes" / "m.db"), embedder=None)
    assert err.value.message == f"{str(tmp_path / 'notes')!r} is a file, not a folder"


def _in_read_only(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter while ``folder`` is read-only: a read-only
    bind mount in a private mount namespace as root (who may write any mode), else
    ``chmod 555``."""
    run = [sys.executable, "-c", code]
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            return subprocess.run(run, capture_output=True, text=True, timeout=120)
        finally:
            folder.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare to make a folder read-only as root")
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit '
        f'{MOUNT_FAILED}; shift; exec "$@"'
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(folder), *run],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode == MOUNT_FAILED or "unshare failed" in done.stderr:
        pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()}")
    return done


def test_a_folder_it_may_not_write(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with Memory(str(folder / "old.db"), embedder=None) as mem:
        mem.remember("The user lives in Lisbon", user="sam")
    (folder / "empty.db").touch()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    code = textwrap.dedent(
        f"""
        import json, sys
        from memloci import Memory
        from memloci.errors import StorageError
        out = {{}}
        for name in ("new.db", "old.db", "empty.db"):
            try:
                Memory({str(folder)!r} + "/" + name, embedder=None).close()
                out[name] = "opened"
            except StorageError as exc:
                out[name] = exc.message + " | " + str(exc.hint)
            except Exception as exc:
                out[name] = type(exc).__name__ + ": " + str(exc)
        print(json.dumps(out))
        """
    )
    done = _in_read_only(folder, code)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    for name, verb in (("new.db", "create"), ("old.db", "open"), ("empty.db", "open")):
        path = str(folder / name)
        assert said[name].startswith(
            f"cannot {verb} the store {path!r}: folder {str(folder)!r} is not writable"
        ), said
        assert "MEMLOCI_PATH" in said[name], said
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_new_store_is_for_its_owner_only(tmp_path: Path) -> None:
    """A store holds what people said: a new one (and its -wal / -shm) is 0600 whatever
    the umask lets others read; a file that exists keeps its mode."""
    path = tmp_path / "new.db"
    with Memory(str(path), embedder=None) as mem:
        mem.remember("The user lives in Lisbon", user="sam")
        modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {"new.db": 0o600, "new.db-wal": 0o600, "new.db-shm": 0o600}, modes
    shared = tmp_path / "shared.db"
    shared.touch()
    shared.chmod(0o640)
    Memory(str(shared), embedder=None).close()
    assert shared.stat().st_mode & 0o777 == 0o640
