"""User mistakes at the ``memloci`` command line: each gets a clear ``error:`` line, the
documented exit code, and a hint that works as printed."""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memloci import Memory
from memloci.interfaces.cli import app

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("clean_env")


def run(*args: str, **env: str) -> Result:
    return runner.invoke(app, list(args), env=env or None)


@pytest.mark.parametrize(
    "args",
    [
        ("memory", "add", "I moved to Lisbon"),
        ("memory", "list"),
        ("memory", "search", "Lisbon"),
        ("memory", "stats"),
    ],
)
def test_an_empty_store_path_is_a_usage_error(
    args: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--db "$DB"`` with DB unset (or ``MEMLOCI_PATH=``): SQLite took the empty name for
    a private temporary database, and the command failed with ``unexpected
    OperationalError: no such table: meta`` (exit 1, "report it if it is a bug")."""
    monkeypatch.chdir(tmp_path)
    for result in (
        run(*args, "--db", "", "--embedder", "fake"),
        run(*args, "--embedder", "fake", MEMLOCI_PATH=""),
    ):
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: invalid setting path"), result.stderr
        assert "unexpected" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def _flags(hint: str) -> list[str]:
    return re.findall(r"--[a-z][a-z-]*", hint)


def test_the_refusals_hint_names_only_options_the_command_takes(tmp_path: Path) -> None:
    """Without a terminal to ask on, a destructive command refuses and says how to confirm;
    the hint said ``pass --yes (or --force)``, and ``reembed``, ``memory delete --purge``
    and ``users forget`` have no ``--force`` (``No such option``)."""
    db = str(tmp_path / "m.db")
    with Memory(db, embedder="fake") as m:
        m.add("Sam keeps bees on the roof", user="sam")
        turn = m.remember("Bo keeps a canoe in the garage", user="bo").memory
        m.add("Cy walks to work every day", user="cy")  # left for clear
    commands = {
        "reembed": ["reembed", "--db", db, "--embedder", "fake"],
        "forget": ["users", "forget", "sam", "--db", db],
        "delete": ["memory", "delete", turn.id, "--purge", "--db", db, "--embedder", "fake"],
        "clear": ["memory", "clear", "--db", db, "--embedder", "fake"],
    }
    with Memory(db, embedder="fake") as m:  # reembed asks only when it would drop vectors
        m.service.store.set_meta("document_form", "1")
    for name, args in commands.items():
        refused = run(*args)
        assert refused.exit_code == 2, (name, refused.output)
        hint = refused.stderr.partition("hint: ")[2]
        assert _flags(hint), (name, refused.stderr)
        for flag in _flags(hint):
            took = run(*args, flag)
            assert "No such option" not in took.output, (name, flag)


def test_init_prints_a_chat_command_that_works_as_printed(tmp_path: Path) -> None:
    path = tmp_path / "my roles" / "support bot.yaml"
    done = run("init", str(path))
    assert done.exit_code == 0, done.output
    printed = done.stderr.split("start the agent with: ", 1)[1].strip()
    assert shlex.split(printed) == ["memloci", "chat", str(path)]


def test_a_damaged_store_is_a_database_error_not_a_bug(tmp_path: Path) -> None:
    """A store whose pages were overwritten (a bad disk, a copy cut short) fails with the
    documented exit 8 and a hint to restore it, not ``unexpected DatabaseError`` (exit 1,
    "report it if it is a bug")."""
    db = tmp_path / "m.db"
    with Memory(str(db), embedder=None) as m:
        for i in range(200):
            m.remember(f"Sam planted tree number {i} in the orchard", user="sam")
    with sqlite3.connect(db) as conn:  # the root page of the memories' table
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'nodes'").fetchone()
    conn.close()
    with open(db, "r+b") as fh:  # overwritten with garbage, as a bad disk would
        fh.seek((root[0] - 1) * page)
        fh.write(b"\xff" * page)
    for args in (("memory", "list"), ("memory", "search", "orchard tree")):
        result = run(*args, "--db", str(db), "--embedder", "none")
        assert result.exit_code == 8, result.output
        assert "unexpected" not in result.stderr
        assert result.stderr.startswith("error: "), result.stderr
        assert "malformed" in result.stderr and "hint: " in result.stderr


def _store(path: Path, text: str) -> str:
    with Memory(str(path), embedder=None) as m:
        m.remember(text, user="sam")
    return str(path)


@pytest.mark.parametrize("how", ["argument", "-o"])
def test_an_export_never_overwrites_a_store(how: str, tmp_path: Path) -> None:
    """``memloci memory export team.db`` (meaning: export that store) with a default store
    about wrote the JSON of the default store over team.db — the SQLite store was gone."""
    default = _store(tmp_path / "memloci.db", "Sam lives in Lisbon")
    team = _store(tmp_path / "team.db", "The team deploys on Fridays")
    before = Path(team).read_bytes()
    target = [team] if how == "argument" else ["-o", team]
    result = run("memory", "export", *target, "--embedder", "none", MEMLOCI_PATH=default)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert "--db" in result.stderr  # the hint: how to export that store
    assert Path(team).read_bytes() == before
    with Memory(team, embedder=None) as m:
        assert [n.content for n in m.list()] == ["The team deploys on Fridays"]


def test_a_store_given_as_the_role_file_says_to_use_db(tmp_path: Path) -> None:
    team = _store(tmp_path / "team.db", "The team deploys on Fridays")
    result = run("memory", "list", team, "--embedder", "none")
    assert result.exit_code == 2
    assert "not a role file" in result.stderr and f"--db {team}" in result.stderr
    assert "codec" not in result.stderr


def test_importing_a_store_says_how_to_copy_one(tmp_path: Path) -> None:
    team = _store(tmp_path / "team.db", "The team deploys on Fridays")
    result = run("memory", "import", team, "--db", str(tmp_path / "new.db"), "--embedder", "none")
    assert result.exit_code == 2
    assert "codec" not in result.stderr and "memloci migrate" in result.stderr
    assert not (tmp_path / "new.db").exists()


def test_clear_json_has_the_same_fields_with_or_without_a_store(tmp_path: Path) -> None:
    """A script reading ``memory clear --json`` finds ``found``, ``namespace`` and ``user``
    either way (the missing-store answer lacked ``namespace`` and ``user``, the other one
    ``found``)."""
    import json

    db = _store(tmp_path / "m.db", "Sam keeps bees on the roof")
    answers = [
        json.loads(run("memory", "clear", "--yes", "-n", "default", "--json", "--db", path,
                       "--embedder", "none").stdout)
        for path in (db, str(tmp_path / "missing.db"))
    ]  # fmt: skip
    assert answers[0].keys() == answers[1].keys()
    assert answers[0]["found"] is True and answers[1]["found"] is False
    assert answers[0]["namespace"] == answers[1]["namespace"] == "default"
