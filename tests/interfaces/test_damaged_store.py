"""A damaged or full store answers with memloci's errors, and one damaged row never
fails every query: through the SDK, the REST server and ``memloci doctor``.

- disk full (simulated with SQLite's ``PRAGMA max_page_count``): ``StorageFullError``
  (a ``StorageError``) in the SDK, a 507 ``storage_full`` over REST, nothing written,
  reads still work;
- one vector blob of the wrong size and one memory whose metadata is not JSON: search,
  list and context still answer (the damaged parts skipped, a warning logged once);
- a damaged full-text index: search goes on by meaning, a write is a ``StorageError``
  whose hint names ``memloci doctor``;
- ``memloci doctor`` finds all of it (exit 8) and ``--repair`` fixes it (exit 0): the
  vector embedded again, the metadata reset to ``{}`` with a note, the index rebuilt.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rest_server import client, running
from test_rest_errors import assert_error_shape

from memloci import Memory, StorageError, StorageFullError
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite.base import sqlite3


def raw(db: str, *statements: str) -> list[Any]:
    """Run SQL on the file as another program would (damage it on purpose)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        out: list[Any] = []
        for sql in statements:
            out = conn.execute(sql).fetchall()
        return out
    finally:
        conn.close()


def fill(mem: Memory) -> None:
    for i in range(6):
        mem.remember(f"fact {i}: the tram to belem leaves at {i} pm", user="u1")
    mem.flush(30)


def cap_the_file(mem: Memory) -> None:
    """The store's writer may not grow the file past its current pages: the next write
    that needs a new page fails as on a full disk."""
    writer = mem.service.store.db._writer  # type: ignore[attr-defined]
    pages = writer.execute("PRAGMA page_count").fetchone()[0]
    writer.execute(f"PRAGMA max_page_count = {pages}")


def test_disk_full_is_a_storage_error_and_writes_nothing(mem: Memory) -> None:
    fill(mem)
    cap_the_file(mem)
    with pytest.raises(StorageFullError) as caught:
        for i in range(500):  # until a write needs a page the cap refuses
            mem.remember(f"filler fact number {i} " + "about the long tram ride " * 15)
    err = caught.value
    assert isinstance(err, StorageError) and err.code == "storage_full"
    assert "full" in err.message and err.hint is not None and "free disk space" in err.hint
    written = mem.count()
    assert mem.search("tram to belem", user="u1")  # reads still work
    with pytest.raises(StorageFullError):
        mem.remember("one more fact " + "about the long tram ride " * 15)
    assert mem.count() == written  # the refused write left nothing


def test_rest_disk_full_is_a_507_with_a_hint(mem: Memory) -> None:
    fill(mem)
    cap_the_file(mem)
    with running(mem.service) as base, client(base) as c:
        for i in range(500):
            r = c.post("/api/v1/facts/", json={"content": f"filler {i} " + "tram ride " * 40})
            if r.status_code != 201 and r.status_code != 200:
                break
        body = assert_error_shape(r, 507, "storage_full")
        assert "free disk space" in body["hint"]
        assert c.get("/api/v1/search", params={"q": "tram", "user": "u1"}).status_code == 200


def test_a_bad_vector_and_bad_metadata_are_skipped_not_fatal(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        fill(mem)
    first = raw(db_path, "SELECT min(rowid) FROM node_vectors")[0][0]
    raw(
        db_path,
        f"UPDATE node_vectors SET embedding = x'0011' WHERE rowid = {first}",
        f"UPDATE nodes SET metadata = '{{bad' WHERE rowid = {first + 1}",
    )
    bad_id = raw(db_path, f"SELECT id FROM nodes WHERE rowid = {first + 1}")[0][0]
    with (
        Memory(db_path, embedder=FakeEmbedder()) as mem,
        caplog.at_level(logging.WARNING, logger="memloci.storage"),
    ):
        for _ in range(3):
            hits = mem.search("tram to belem", user="u1")
            listed = mem.list(owner="u1")
            assert mem.context("when does the tram leave", user="u1")
    assert len(hits) >= 5 and len(listed) == 6
    assert next(n for n in listed if n.id == bad_id).metadata == {}
    warned = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert any("damaged vectors" in w for w in warned)
    assert any("damaged metadata" in w for w in warned)
    assert len(warned) == 2, warned  # once each, not once per query
    assert all("memloci doctor" in w for w in warned)


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    return subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", "doctor", "--db", db, *args],
        capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_doctor_finds_and_repairs_damaged_rows_and_index(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=FakeEmbedder()) as mem:
        fill(mem)
        mem.service.store.set_meta("scrub_due", "1")  # unrelated state is left alone
    healthy = cli(db)
    assert healthy.returncode == 0, healthy.stderr
    assert "the store is sound" in healthy.stdout
    first = raw(db, "SELECT min(rowid) FROM node_vectors")[0][0]
    bad_vector, bad_meta = (
        raw(db, f"SELECT id FROM nodes WHERE rowid = {first + i}")[0][0] for i in (0, 1)
    )
    structure = raw(db, "SELECT min(id) FROM nodes_fts_data WHERE id > 1")[0][0]
    raw(
        db,
        f"UPDATE node_vectors SET embedding = x'0011' WHERE rowid = {first}",
        f"UPDATE nodes SET metadata = '{{bad' WHERE rowid = {first + 1}",
        f"DELETE FROM nodes_fts_data WHERE id = {structure}",  # the index's structure record
    )
    with Memory(db, embedder=FakeEmbedder()) as mem:
        assert mem.search("belem", user="u1")  # by meaning: the index is skipped
        with pytest.raises(StorageError) as caught:
            mem.remember("the ferry leaves at noon", user="u1")
        assert caught.value.hint is not None and "memloci doctor" in caught.value.hint
    found = cli(db, "--json")
    assert found.returncode == 8, found.stderr
    report = json.loads(found.stdout)
    assert report["vectors"] == [bad_vector] and report["fulltext"] == ["nodes_fts"]
    assert report["json"] == [f"nodes.metadata of memory {bad_meta}"]
    assert report["sound"] is False and report["repaired"] is False
    assert "--repair" in found.stderr
    fixed = cli(db, "--repair", "--embedder", "fake", "--json")
    assert fixed.returncode == 0, fixed.stderr
    report = json.loads(fixed.stdout)
    assert report["repaired"] is True and report["sound"] is True
    assert any("reset to {}" in n and bad_meta in n for n in report["notes"])
    assert any("rebuilt the full-text index nodes_fts" in n for n in report["notes"])
    with Memory(db, embedder=FakeEmbedder()) as mem:
        assert mem.get(bad_meta).metadata == {}
        assert len(mem.service.store.search.vectors("default", [bad_vector])[bad_vector]) == 64 * 4
        keyword = mem.service.store.search.fulltext(
            mem.service.filter(user="u1"), "belem", 10
        )  # the rebuilt index finds every memory again
        assert len(keyword) == 6
        assert mem.remember("the ferry leaves at noon", user="u1").action == "created"
        assert mem.service.store.get_meta("scrub_due") == "1"
    again = cli(db)
    assert again.returncode == 0 and "the store is sound" in again.stdout
