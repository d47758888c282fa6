"""``file_watch`` triggers (reference 004's daemon mode): a role file's trigger is
validated, and the runner starts one run when a real file at the watched path (a file,
a folder or a glob) is created, changed or deleted — found by polling mtimes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from memloci.errors import ValidationError
from memloci.runtime import Role
from memloci.runtime.run_config import TriggerConfig
from memloci.runtime.triggers import TriggerRunner, scan


def _watch(path: str, **extra: Any) -> TriggerConfig:
    return TriggerConfig(type="file_watch", path=path, poll="0.02s", **extra)


async def _serve_until(runner: TriggerRunner, act: Any) -> int:
    serving = asyncio.create_task(runner.serve(signals=False))
    await asyncio.sleep(0.1)  # the first look has been taken
    await asyncio.to_thread(act)
    return await asyncio.wait_for(serving, timeout=10)


def _bump(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 2_000_000_000  # a coarse-mtime file system too
    os.utime(path, ns=(stamp, stamp))


@pytest.mark.parametrize("watched", ["notes.md", "*.md", "."])
def test_a_changed_file_starts_one_run(tmp_path: Path, watched: str) -> None:
    note = tmp_path / "notes.md"
    note.write_text("first", encoding="utf-8")
    (tmp_path / "other.txt").write_text("unrelated", encoding="utf-8")
    calls: list[tuple[str, Mapping[str, Any]]] = []

    async def execute(task: str, trigger: Mapping[str, Any]) -> None:
        calls.append((task, dict(trigger)))

    path = str(tmp_path / watched)
    runner = TriggerRunner(execute, [_watch(path, prompt="Summarise the notes")], max_runs=1)
    runs = asyncio.run(_serve_until(runner, lambda: _bump(note, "second")))
    assert runs == 1 and len(calls) == 1
    task, meta = calls[0]
    assert task == f"Summarise the notes\n\nChanged files: {note}"
    assert meta == {"trigger_type": "file_watch", "path": path, "changed": [str(note)]}


def test_created_and_deleted_files_count_and_the_first_look_only_takes_stock(
    tmp_path: Path,
) -> None:
    (tmp_path / "old.md").write_text("here before", encoding="utf-8")
    seen = scan(str(tmp_path / "*.md"))
    assert list(seen) == [str(tmp_path / "old.md")]
    calls: list[Mapping[str, Any]] = []

    async def execute(task: str, trigger: Mapping[str, Any]) -> None:
        calls.append(trigger)

    def act() -> None:
        (tmp_path / "new.md").write_text("fresh", encoding="utf-8")
        (tmp_path / "old.md").unlink()

    runner = TriggerRunner(execute, [_watch(str(tmp_path / "*.md"))], max_runs=1)
    assert asyncio.run(_serve_until(runner, act)) == 1
    assert sorted(calls[0]["changed"]) == [str(tmp_path / "new.md"), str(tmp_path / "old.md")]


def test_a_role_files_file_watch_trigger_is_validated_and_resolved(tmp_path: Path) -> None:
    r = Role.from_mapping(
        {"triggers": [{"type": "file_watch", "path": "inbox/*.md", "poll": "2s"}]},
        base_dir=tmp_path,
    )
    (trig,) = r.resolved_triggers
    assert trig.path == str(tmp_path / "inbox" / "*.md") and trig.seconds == 2.0
    assert TriggerConfig(type="file_watch", path="x").seconds == 1.0  # default poll
    for bad, message in [
        ({"type": "file_watch"}, "a file_watch trigger needs path:"),
        ({"type": "file_watch", "path": "x", "every": "1m"}, "not every:, schedule: or port:"),
        ({"type": "file_watch", "path": "x", "poll": "0s"}, "poll '0s' must be over 0"),
        ({"type": "file_watch", "path": "x", "poll": "2h"}, "at most 1h"),
        ({"type": "cron", "every": "1m", "path": "x"}, "are for file_watch triggers"),
        ({"type": "inotify", "path": "x"}, "must be one of"),
    ]:
        with pytest.raises(ValidationError) as info:
            Role.from_mapping({"triggers": [bad]})
        assert message in str(info.value), (bad, str(info.value))
