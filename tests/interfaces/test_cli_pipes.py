"""The ``memloci`` command where it meets pipes, files and terminals: exports into a named
pipe, progress bars on a stderr that is not a terminal, tables at the width of one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memloci import Memory
from memloci.interfaces import cli_common
from memloci.interfaces.cli import app

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("clean_env")


def _memloci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``memloci ARGS`` in a subprocess: stdout and stderr are pipes, not terminals."""
    code = f"import sys; sys.argv = ['memloci', *{list(args)!r}]\n"
    code += "from memloci.interfaces.cli import main\nmain()\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    env.pop("FORCE_COLOR", None)
    env.pop("TTY_COMPATIBLE", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120,
        env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _store(path: Path, n: int = 3) -> str:
    with Memory(str(path), embedder=None) as m:
        for i in range(n):
            m.remember(f"Sam keeps bees in hive number {i}", user="sam")
    return str(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_an_export_into_a_named_pipe_reaches_its_reader(tmp_path: Path, fmt: str) -> None:
    """``-o /dev/stdout`` or a named pipe: the export is written into it, not renamed over
    it (the JSON array replaced the pipe — or, run as root, /dev/stdout itself — with a
    regular file, and its reader got nothing)."""
    db = _store(tmp_path / "m.db")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the export is under a pipe's buffer
    try:
        done = _memloci("memory", "export", "-o", str(fifo), "--format", fmt, "--db", db,
                        "--embedder", "none", cwd=tmp_path)  # fmt: skip
        text = os.read(reader, 1 << 16).decode()
    except BlockingIOError:  # nothing was written into the pipe
        text = ""
    finally:
        os.close(reader)
    assert done.returncode == 0, done.stderr
    assert fifo.is_fifo()  # still the pipe
    if fmt == "json":
        assert len(json.loads(text)) == 3
    else:
        records = [json.loads(line) for line in text.splitlines()]
        assert records[-1]["kind"] == "end"
        assert sum(r["kind"] == "node" for r in records) == 3


def test_progress_bars_stay_off_a_stderr_that_is_not_a_terminal(tmp_path: Path) -> None:
    """Piped or redirected (cron, CI), stderr gets the errors and notices only: no bar
    drawn once at the end, no spinner left half-way before an error."""
    db = _store(tmp_path / "m.db")
    backup = tmp_path / "backup.jsonl"
    assert _memloci("memory", "export", "-o", str(backup), "--db", db, "--embedder", "none",
                    cwd=tmp_path).returncode == 0  # fmt: skip
    loaded = _memloci("memory", "import", str(backup), "--db", str(tmp_path / "new.db"),
                      "--embedder", "fake", cwd=tmp_path)  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    assert "Imported 3 memories" in loaded.stdout
    assert loaded.stderr == ""
    (tmp_path / "bad.jsonl").write_text("not json\n", encoding="utf-8")
    failed = _memloci("memory", "import", "bad.jsonl", "--db", str(tmp_path / "new.db"),
                      "--embedder", "fake", cwd=tmp_path)  # fmt: skip
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: line 1 of the import is invalid"), failed.stderr
    moved = _memloci("migrate", "--from", db, "--to", str(tmp_path / "copy.db"), cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    assert moved.stderr == ""


def test_progress_bars_still_show_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_common.err, "_force_terminal", True)
    assert not cli_common.progress_bar().disable
    assert cli_common.progress_bar(quiet=True).disable


def test_knowledge_list_keeps_ids_and_paths_whole_at_80_columns(tmp_path: Path) -> None:
    """The id is what ``knowledge remove`` takes and the path says which document it is:
    at 80 columns the id was cut to ``VtFd4c…`` and the path column shrank to nothing."""
    db = tmp_path / "kb.db"
    doc = tmp_path / "install guide.md"
    doc.write_text("# Install\n\nRun the installer, then restart.\n", encoding="utf-8")
    added = runner.invoke(app, ["knowledge", "add", str(doc), "--db", str(db), "--json"])
    assert added.exit_code == 0, added.output
    source = json.loads(added.stdout)["files"][0]["source_id"]
    for width in (80, 100):
        shown = runner.invoke(app, ["knowledge", "list", "--db", str(db)],
                              env={"COLUMNS": str(width)})  # fmt: skip
        assert shown.exit_code == 0, shown.output
        lines = shown.stdout.splitlines()
        assert all(len(line) <= width for line in lines), shown.stdout
        assert source in shown.stdout
        assert "install" in shown.stdout and "guide.md" in shown.stdout


def test_a_stdout_that_cannot_encode_the_text_still_gets_it(tmp_path: Path) -> None:
    """A legacy encoding on stdout (a Windows redirect writes cp1252; PYTHONIOENCODING):
    an emoji or CJK memory failed with ``unexpected UnicodeEncodeError`` (exit 1). JSON
    comes as ASCII with ``\\u`` escapes — the same JSON, the text exactly; a table shows
    what the encoding cannot as a backslash escape."""
    text = "Sam said 🎉 and 中文 at the café"
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=None) as m:
        m.remember(text, user="sam")
    env = {"PYTHONIOENCODING": "latin-1"}
    code = "import sys; sys.argv = ['memloci', *sys.argv[1:]]\n"
    code += "from memloci.interfaces.cli import main\nmain()\n"
    base = [sys.executable, "-c", code, "--db", db, "--embedder", "none"]
    for args in (["memory", "list", "--json"], ["memory", "search", "café", "--json"]):
        done = subprocess.run([*base[:3], *args, *base[3:]], capture_output=True, timeout=120,
                              cwd=tmp_path, env={**os.environ, **env})  # fmt: skip
        assert done.returncode == 0, done.stderr.decode("latin-1")
        found = json.loads(done.stdout.decode("ascii"))
        assert text in json.dumps(found, ensure_ascii=False)
    shown = subprocess.run([*base[:3], "memory", "list", *base[3:]], capture_output=True,
                           timeout=120, cwd=tmp_path, env={**os.environ, **env})  # fmt: skip
    assert shown.returncode == 0, shown.stderr.decode("latin-1")
    assert "café" in shown.stdout.decode("latin-1")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_export_whose_reader_stops_ends_quietly(tmp_path: Path) -> None:
    """``memloci memory export -o /dev/stdout --format jsonl | head``: the reader leaves
    after a few lines; the export ends as every command does then (exit 1, nothing said),
    not with "error: cannot write … Broken pipe" (exit 2)."""
    import select
    import time

    db = tmp_path / "m.db"
    with Memory(str(db), embedder=None) as m:
        for i in range(600):  # far more than a pipe holds
            m.remember(f"Sam keeps bees in hive number {i}, " + "the hive is busy " * 8, user="sam")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    code = "import sys; sys.argv = ['memloci', 'memory', 'export', '-o', sys.argv[1], "
    code += "'--format', 'jsonl', '--db', sys.argv[2], '--embedder', 'none']\n"
    code += "from memloci.interfaces.cli import main\nmain()\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(fifo), str(db)], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        got = b""
        while not got and time.monotonic() < deadline:  # the first lines, then leave
            select.select([reader], [], [], 1.0)
            try:
                got = os.read(reader, 200)
            except BlockingIOError:
                got = b""
    finally:
        os.close(reader)
    _, err = proc.communicate(timeout=120)
    assert got.startswith(b"{")
    assert "cannot write" not in err and "Broken pipe" not in err, err
    assert proc.returncode == 1, err
