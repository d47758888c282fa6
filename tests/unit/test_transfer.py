"""Export / import as JSON Lines: a faithful round trip, vectors reused or rebuilt,
all-or-nothing validation, idempotent re-import."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memloci import Memory, MemoryUser
from memloci.errors import NotFoundError, ValidationError
from memloci.providers.fake import FakeEmbedder


def build_rich(mem: Memory) -> dict[str, str]:
    fact = mem.remember(
        "The user's timezone is Europe/Berlin", key="user_timezone", value={"tz": "Berlin"},
        category="context", subject="timezone", fact_type="user_preference", user="alice",
        metadata={"source": "onboarding", "tags": ["a", "b"]}, confidence=0.8,
    )  # fmt: skip
    mem.update(fact.memory.id, "The user's timezone is Europe/Paris", session="s1")
    job = mem.remember("The user works at Acme Corp", key="employer")
    new_job = mem.correct(job.memory.id, "The user works at Globex Inc")
    gone = mem.remember("The user's old phone number is 555-0100")
    mem.forget(gone.memory.id)
    turns = mem.add(
        [
            {"role": "user", "content": "I am planning a trip to Japan"},
            {"role": "assistant", "content": "How exciting! When are you going?"},
            {"role": "user", "content": "In April, for the cherry blossoms"},
        ],
        session="trip", user="alice", event_time=datetime(2024, 3, 1, 9, 0, tzinfo=UTC),
        metadata={"channel": "web"},
    )  # fmt: skip
    proc = mem.learn_procedure(
        "Check the forecast before outdoor plans", triggers={"goal_contains": ["weather"]}
    )
    episode = mem.record_episode(
        "Booked the hotel in Kyoto",
        details={"outcome": {"success": True}, "actions": [{"tool": "book_hotel"}]},
        session="trip",
    )
    mem.service.store.people.upsert_user(
        MemoryUser(
            id="alice", display_name="Alice", identifiers={"telegram": "42"},
            created_at=datetime(2024, 1, 1, tzinfo=UTC),
        )
    )  # fmt: skip
    assert mem.flush(20)
    return {
        "fact": fact.memory.id, "old_job": job.memory.id, "new_job": new_job.memory.id,
        "gone": gone.memory.id, "turn0": turns[0].id, "proc": proc.memory.id,
        "episode": episode.memory.id,
    }  # fmt: skip


def dump_namespace(mem: Memory, ns: str = "default") -> dict[str, Any]:
    store = mem.service.store
    nodes = {n.id: n.model_dump() for n in store.memories.iter_nodes(ns)}
    for node in nodes.values():
        node["namespace"] = "*"
    return {
        "nodes": nodes,
        "versions": sorted(
            (v.model_dump() for v in store.memories.iter_versions(ns)),
            key=lambda v: (v["node_id"], v["version"]),
        ),
        "edges": sorted(
            ({**e.model_dump(), "namespace": "*"} for e in store.memories.iter_edges(ns)),
            key=lambda e: e["id"],
        ),
        "users": [{**u.model_dump(), "namespace": "*"} for u in store.people.list_users(ns)],
        "vectors": store.search.vectors(ns, list(nodes)),
    }


@pytest.fixture
def exported(make_memory, tmp_path: Path) -> tuple[Memory, dict[str, str], Path]:
    source = make_memory(str(tmp_path / "source.db"))
    ids = build_rich(source)
    path = tmp_path / "export.jsonl"
    lines = source.export(str(path))
    assert lines == len(path.read_text().splitlines())
    return source, ids, path


def test_round_trip_keeps_everything(make_memory, tmp_path: Path, exported) -> None:
    source, ids, path = exported
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(path))
    want = dump_namespace(source)
    assert report.nodes == len(want["nodes"]) == 9
    assert report.versions == len(want["versions"])
    assert report.edges == len(want["edges"])
    assert report.users == 1 and report.skipped == 0 and report.errors == []
    assert report.vectors_reused == report.nodes and report.needs_embedding == 0
    assert dump_namespace(target) == want
    assert [v.content for v in target.history(ids["fact"])] == [
        "The user's timezone is Europe/Berlin", "The user's timezone is Europe/Paris",
    ]  # fmt: skip
    assert not target.get(ids["old_job"]).is_current
    assert target.lookup("employer").id == ids["new_job"]
    assert not target.get(ids["gone"]).is_current
    assert target.get(ids["turn0"]).metadata == {"channel": "web"}
    assert target.get(ids["episode"]).episode.outcome == {"success": True}
    assert target.get(ids["proc"]).procedure.triggers == {"goal_contains": ["weather"]}
    assert target.context() == source.context()
    hits = target.search("cherry blossoms", recipe="vector")
    assert hits and hits[0].memory.content == "In April, for the cherry blossoms"


def test_import_into_another_namespace(make_memory, tmp_path: Path, exported) -> None:
    source, _, path = exported
    target = make_memory(str(tmp_path / "target.db"))
    target.import_file(str(path), namespace="restored")
    assert dump_namespace(target, "restored") == dump_namespace(source)
    assert target.list(include_forgotten=True) == []
    assert {n.namespace for n in target.list(namespace="restored", limit=100)} == {"restored"}


def test_other_model_re_embeds(make_memory, tmp_path: Path, exported) -> None:
    source, _, path = exported
    target = make_memory(str(tmp_path / "target.db"), embedder=FakeEmbedder(dimension=32))
    report = target.import_file(str(path))
    assert report.vectors_reused == 0 and report.needs_embedding == report.nodes == 9
    assert target.flush(20)
    stats = target.stats()
    assert stats.pending_embeddings == 0 and stats.dimension == 32
    want = dump_namespace(source)
    got = dump_namespace(target)
    assert got["nodes"] == want["nodes"] and got["edges"] == want["edges"]
    assert {len(v) for v in got["vectors"].values()} == {32 * 4}
    hits = target.search("cherry blossoms", recipe="vector")
    assert hits[0].memory.content == "In April, for the cherry blossoms"


def test_import_without_embedder(make_memory, tmp_path: Path, exported) -> None:
    _, ids, path = exported
    target = make_memory(str(tmp_path / "target.db"), embedder=None)
    report = target.import_file(str(path))
    assert report.nodes == 9 and report.vectors_reused == 0
    assert target.search("Kyoto hotel")[0].memory.id == ids["episode"]


def test_importing_twice_skips_existing_ids(make_memory, tmp_path: Path, exported) -> None:
    _, _, path = exported
    target = make_memory(str(tmp_path / "target.db"))
    first = target.import_file(str(path))
    before = dump_namespace(target)
    second = target.import_file(str(path))
    assert second.skipped == first.nodes and second.nodes == 0
    assert second.edges == 0 and second.versions == 0 and second.users == 0
    assert dump_namespace(target) == before


def _corrupt(lines: list[str], how: str) -> tuple[list[str], int]:
    """Break one line in the middle of the file; returns the lines and its 1-based number."""
    number = len(lines) // 2
    record = json.loads(lines[number - 1])
    if how == "not json":
        lines[number - 1] = lines[number - 1][:-5]
    elif how == "unknown kind":
        lines[number - 1] = json.dumps({**record, "kind": "mystery"})
    elif how == "missing kind":
        record.pop("kind")
        lines[number - 1] = json.dumps(record)
    elif how == "not an object":
        lines[number - 1] = "[1, 2, 3]"
    elif how == "bad field":
        number = next(i for i, line in enumerate(lines, 1) if '"kind": "node"' in line)
        record = json.loads(lines[number - 1])
        record["node"]["type"] = "dream"
        lines[number - 1] = json.dumps(record)
    elif how == "wrong format":
        number = 1
        lines[0] = json.dumps({**json.loads(lines[0]), "format": "other-tool"})
    return lines, number


@pytest.mark.parametrize(
    "how",
    ["not json", "unknown kind", "missing kind", "not an object", "bad field", "wrong format"],
)
def test_corrupted_line_names_the_line_and_imports_nothing(
    make_memory, tmp_path: Path, exported, how: str
) -> None:
    _, _, path = exported
    lines, number = _corrupt(path.read_text().splitlines(), how)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError) as exc:
        target.import_file(str(bad))
    assert f"line {number}" in exc.value.message
    assert exc.value.hint
    assert target.stats().nodes_by_type == {}
    assert target.service.store.people.list_users("default") == []


def test_corrupted_vector_names_the_line_and_imports_nothing(
    make_memory, tmp_path: Path, exported
) -> None:
    _, _, path = exported
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if '"vector": "' in line)
    record = json.loads(lines[number - 1])
    record["vector"] = "AAAA"  # 3 bytes: not a float32 vector
    lines[number - 1] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    try:
        with pytest.raises(ValidationError) as exc:
            target.import_file(str(bad))
        assert f"line {number}" in exc.value.message
    finally:
        assert target.stats().nodes_by_type == {}


@pytest.mark.parametrize(
    "field, value",
    [
        ("id", "not an id!"),
        ("confidence", 5.0),
        ("confidence", float("nan")),
        ("content", ""),
        ("content", "x" * 30_000),
    ],
    ids=["malformed id", "confidence 5", "confidence NaN", "empty content", "huge content"],
)
def test_import_rejects_invalid_node_fields(
    make_memory, tmp_path: Path, exported, field: str, value: Any
) -> None:
    _, _, path = exported
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if '"kind": "node"' in line)
    record = json.loads(lines[number - 1])
    record["node"][field] = value
    lines[number - 1] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    try:
        with pytest.raises(ValidationError) as exc:
            target.import_file(str(bad))
        assert f"line {number}" in exc.value.message
    finally:
        assert target.stats().nodes_by_type == {}


def test_import_is_one_transaction_a_failure_midway_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memloci.errors import StorageError

    src = Memory(str(tmp_path / "src.db"), embedder=FakeEmbedder())
    first = src.add("I moved to Lisbon", user="u1", session="s1")
    src.add("Nice, how is the weather?", user="u1", session="s1")
    src.remember("User prefers Friday due dates", user="u1")
    src.flush()
    out = str(tmp_path / "out.jsonl")
    src.export(out)
    src.close()

    dst = Memory(str(tmp_path / "dst.db"), embedder=FakeEmbedder())
    try:

        def boom(*args: object, **kwargs: object) -> None:
            raise StorageError("disk full (simulated)")

        monkeypatch.setattr(dst.service.store.memories, "insert_edges", boom)
        with pytest.raises(StorageError):
            dst.import_file(out)
        assert dst.count(include_forgotten=True) == 0
        with pytest.raises(NotFoundError):
            dst.get(first.id)
    finally:
        dst.close()


# ---------------------------------------------------------------- the write API's checks


def _line_of(lines: list[str], kind: str, **match: Any) -> int:
    """The 1-based number of the first ``kind`` line whose record (a node's: its node)
    has these field values."""
    for number, line in enumerate(lines, 1):
        record = json.loads(line)
        fields = record.get("node", {}) if kind == "node" else record
        if record["kind"] == kind and all(fields.get(k) == v for k, v in match.items()):
            return number
    raise AssertionError(f"no {kind} line with {match}")


@pytest.mark.parametrize(
    "kind, match, field, value, problem",
    [
        ("node", {"type": "episodic"}, "content", "nul \x00 here", "content contains a NUL"),
        ("node", {"type": "semantic"}, "content", "x" * 600, "content is 600 characters"),
        ("node", {"type": "semantic"}, "key", "!!!", "key needs at least one letter"),
        ("node", {"type": "episodic"}, "session", "  ", "invalid session id"),
        ("node", {}, "category", "c" * 300, "category is longer than 50"),
        ("node", {}, "version", -3, "version must be a whole number from 1"),
        ("node", {"user": "alice"}, "user", "x\x00y", "invalid user id"),
        ("node", {}, "speaker", "[" * 101, "speaker is 101 characters"),
        ("version", {}, "version", -3, "version must be a whole number from 1"),
        ("version", {}, "source_session", "\x1b[2J", "invalid session id"),
        ("edge", {}, "confidence", 7.5, "confidence must be between 0 and 1"),
        ("user", {}, "id", "bad\x00user", "invalid user id"),
        ("user", {}, "conversation_count", -5, "conversation_count must be a whole number"),
        ("user", {}, "merged_into", "nobody", "merged_into 'nobody' is not a user"),
    ],
    ids=[
        "NUL in content", "600-char fact", "key !!!", "blank session", "300-char category",
        "node version -3", "NUL in owner", "long speaker", "version -3", "escape in session",
        "edge confidence", "NUL in user id", "negative count", "merged into nobody",
    ],
)  # fmt: skip
def test_import_runs_the_write_apis_checks_and_writes_nothing(
    make_memory, tmp_path: Path, exported, kind: str, match: dict, field: str, value: Any,
    problem: str,
) -> None:  # fmt: skip
    _, _, path = exported
    lines = path.read_text().splitlines()
    number = _line_of(lines, kind, **match)
    record = json.loads(lines[number - 1])
    (record["node"] if kind == "node" else record)[field] = value
    lines[number - 1] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError) as exc:
        target.import_file(str(bad))
    assert exc.value.message.startswith(f"line {number} of the import is invalid")
    assert problem in exc.value.message
    assert target.stats().nodes_by_type == {}
    assert target.service.store.people.list_users("default") == []


def test_a_fact_version_longer_than_a_fact_is_refused(
    make_memory, tmp_path: Path, exported
) -> None:
    _, ids, path = exported
    lines = path.read_text().splitlines()
    number = _line_of(lines, "version", node_id=ids["fact"])
    record = json.loads(lines[number - 1])
    record["content"] = "y" * 501
    lines[number - 1] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match=f"line {number} .*content is 501 characters"):
        target.import_file(str(bad))
    assert target.stats().nodes_by_type == {}


@pytest.mark.parametrize("kind", ["node", "user", "edge", "version"])
def test_an_id_given_twice_in_one_file_is_refused(
    make_memory, tmp_path: Path, exported, kind: str
) -> None:
    """Two memories with one id were both written, the second under a new id."""
    _, _, path = exported
    lines = path.read_text().splitlines()
    first = _line_of(lines, kind)
    copy = json.loads(lines[first - 1])
    if kind == "node":
        copy["node"]["content"] = "A different memory under the same id"
    lines.append(json.dumps(copy))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError) as exc:
        target.import_file(str(bad))
    assert exc.value.message.startswith(f"line {len(lines)} of the import is invalid")
    assert f"given twice (also on line {first})" in exc.value.message
    assert target.stats().nodes_by_type == {}


def test_a_json_array_import_names_the_memory(make_memory, tmp_path: Path) -> None:
    array = tmp_path / "memories.json"
    array.write_text(
        json.dumps(
            [
                {"content": "The user likes green tea", "memory_type": "semantic"},
                {"content": "z" * 600, "memory_type": "semantic", "id": "a1B2c3D4"},
            ]
        )
    )
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError) as exc:
        target.import_file(str(array))
    assert exc.value.message == (
        "memory 2 of the array is invalid (memory 'a1B2c3D4'): content is 600 characters; "
        "the limit is 500"
    )
    assert target.count(include_forgotten=True) == 0


def test_a_record_without_a_scope_takes_its_narrowest_owner(make_memory, tmp_path: Path) -> None:
    """A hand-written JSON Lines record may leave ``scope`` out, as a write may."""
    now = "2024-01-01T00:00:00+00:00"
    times = {"event_time": now, "created_at": now, "updated_at": now, "valid_from": now}
    lines = [json.dumps({"kind": "header", "format": "memloci", "version": 1})]
    for mid, owner in (("Sc0peUs1", {"user": "sam"}), ("Sc0peGl1", {})):
        node = {"id": mid, "type": "semantic", "content": f"Fact {mid} stands", **times, **owner}
        lines.append(json.dumps({"kind": "node", "node": node}))
    path = tmp_path / "hand.jsonl"
    path.write_text("\n".join(lines) + "\n")
    target = make_memory(str(tmp_path / "target.db"))
    assert target.import_file(str(path)).nodes == 2
    assert target.get("Sc0peUs1").scope.value == "user"
    assert target.get("Sc0peGl1").scope.value == "global"


def test_a_directory_is_named_as_such(make_memory, tmp_path: Path) -> None:
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match="is a directory"):
        target.import_file(str(tmp_path))


def test_copying_a_namespace_into_another_in_one_store(make_memory, tmp_path: Path) -> None:
    """An export of namespace alpha imported into beta of the same store: a full copy
    (it imported nothing: every id "already present", in alpha), alpha untouched."""
    mem = make_memory(str(tmp_path / "one.db"))
    build_rich(mem)
    want = dump_namespace(mem)
    path = tmp_path / "default.jsonl"
    mem.export(str(path))
    report = mem.import_file(str(path), namespace="beta")
    assert report.nodes == 9 and report.skipped == 0
    assert report.edges == len(want["edges"]) and report.versions == len(want["versions"])
    assert dump_namespace(mem) == want  # the source namespace did not change
    copy = dump_namespace(mem, "beta")
    assert set(copy["nodes"]).isdisjoint(want["nodes"])
    assert len(copy["versions"]) == len(want["versions"])
    ends = {i for e in copy["edges"] for i in (e["source_id"], e["target_id"])}
    assert ends <= set(copy["nodes"])  # the edges join the copies
    assert {v["node_id"] for v in copy["versions"]} <= set(copy["nodes"])
    assert mem.lookup("employer", namespace="beta").content == "The user works at Globex Inc"
    again = mem.import_file(str(path), namespace="beta")
    assert again.nodes == 0 and again.skipped == 9
    assert dump_namespace(mem, "beta") == copy
