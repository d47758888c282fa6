"""Read-only stores: ``Memory(path, read_only=True)`` and ``--read-only`` read a store
(one in a folder nobody may write too: inspection, backups) and refuse every write with
a ReadOnlyError before anything is attempted; the file is left byte for byte as it was."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memloci import Memory, NotFoundError, ReadOnlyError, StorageError, ValidationError
from memloci.providers.fake import FakeEmbedder

CLI = [sys.executable, "-m", "memloci.interfaces.cli"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "backup"
    folder.mkdir()
    path = folder / "memloci.db"
    with Memory(str(path), embedder=FakeEmbedder()) as m:
        m.remember("Sam drinks green tea every morning", user="sam")
        m.add("I moved to Lisbon last year", user="sam", session="s1")
        m.embed_pending()
    return path


def test_reads_work_and_every_write_is_refused(store: Path, tmp_path: Path) -> None:
    before = digest(store)
    with Memory(str(store), embedder=FakeEmbedder(), read_only=True) as m:
        assert m.settings.read_only
        hits = m.search("green tea", user="sam")
        assert hits and hits[0].memory.content == "Sam drinks green tea every morning"
        fact = hits[0].memory
        assert len(m.list()) == 2 and m.get(fact.id).content == fact.content
        assert "green tea" in m.context("What does Sam drink?", user="sam")
        assert m.stats().nodes_by_type == {"episodic": 1, "semantic": 1}
        m.export(str(tmp_path / "copy.jsonl"))
        assert len((tmp_path / "copy.jsonl").read_text().splitlines()) > 2
        writes: list[Callable[[], Any]] = [
            lambda: m.remember("Sam plays the cello", user="sam"),
            lambda: m.add("hello there", user="sam"),
            lambda: m.update(fact.id, "Sam drinks black tea every morning"),
            lambda: m.forget(fact.id),
            lambda: m.forget_user("sam"),
            lambda: m.consolidate(),
            lambda: m.import_file(str(tmp_path / "copy.jsonl")),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyError) as caught:
                write()
            assert caught.value.code == "read_only" and "read-only" in caught.value.message
            assert caught.value.exit_code == 8 and caught.value.http_status == 403
        assert m.get(fact.id).content == fact.content  # nothing of it landed
        assert len(m.list()) == 2
    assert digest(store) == before
    assert isinstance(ReadOnlyError("x"), StorageError)


def test_what_cannot_be_opened_read_only_says_why(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no memory store at"):
        Memory(str(tmp_path / "missing.db"), embedder="none", read_only=True)
    assert not (tmp_path / "missing.db").exists()  # not created
    (tmp_path / "empty.db").touch()
    with pytest.raises(StorageError, match="empty file, not a memloci store"):
        Memory(str(tmp_path / "empty.db"), embedder="none", read_only=True)
    with pytest.raises(ValidationError, match="read_only opens SQLite store files"):
        Memory("postgresql://u:secret@127.0.0.1:1/db", embedder="none", read_only=True)


def test_a_store_with_no_vectors_is_searched_by_full_text(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    with Memory(str(path), embedder="none") as m:
        m.remember("Sam drinks green tea every morning", user="sam")
    with Memory(str(path), embedder=FakeEmbedder(), read_only=True) as m:
        assert m.service.embedder is None  # binding the model would write
        assert [h.memory.content for h in m.search("green tea", user="sam")]


@contextlib.contextmanager
def unwritable(*paths: Path) -> Iterator[None]:
    """Make ``paths`` unwritable for this process, root included: the immutable
    attribute (``chattr +i``: root is refused too), else ``chmod`` when not root."""
    if os.geteuid() != 0:
        modes = [p.stat().st_mode for p in paths]
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in zip(paths, modes, strict=True):
                p.chmod(mode)
        return
    done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, check=False)
    if done.returncode != 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True, check=False)
        pytest.skip(f"root, and no immutable attribute here: {done.stderr!r}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [*CLI, *args, "--embedder", "fake"], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_cli_reads_a_store_in_a_read_only_folder(store: Path, tmp_path: Path) -> None:
    before, db = digest(store), str(store)
    listing = sorted(os.listdir(store.parent))
    out = tmp_path / "out.jsonl"
    with unwritable(store, store.parent):
        refused = cli("memory", "list", "--db", db)
        assert refused.returncode == 8 and "is not writable" in refused.stderr
        assert "--read-only" in refused.stderr  # the hint says how to read it
        listed = cli("memory", "list", "--db", db, "--read-only", "--json")
        assert listed.returncode == 0, listed.stderr
        assert {n["content"] for n in json.loads(listed.stdout)} == {
            "Sam drinks green tea every morning",
            "I moved to Lisbon last year",
        }
        found = cli("memory", "search", "green tea", "--user", "sam", "--db", db, "--read-only")
        assert found.returncode == 0 and "green tea" in found.stdout, found.stderr
        shown = cli("memory", "stats", "--db", db, "--read-only", "--json")
        assert json.loads(shown.stdout)["nodes_by_type"]["semantic"] == 1
        exported = cli("memory", "export", "--db", db, "--read-only", "-o", str(out))
        assert exported.returncode == 0, exported.stderr
        write = cli("memory", "remember", "Sam plays the cello", "--db", db)
        assert write.returncode == 8 and "Traceback" not in write.stderr
        assert sorted(os.listdir(store.parent)) == listing  # no -wal / -shm left behind
    assert digest(store) == before
    assert len(out.read_text().splitlines()) > 2


def test_a_read_only_server_answers_reads_and_refuses_writes_with_403(store: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interfaces"))
    from rest_server import running

    before = digest(store)
    with Memory(str(store), embedder=FakeEmbedder(), read_only=True) as m:  # noqa: SIM117
        with running(m.service) as base, httpx.Client(base_url=base, timeout=20) as http:
            found = http.get("/api/v1/search", params={"q": "green tea", "user": "sam"})
            assert found.status_code == 200 and found.json()["hits"]
            refused = http.post("/api/v1/facts/", json={"content": "Sam plays the cello"})
            assert refused.status_code == 403, refused.text
            error = refused.json()["error"]
            assert error["code"] == "read_only" and "--read-only" in error["hint"]
            assert http.get("/api/v1/facts/").json()["total"] == 1
    assert digest(store) == before
