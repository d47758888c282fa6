"""Export files as a backup: written whole or not at all, an ``end`` line that catches a
file cut short, a byte order mark, format versions; and the import's checks of what a
file may hold that no write accepts (a vector that is not finite, bad procedure triggers)."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memloci import Memory
from memloci.errors import StorageError, ValidationError
from memloci.service.transfer import VERSION, write_lines


@pytest.fixture
def source(make_memory: Any, tmp_path: Path) -> Memory:
    mem: Memory = make_memory(str(tmp_path / "source.db"))
    mem.add(
        [
            {"role": "user", "content": "I moved to Lisbon last year"},
            {"role": "assistant", "content": "How do you like it there?"},
        ],
        user="sam", session="s1",
    )  # fmt: skip
    mem.remember("My favourite dessert is banana bread", user="sam")
    mem.remember("The user's dog is called Biscuit", user="sam")
    assert mem.flush(20)
    return mem


@pytest.fixture
def backup(source: Memory, tmp_path: Path) -> Path:
    path = tmp_path / "backup.jsonl"
    source.export(str(path))
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def save(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


# ---------------------------------------------------------------------- writing
def test_a_failed_export_keeps_the_previous_backup(
    source: Memory, backup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = backup.read_bytes()

    def failing(*args: Any, **kwargs: Any) -> Iterator[str]:
        yield json.dumps({"kind": "header", "format": "memloci", "version": VERSION})
        raise StorageError("the store went away")

    monkeypatch.setattr(source.service.admin, "export_lines", failing)
    with pytest.raises(StorageError):
        source.export(str(backup))
    assert backup.read_bytes() == before  # not truncated, not half written
    assert [p.name for p in backup.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_write_error_is_a_validation_error_and_leaves_no_file(tmp_path: Path) -> None:
    def lines() -> Iterator[str]:
        yield "{}"
        raise OSError(28, "No space left on device")

    target = tmp_path / "new.jsonl"
    with pytest.raises(ValidationError, match="No space left"):
        write_lines(str(target), lines())
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- the end line
def test_an_export_ends_with_a_line_counting_its_records(backup: Path) -> None:
    rows = records(backup)
    assert rows[0]["kind"] == "header" and rows[0]["version"] == VERSION == 3
    assert rows[-1] == {"kind": "end", "records": len(rows) - 2}


@pytest.mark.parametrize("cut", ["last lines", "end line only", "a middle line"])
def test_a_backup_cut_short_is_refused(
    make_memory: Any, backup: Path, tmp_path: Path, cut: str
) -> None:
    rows = records(backup)
    if cut == "last lines":
        rows = rows[:3]
    elif cut == "end line only":
        rows = rows[:-1]
    else:
        del rows[2]
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match="cut short") as exc:
        target.import_file(str(save(tmp_path / "cut.jsonl", rows)))
    assert "nothing was imported" in str(exc.value.hint)
    assert target.count(include_forgotten=True) == 0


def test_a_version_1_backup_without_an_end_line_imports(
    make_memory: Any, source: Memory, backup: Path, tmp_path: Path
) -> None:
    rows = records(backup)[:-1]
    rows[0]["version"] = 1
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(save(tmp_path / "old.jsonl", rows)))
    assert report.nodes == source.count(include_forgotten=True) == 4


def test_records_may_follow_the_end_line(make_memory: Any, backup: Path, tmp_path: Path) -> None:
    """Records added by hand after an export, or another export appended, still import."""
    now = "2024-01-01T00:00:00+00:00"
    node = {"id": "Hand0001", "type": "semantic", "content": "The user likes jazz music",
            "event_time": now, "created_at": now, "updated_at": now, "valid_from": now}  # fmt: skip
    rows = [*records(backup), {"kind": "node", "node": node}]
    target = make_memory(str(tmp_path / "target.db"))
    assert target.import_file(str(save(tmp_path / "more.jsonl", rows))).nodes == 5


# ---------------------------------------------------------------------- header
def test_a_byte_order_mark_is_not_a_line(make_memory: Any, backup: Path, tmp_path: Path) -> None:
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + backup.read_bytes())
    target = make_memory(str(tmp_path / "target.db"))
    assert target.import_file(str(bom)).nodes == 4
    array = tmp_path / "bom.json"
    array.write_bytes(b"\xef\xbb\xbf" + b'[{"content": "The user likes green tea"}]')
    assert target.import_file(str(array), namespace="other").nodes == 1


def test_a_newer_format_version_is_refused(make_memory: Any, backup: Path, tmp_path: Path) -> None:
    rows = records(backup)
    rows[0]["version"] = 99
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match="format version 99, newer") as exc:
        target.import_file(str(save(tmp_path / "new.jsonl", rows)))
    assert "upgrade memloci" in str(exc.value.hint)
    rows[0]["version"] = "2"
    with pytest.raises(ValidationError, match="line 1 "):
        target.import_file(str(save(tmp_path / "text.jsonl", rows)))
    assert target.count(include_forgotten=True) == 0


# ---------------------------------------------------------------------- records
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_vector_that_is_not_finite_is_embedded_again(
    make_memory: Any, backup: Path, tmp_path: Path, bad: float
) -> None:
    rows = records(backup)
    at, row = next((i, r) for i, r in enumerate(rows, 1) if r["kind"] == "node" and r["vector"])
    size = len(base64.b64decode(row["vector"])) // 4
    row["vector"] = base64.b64encode(np.full(size, bad, np.float32).tobytes()).decode()
    target = make_memory(str(tmp_path / "target.db"))
    report = target.import_file(str(save(tmp_path / "nan.jsonl", rows)))
    assert report.needs_embedding == 1 and report.vectors_reused == report.nodes - 1
    assert report.errors == [
        f"line {at} (memory {row['node']['id']!r}): its vector is not finite (NaN or "
        "infinity): it is embedded again"
    ]
    assert target.flush(20)
    vectors = target.service.store.search.vectors("default", [row["node"]["id"]])
    assert np.isfinite(np.frombuffer(vectors[row["node"]["id"]], np.float32)).all()
    hits = target.search("banana bread", user="sam")
    assert hits and all(math.isfinite(h.score) for h in hits)


@pytest.mark.parametrize(
    "triggers",
    [{"goal_contains": []}, {"when": ["deploy"]}, {"goal_contains": [5]}, ["deploy"]],
    ids=["empty list", "unknown key", "not text", "not an object"],
)
def test_procedure_triggers_are_checked_as_learn_procedure_checks_them(
    make_memory: Any, tmp_path: Path, triggers: Any
) -> None:
    """A bad trigger would make the procedure a standing instruction in every prompt."""
    target = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError):
        target.learn_procedure("Always run the tests before deploying", triggers=triggers)
    now = "2024-01-01T00:00:00Z"
    node = {"id": "Trig0001", "type": "procedural", "scope": "global",
            "content": "Always run the tests before deploying", "event_time": now,
            "created_at": now, "updated_at": now, "valid_from": now,
            "procedure": {"triggers": triggers}}  # fmt: skip
    rows = [{"kind": "header", "format": "memloci", "version": 1}, {"kind": "node", "node": node}]
    with pytest.raises(ValidationError, match=r"line 2 .*trigger") as exc:
        target.import_file(str(save(tmp_path / "trig.jsonl", rows)))
    assert "nothing was imported" in str(exc.value.hint)
    assert target.count(include_forgotten=True) == 0
    assert "run the tests" not in target.context("what should I cook tonight")


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\ufeff"])
def test_an_empty_file_is_no_export(make_memory: Any, tmp_path: Path, content: str) -> None:
    """Every export has at least its header line: an empty file (a truncated download, the
    wrong path) was "Imported 0 memories", as if it had been a backup of nothing."""
    path = tmp_path / "empty.jsonl"
    path.write_text(content, "utf-8")
    target: Memory = make_memory(str(tmp_path / "target.db"))
    with pytest.raises(ValidationError, match="is empty: not a memloci export"):
        target.import_file(str(path))


def test_a_new_backup_is_for_its_owner_only(source: Memory, tmp_path: Path) -> None:
    """The store is 0600 (what people said is private); its export was 0644 by the umask,
    readable by anyone on the machine. A backup written over keeps the mode it had."""
    import os
    import stat

    path = tmp_path / "new.jsonl"
    source.export(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o640)
    source.export(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
