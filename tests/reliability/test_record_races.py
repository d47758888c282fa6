"""Memory users and entities written by several processes at once, on both backends:
each check-then-write (read a user or an entity, decide, write it back) is serialised
across processes and servers, so no contact, identifier or mention is lost, a channel
id is never claimed twice, two opposite merges never both land, a name never makes
two entities, and one file imported by several servers at once lands once. SQLite
serialises them with its one writer; PostgreSQL needs a lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from memloci import Memory
from memloci.providers.fake import FakeEmbedder
from memloci.storage.base import NodeFilter
from pgtest import both_backends
from procs import release_together

pytestmark = [pytest.mark.reliability, both_backends]
CHILD = Path(__file__).resolve().parent / "records_child.py"
PROCESSES = 4
sys.path.insert(0, str(CHILD.parent))
from records_child import ROUNDS, turn  # noqa: E402


def _race(location: str, kind: str, processes: int = PROCESSES, *extra: str) -> list[list[str]]:
    """Run ``records_child.py`` KIND in ``processes`` processes released together; the
    outcomes of each process's calls."""
    return _together(location, [kind] * processes, *extra)


def _together(location: str, kinds: list[str], *extra: str) -> list[list[str]]:
    """One ``records_child.py`` process per kind, released together; their outcomes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), location, kind, str(i), *extra],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, kind in enumerate(kinds)
    ]
    outputs = release_together(procs, timeout=600)
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


def _memory(location: str) -> Memory:
    return Memory(location, embedder=FakeEmbedder())


def test_concurrent_contacts_count_every_conversation(db_path: str) -> None:
    with _memory(db_path) as mem:
        mem._call(mem.service.records.save_user("u1"))
    outcomes = _race(db_path, "contact")
    assert Counter(o for run in outcomes for o in run) == {"ok": PROCESSES * ROUNDS}
    with _memory(db_path) as mem:
        user = mem._call(mem.service.records.get_user("u1"))
    assert user.conversation_count == PROCESSES * ROUNDS


def test_concurrent_identifier_updates_keep_every_channel(db_path: str) -> None:
    with _memory(db_path) as mem:
        mem._call(mem.service.records.save_user("u1"))
    _race(db_path, "identifiers")
    with _memory(db_path) as mem:
        user = mem._call(mem.service.records.get_user("u1"))
        found = {
            (i, j): mem._call(mem.service.records.find_user(f"c{i}x{j}", f"{i}.{j}"))
            for i in range(PROCESSES)
            for j in range(ROUNDS)
        }
    assert len(user.identifiers) == PROCESSES * ROUNDS
    assert {u.id if u else None for u in found.values()} == {"u1"}


def test_a_channel_id_claimed_at_once_goes_to_one_user(db_path: str) -> None:
    outcomes = _race(db_path, "claim")
    assert Counter(o for run in outcomes for o in run) == {
        "ok": 1,
        "ConflictError": PROCESSES - 1,
    }
    with _memory(db_path) as mem:
        holders = [u.id for u in mem._call(mem.service.records.list_users()) if u.identifiers]
    assert len(holders) == 1


def test_opposite_merges_at_once_land_one_way(db_path: str) -> None:
    with _memory(db_path) as mem:
        for uid in ("a", "b"):
            mem._call(mem.service.records.save_user(uid))
            mem.remember(f"Memory user {uid} likes the colour teal", user=uid)
    outcomes = _race(db_path, "merge", processes=2)
    assert sorted(o for run in outcomes for o in run) == ["ConflictError", "ok"]
    with _memory(db_path) as mem:
        a, b = (mem._call(mem.service.records.get_user(uid)) for uid in ("a", "b"))
        owners = {n.user for n in mem.list(limit=10)}
    merged = [u for u in (a, b) if u.merged_into is not None]
    assert len(merged) == 1  # never both (a loop), never neither
    root = merged[0].merged_into
    assert root in ("a", "b") and root != merged[0].id
    assert owners == {root}


def test_one_name_named_at_once_makes_one_entity(db_path: str) -> None:
    outcomes = _race(db_path, "entity")
    assert Counter(o for run in outcomes for o in run) == {"ok": PROCESSES * ROUNDS}
    with _memory(db_path) as mem:
        entities = mem._call(mem.service.records.list_entities(limit=100))
    assert sorted(e.canonical_name for e in entities) == [f"Thing {j}" for j in range(ROUNDS)]
    # the first save makes the entity, every later one is a mention
    assert [e.mention_count for e in entities] == [PROCESSES] * ROUNDS


def test_one_file_imported_at_once_lands_once(db_path: str, tmp_path: Path) -> None:
    export = tmp_path / "team.jsonl"
    with _memory(str(tmp_path / "source.db")) as source:
        for i in range(12):
            source.remember(f"Team fact {i}: the build of service s{i} runs at {i}:00", user="al")
        source.add("Al said the release is on Friday", user="al", session="s1")
        source._call(
            source.service.records.save_user("al", identifiers={"email": "al@example.com"})
        )
        source._call(source.service.records.save_entity("Friday Release"))
        source.flush()
        source.export(str(export))
        stored = source.count(namespace="default")
    with _memory(db_path):
        pass  # create the schema once, as a deployment would
    outcomes = _race(db_path, "import", 3, str(export))
    assert sorted(o for run in outcomes for o in run) == [
        "imported 0",
        "imported 0",
        f"imported {stored}",
    ]
    with _memory(db_path) as mem:
        assert mem.count(namespace="team") == stored
        assert mem._call(mem.service.records.count_users(namespace="team")) == 1
        assert mem._call(mem.service.records.count_entities(namespace="team")) == 1


def test_a_user_forgotten_while_their_turns_arrive_leaves_no_word_behind(db_path: str) -> None:
    """A turn holds the words of the turns beside it in its full-text window: one written
    while its previous turn is being forgotten must not keep that turn's words (nor an
    edge to it)."""
    with _memory(db_path):
        pass
    (wrote,), (forgot,) = _together(db_path, ["talk", "forget"])
    written = int(wrote.split()[1])
    with _memory(db_path) as mem:
        kept = {n.content for n in mem.list(user="u", limit=written)}
        gone = [n for n in range(written) if turn(n) not in kept]
        assert kept and gone and int(forgot.split()[1]) > 0  # the forget ran mid-stream
        store, every = mem.service.store, NodeFilter(namespaces=("default",))
        found = {n: store.search.fulltext(every, f'"tok{n}zq"', 5) for n in gone}
        ids = {n.id for n in mem.list(user="u", limit=written)}
        edges = list(store.memories.iter_edges("default"))
    assert {n: hits for n, hits in found.items() if hits} == {}
    assert [e for e in edges if e.source_id not in ids or e.target_id not in ids] == []
