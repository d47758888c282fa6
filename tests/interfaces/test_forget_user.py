"""Forget a person through the interfaces: REST ``POST /api/v1/memory-users/{id}/forget``
over a real server (with API keys) and ``memloci users forget`` as a real subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from rest_server import client, running
from test_rest_errors import assert_error_shape

from memloci import Memory
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite.base import sqlite3


def seed(mem: Memory) -> None:
    for ns in ("team-x", "team-y"):
        mem.add("u1 says the locker code is quarkbell", user="u1", session="s1", namespace=ns)
        mem.remember("u1 likes quarkbell tea", user="u1", namespace=ns)
        mem.remember("u2 likes green tea", user="u2", namespace=ns)
        mem._call(mem.service.records.save_user("u1", namespace=ns, identifiers={"telegram": "77"}))
        mem._call(
            mem.service.records.append_messages(
                "u1-chat", [{"role": "user", "content": "quarkbell"}], namespace=ns, user="u1"
            )
        )


def test_rest_forget_user_needs_a_write_key_and_stays_in_its_namespace(mem: Memory) -> None:
    seed(mem)
    _, writer = mem._call(mem.service.keys.create_key("writer", ["team-x"]))
    _, reader = mem._call(mem.service.keys.create_key("reader", ["team-x"], write=False))
    _, other = mem._call(mem.service.keys.create_key("other", ["team-y"]))
    url = "/api/v1/memory-users/u1/forget"
    with running(mem.service) as base:
        with client(base) as anon:
            assert_error_shape(anon.post(url, params={"namespace": "team-x"}), 401)
        for secret in (reader, other):
            with client(base, secret) as c:
                assert_error_shape(c.post(url, params={"namespace": "team-x"}), 403)
        assert mem.count(owner="u1", namespace="team-x") == 2  # refused: nothing removed
        with client(base, writer) as c:
            r = c.post(url, params={"namespace": "team-x"})
            assert r.status_code == 200, r.text
            report = r.json()
            assert report["namespace"] == "team-x" and report["user"] == "u1"
            assert (report["memories"], report["users"], report["threads"]) == (2, 1, 1)
            assert report["identifiers"] == 1 and report["scrubbed"] is True
            assert c.get("/api/v1/memory-users/u1", params={"namespace": "team-x"}).status_code == (
                404
            )
            # nothing left to forget: 404 (not a 200 with zero counts), the scrub still ran
            again = assert_error_shape(c.post(url, params={"namespace": "team-x"}), 404)
            assert "nothing stored" in again["message"] and again["details"]["scrubbed"] is True
            bad = c.post("/api/v1/memory-users/%20/forget", params={"namespace": "team-x"})
            assert_error_shape(bad, 400)
    assert mem.count(owner="u1", namespace="team-x", include_forgotten=True) == 0
    assert mem.count(owner="u2", namespace="team-x") == 1
    assert mem.count(owner="u1", namespace="team-y") == 2  # the same user id elsewhere stays
    assert mem.search("quarkbell", user="u1", namespace="team-y")


def test_rest_forget_a_merged_user_is_a_conflict(mem: Memory, http: httpx.Client) -> None:
    mem.remember("old account fact", user="old")
    mem._call(mem.service.records.save_user("old"))
    mem._call(mem.service.records.save_user("new"))
    mem._call(mem.service.records.merge_users("old", "new"))
    body = assert_error_shape(http.post("/api/v1/memory-users/old/forget"), 409, "conflict")
    assert "new" in body["hint"]
    assert mem.count(owner="new") == 1
    report = http.post("/api/v1/memory-users/new/forget").json()
    assert (report["memories"], report["users"]) == (1, 2)  # merged-in user goes too


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    return subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", *args, "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_cli_users_forget(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(str(db), embedder=FakeEmbedder()) as mem:
        seed(mem)
    refused = cli(db, "users", "forget", "u1", "-n", "team-x")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    done = cli(db, "users", "forget", "u1", "-n", "team-x", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["memories"], report["threads"], report["scrubbed"]) == (2, 1, True)
    table = cli(db, "users", "forget", "u1", "-n", "team-x", "--yes")
    assert table.returncode == 0 and "Nothing stored" in table.stderr
    bad = cli(db, "users", "forget", "x" * 201, "--yes")
    assert bad.returncode != 0 and bad.stderr.startswith("error:")
    with Memory(str(db), embedder=FakeEmbedder()) as mem:
        assert mem.count(owner="u1", namespace="team-x", include_forgotten=True) == 0
        assert mem.count(owner="u2", namespace="team-x") == 1
        assert mem.count(owner="u1", namespace="team-y") == 2
    assert b"quarkbell" in db.read_bytes()  # team-y keeps u1's text; team-x lost it


# ------------------------------------------------------------- a reader holding a snapshot
@contextlib.contextmanager
def held_snapshot(db: str) -> Iterator[Any]:
    """Another connection (another process would do the same) inside a read
    transaction: ``BEGIN; SELECT 1 FROM nodes;`` kept open until the block ends."""
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM nodes").fetchall()
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # reported by the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


HANG_GUARD = 120.0  # only catches a hang: the old scrub took ~10 min with a held reader


def test_forget_user_with_a_held_reader_neither_waits_nor_blocks_writes(db_path: str) -> None:
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        for i in range(30):
            mem.remember(f"u1 secret number {i} is zylophant", user="u1")
        mem.remember("u2 likes green tea", user="u2")
        with held_snapshot(db_path) as reader:
            forget, forgot = in_thread(lambda: mem.forget_user("u1"))
            write, wrote = in_thread(lambda: mem.remember("u3 writes meanwhile", user="u3"))
            forget.join(HANG_GUARD)
            write.join(HANG_GUARD)
            # both finished while the reader still holds its snapshot
            assert reader.execute("SELECT count(*) FROM nodes").fetchone()[0] == 31
            assert "error" not in forgot and "error" not in wrote, (forgot, wrote)
            report = forgot["value"]
            assert report.memories == 30 and report.scrubbed is False
            assert "read snapshot" in report.scrub_reason
            assert wrote["value"].action == "created"
            # an unknown user does not scrub (it would meet the held snapshot): the due
            # scrub is tried once, quickly, and is still reported unfinished
            again = mem.forget_user("nobody")
            assert not again.removed and again.scrubbed is False
        assert mem.service.store.scrub_due()
        # the reader is gone: forgetting again (nothing left) finishes the scrub
        done = mem.forget_user("u1")
        assert not done.removed and done.scrubbed is True and done.scrub_reason is None
        assert not mem.service.store.scrub_due()
        assert mem.count(owner="u3") == 1 and mem.count(owner="u2") == 1
        # nothing due any more: an unknown user costs no scrub, even with a reader held
        with held_snapshot(db_path):
            quiet = mem.forget_user("nobody")
            assert quiet.scrubbed is True and quiet.scrub_reason is None
    data = b"".join(p.read_bytes() for p in Path(db_path).parent.iterdir() if p.is_file())
    assert b"zylophant" not in data


def test_rest_forget_with_a_held_reader_says_why_it_is_not_scrubbed(
    mem: Memory, db_path: str
) -> None:
    mem.remember("u1 likes quarkbell tea", user="u1")
    with running(mem.service) as base, client(base) as c:
        with held_snapshot(db_path):
            # a stream of unknown users: 404s, none of them scrubs (nothing is due)
            for i in range(3):
                body = assert_error_shape(c.post(f"/api/v1/memory-users/nobody{i}/forget"), 404)
                assert body["details"] == {"scrubbed": True}
            r = c.post("/api/v1/memory-users/u1/forget")
            assert r.status_code == 200, r.text
            assert r.json()["memories"] == 1 and r.json()["scrubbed"] is False
            assert "read snapshot" in r.json()["scrub_reason"]
            wrote = c.post("/api/v1/facts/", json={"content": "another tenant still writes"})
            assert wrote.status_code in (200, 201), wrote.text
            late = assert_error_shape(c.post("/api/v1/memory-users/u1/forget"), 404)
            assert late["details"]["scrubbed"] is False and "scrub_reason" in late["details"]
        # the reader ended: the retry finishes the scrub
        done = assert_error_shape(c.post("/api/v1/memory-users/u1/forget"), 404)
        assert done["details"] == {"scrubbed": True}
