"""``memloci knowledge …`` through typer's CliRunner with the fake embedder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from memloci.interfaces.cli import app

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "kb.db"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "guide.md").write_text(
        "# Guide\n\n## Install\n\nRun apt install kettle on Debian.\n\n"
        "## Care\n\nDescale the kettle every month.\n",
        encoding="utf-8",
    )
    (folder / "sub" / "faq.txt").write_text("Refunds take five working days.\n", "utf-8")
    (folder / "photo.txt").write_bytes(b"\x89PNG\x00\x00")
    (folder / "script.py").write_text("print('not included')\n", "utf-8")
    return folder


def run(db: Path, *args: str) -> Result:
    return runner.invoke(app, ["knowledge", *args, "--db", str(db), "--embedder", "fake"])


def ok(db: Path, *args: str) -> Result:
    result = run(db, *args)
    assert result.exit_code == 0, result.output
    return result


def as_json(db: Path, *args: str) -> Any:
    return json.loads(ok(db, *args, "--json").stdout)


def test_add_search_list_remove(db: Path, docs: Path) -> None:
    report = as_json(db, "add", str(docs))
    assert (report["added"], report["skipped"], report["chunks"]) == (2, 1, 3)
    skipped = [f for f in report["files"] if f["action"] == "skipped"]
    assert skipped[0]["path"].endswith("photo.txt") and "binary" in skipped[0]["reason"]
    assert all(not f["path"].endswith("script.py") for f in report["files"])

    again = ok(db, "add", str(docs))
    assert "0 added, 0 updated, 2 unchanged, 1 skipped" in again.stdout
    assert "skipped" in again.stderr and "photo.txt" in again.stderr

    hits = as_json(db, "search", "descale the kettle", "-k", "2", "--threshold", "0.1")
    assert hits[0]["heading"] == "Guide > Care" and hits[0]["text"].startswith("Descale")
    assert len(hits) <= 2 and hits[0]["score"] >= 0.1
    table = ok(db, "search", "descale the kettle").stdout
    assert "Guide > Care" in table and "Descale" in table

    sources = as_json(db, "list")
    assert sorted(Path(s["path"]).name for s in sources) == ["faq.txt", "guide.md"]
    assert "guide.md" in ok(db, "list").stdout

    faq = next(s for s in sources if s["path"].endswith("faq.txt"))
    removed = as_json(db, "remove", faq["id"])
    assert removed["action"] == "removed" and removed["sources"][0]["id"] == faq["id"]
    gone = ok(db, "remove", str(docs))
    assert "removed: 1 source(s) and their 2 chunks." in gone.stdout
    assert as_json(db, "list") == []
    assert "No knowledge yet" in ok(db, "list").stderr


def test_changed_file_is_updated_and_collections_filter(db: Path, docs: Path) -> None:
    ok(db, "add", str(docs / "guide.md"), "--collection", "manual")
    ok(db, "add", str(docs / "sub"), "-c", "faq")
    faq_only = as_json(db, "search", "kettle refunds", "--collection", "faq", "-t", "0")
    assert {h["collection"] for h in faq_only} == {"faq"}
    (docs / "guide.md").write_text("# Guide\n\nBoil water only.\n", encoding="utf-8")
    report = as_json(db, "add", str(docs / "guide.md"), "--collection", "manual")
    assert report["updated"] == 1 and report["chunks"] == 1
    assert [s["chunk_count"] for s in as_json(db, "list", "--collection", "manual")] == [1]


def test_glob_option(db: Path, docs: Path) -> None:
    report = as_json(db, "add", str(docs), "--glob", "*.py", "-g", "*.txt")
    names = sorted(Path(f["path"]).name for f in report["files"] if f["action"] == "added")
    assert names == ["faq.txt", "script.py"]


def test_errors_are_clear_and_write_nothing(db: Path, docs: Path) -> None:
    missing = run(db, "add", str(docs), str(docs / "nope.md"))
    assert missing.exit_code == 3
    assert "error: no such file or folder:" in missing.stderr and "nope.md" in missing.stderr
    assert "hint:" in missing.stderr and "Traceback" not in missing.output
    assert as_json(db, "list") == []
    unknown = run(db, "remove", "zzzzzzzz")
    assert unknown.exit_code == 3 and "knowledge list" in unknown.stderr
    bad = run(db, "search", "kettle", "--threshold", "2")
    assert bad.exit_code == 2 and "threshold" in bad.stderr
    nothing = ok(db, "search", "unrelated words entirely", "--threshold", "0.99")
    assert nothing.stdout == "" and "No knowledge in namespace 'default' yet" in nothing.stderr
    no_store = runner.invoke(app, ["knowledge", "list", "--db", str(db.parent / "new.db")])
    assert no_store.exit_code == 3


def test_a_folder_with_odd_files_adds_the_rest(db: Path, tmp_path: Path) -> None:
    """A name that is not UTF-8, a NUL past the first 8 KB, a named pipe: each is
    skipped with a note on stderr, and the rest of the folder is added (exit 0)."""
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe kettle is in the kitchen.\n", "utf-8")
    (folder / "log.txt").write_bytes(b"A" * 9000 + b"\n\nNUL \x00 here\n")
    try:
        (folder / os.fsdecode(b"caf\xe9.md")).write_text("# Caf\n\nOn floor two.\n", "utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "pipe.md")
    result = ok(db, "add", str(folder), str(folder / "pipe.md"))
    assert "skipped" in result.stderr and "caf\\xe9.md: its name is not UTF-8" in result.stderr
    assert "log.txt: binary file" in result.stderr
    assert "pipe.md: not a regular file" in result.stderr
    assert [Path(s["path"]).name for s in as_json(db, "list")] == ["good.md"]


def test_searching_a_collection_that_does_not_exist_says_so(db: Path, docs: Path) -> None:
    """A mistyped collection is not a threshold that is too high."""
    empty = ok(db, "add", str(docs / "sub"), "-c", "faq")  # creates the store
    assert empty.exit_code == 0
    typo = ok(db, "search", "refunds", "-c", "fqa")
    assert typo.stdout == "" and "no collection 'fqa'" in typo.stderr
    assert "faq" in typo.stderr and "threshold" not in typo.stderr
    high = ok(db, "search", "unrelated words entirely", "-c", "faq", "--threshold", "0.99")
    assert high.stdout == "" and "No knowledge chunk scored 0.99" in high.stderr
    other = ok(db, "search", "refunds", "-c", "faq", "-n", "shop")
    assert "No knowledge in namespace 'shop'" in other.stderr and "knowledge add" in other.stderr


def test_a_file_overwritten_with_binary_is_removed_and_said_so(db: Path, docs: Path) -> None:
    faq = docs / "sub" / "faq.txt"
    ok(db, "add", str(faq))
    faq.write_bytes(b"\x00\x01\x02")
    result = ok(db, "add", str(faq))
    assert "faq.txt: binary file" in result.stderr and "removed" in result.stderr
    assert "No files matched" not in result.stderr and "1 removed" in result.stdout
    assert as_json(db, "list") == []


def test_search_scores_are_rounded(db: Path, docs: Path) -> None:
    """Scores read as 0.8123, not 0.8122849464416504 (JSON and the table)."""
    ok(db, "add", str(docs))
    hits = as_json(db, "search", "how do I look after the kettle", "-t", "0")
    scores = [h["score"] for h in hits]
    assert scores and any(0 < s < 1 for s in scores)  # similarities, not only 1.0
    assert all(s == round(s, 4) and len(repr(s)) <= 6 for s in scores), scores
    table = ok(db, "search", "how do I look after the kettle", "-t", "0").stdout
    assert f"{scores[0]:.3f}" in table
