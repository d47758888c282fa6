"""Store selection by location (file path or database URL) and credential redaction."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from memloci import Memory
from memloci.errors import MissingExtraError, StorageError, ValidationError
from memloci.interfaces.cli import app
from memloci.runtime import Role
from memloci.service.compose import open_store
from memloci.storage.location import describe, is_database_url, is_postgres_url, redact_url
from memloci.storage.sqlite import SQLiteStore

SECRET = "s3cr3t-Pa55"
URL = f"postgresql://alice:{SECRET}@db.example.invalid:5432/memories"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (URL, "postgresql://alice:***@db.example.invalid:5432/memories"),
        ("postgres://bob:x@h/db?sslmode=require", "postgres://bob:***@h/db?sslmode=require"),
        ("postgresql://bob@h/db", "postgresql://bob@h/db"),
        ("postgresql://h:5432/db", "postgresql://h:5432/db"),
        ("postgresql://h/db?password=pw&user=u", "postgresql://h/db?password=***&user=u"),
        ("host=h password='a b' dbname=d", "host=h password=*** dbname=d"),
        (f"cannot open {URL}: refused", "cannot open postgresql://alice:***@db.example.invalid"
         ":5432/memories: refused"),
        ("memloci.db", "memloci.db"),
        ("/tmp/x:y@z.db", "/tmp/x:y@z.db"),
    ],
)  # fmt: skip
def test_redact_url_masks_every_password(text: str, expected: str) -> None:
    assert redact_url(text) == expected
    assert describe(text) == expected


def test_urls_and_paths_are_told_apart() -> None:
    assert is_postgres_url(URL) and is_postgres_url("postgres://h/d")
    assert is_postgres_url("POSTGRESQL+psycopg://h/d")
    assert is_database_url("mysql://h/d") and not is_postgres_url("mysql://h/d")
    for path in ("memloci.db", ":memory:", "./a/b.db", "C:\\data\\m.db", "~/m.db"):
        assert not is_database_url(path)


def test_open_store_opens_sqlite_for_paths(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "m.db"))
    try:
        assert isinstance(store, SQLiteStore)
    finally:
        store.close()
    memory = open_store(":memory:")
    memory.close()


def test_unknown_url_scheme_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        open_store(f"mysql://alice:{SECRET}@h/db")
    assert SECRET not in str(caught.value) and "alice:***@" in caught.value.message
    assert not list(tmp_path.iterdir())


def test_missing_postgres_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError) as caught:
        Memory(URL, embedder=None)
    assert "pip install 'memloci[postgres]'" in caught.value.message
    assert SECRET not in str(caught.value) and "alice:***@" in caught.value.message


def test_cli_never_prints_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    runner = CliRunner()
    env = {"MEMLOCI_PATH": URL}
    for args in (["serve", "--help"], ["memory", "list", "--help"], ["--help"]):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output
    result = runner.invoke(app, ["memory", "stats", "--embedder", "none"], env=env)
    assert result.exit_code == MissingExtraError.exit_code, result.output
    assert SECRET not in result.output and "alice:***@" in result.output
    result = runner.invoke(app, ["memory", "stats", "--db", URL, "--embedder", "none"])
    assert result.exit_code == MissingExtraError.exit_code, result.output
    assert SECRET not in result.output and "needs the postgres extra" in result.output


def test_role_store_path_keeps_urls_and_resolves_files(tmp_path: Path) -> None:
    cases = ((f"store_backend: postgres\n  store_path: '{URL}'", URL),
             ("store_path: team.db", str(tmp_path / "team.db")))  # fmt: skip
    for memory, expected in cases:
        role = Role.from_yaml(f"name: helper\nmemory:\n  {memory}\n", base_dir=tmp_path)
        assert role.store_path == expected
        assert role.to_settings()["path"] == expected
    for bad in (f"store_path: '{URL}'", "store_backend: postgres\n  store_path: x.db"):
        with pytest.raises(ValidationError) as caught:
            Role.from_yaml(f"name: helper\nmemory:\n  {bad}\n", base_dir=tmp_path)
        assert SECRET not in str(caught.value) and "store_backend" in str(caught.value)


def test_unreachable_server_error_hides_the_password() -> None:
    pytest.importorskip("psycopg", reason="needs the postgres extra")
    url = f"postgresql://alice:{SECRET}@127.0.0.1:1/memories?connect_timeout=5"
    with pytest.raises(StorageError) as caught:
        open_store(url)
    shown = f"{caught.value} {caught.value.to_dict()} {caught.value.__cause__!r}"
    assert SECRET not in shown
    assert "postgresql://alice:***@127.0.0.1:1/memories" in caught.value.message


def test_wrong_password_error_hides_it() -> None:
    url = os.environ.get("MEMLOCI_TEST_DATABASE_URL", "")
    parts = urlsplit(url)
    if not parts.password:
        pytest.skip("needs MEMLOCI_TEST_DATABASE_URL with a password (password auth)")
    wrong = url.replace(f":{parts.password}@", f":{SECRET}@", 1)
    with pytest.raises(StorageError) as caught:
        open_store(wrong)
    assert SECRET not in f"{caught.value} {caught.value.__cause__!r}"
    assert f"{parts.username}:***@" in caught.value.message
