"""The root command loads subcommands on use: ``memloci --help`` imports none of them and
reads the same as with every command loaded; a one-shot command loads only its own."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from typing import Any

import pytest

from memloci.interfaces.cli_lazy import LAZY, load


def _help_line(name: str) -> str:
    command = load(name)
    text = command.help or ""
    if not text and command.callback is not None:
        text = inspect.getdoc(command.callback) or ""
    return text.split("\n\n")[0].strip()


def help_loading(args: list[str], heavy: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Run ``memloci ARGS`` in a fresh interpreter; its stdout ends with ``LOADED [...]``,
    the modules of ``heavy`` (prefixes) that the command imported."""
    code = (
        "import sys\n"
        "from memloci.interfaces.cli import app\n"  # main() would leave via os._exit
        f"sys.argv = ['memloci', *{args!r}]\n"
        "try:\n    app(prog_name='memloci')\n"
        "except SystemExit:\n    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))\n"
        "print('LOADED', heavy)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize("name", list(LAZY))
def test_each_listed_help_line_is_the_commands_own(name: str) -> None:
    assert LAZY[name].help == _help_line(name)


@pytest.mark.parametrize("name", [*LAZY, "reembed", "demo"])
def test_each_listed_help_line_is_one_sentence_on_one_line(name: str) -> None:
    """The root help lists a command by its summary: one line, so it never breaks
    mid-sentence ("(--every, --webhook," then the rest on a line of its own)."""
    if name in LAZY:
        line = LAZY[name].help
    else:
        from memloci.interfaces import cli

        line = (inspect.getdoc(getattr(cli, name)) or "").split("\n\n")[0]
    assert line and "\n" not in line, repr(line)


def test_root_help_imports_no_command_module() -> None:
    done = help_loading(
        ["--help"],
        ("memloci.sdk", "memloci.service", "memloci.storage", "memloci.interfaces.cli_memory",
         "numpy", "httpx", "fastapi", "onnxruntime"),
    )  # fmt: skip
    assert "LOADED []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Lisbon" in done.stdout
    for name in LAZY:  # every command is listed
        assert f" {name} " in done.stdout


def test_group_help_loads_no_sdk() -> None:
    """``memloci memory --help`` (and ``memloci memory``) list the commands without the
    SDK, the storage, the runtime, the embedding model or pydantic (the option choices
    come from :mod:`memloci.kinds`)."""
    done = help_loading(
        ["memory", "--help"],
        ("memloci.sdk", "memloci.service", "memloci.storage", "memloci.runtime",
         "memloci.config", "memloci.tools", "memloci.models", "numpy", "onnxruntime",
         "pydantic", "yaml"),
    )  # fmt: skip
    assert "LOADED []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Lisbon" in done.stdout
    for name in ("search", "consolidate", "export", "import"):
        assert f" {name} " in done.stdout


def test_root_help_is_the_same_with_every_command_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from memloci.interfaces.cli import app
    from memloci.interfaces.cli_groups import GuardedGroup
    from memloci.interfaces.cli_lazy import LazyGroup

    lazy = CliRunner().invoke(app, ["--help"], terminal_width=100)

    def loaded_command(self: LazyGroup, ctx: Any, name: str) -> Any:
        return load(name) if name in LAZY else GuardedGroup.get_command(self, ctx, name)

    monkeypatch.setattr(LazyGroup, "get_command", loaded_command)
    loaded = CliRunner().invoke(app, ["--help"], terminal_width=100)
    assert lazy.exit_code == 0 and loaded.exit_code == 0
    assert lazy.output == loaded.output


def test_one_shot_search_loads_no_runtime_or_tools(tmp_path: Any) -> None:
    """A plain ``memloci memory search`` needs the SDK and the store, not the agent
    runtime (threads, roles, YAML) or the tool definitions."""
    from memloci import Memory

    db = str(tmp_path / "m.db")
    with Memory(db, embedder=None) as m:
        m.remember("Sam lives in Lisbon", user="sam")
    code = (
        "import sys\n"
        "from memloci.interfaces.cli import app\n"  # main() would leave via os._exit
        f"sys.argv = ['memloci', 'memory', 'search', 'Lisbon', '--db', {db!r}, "
        "'--embedder', 'none', '--user', 'sam']\n"
        "try:\n    app(prog_name='memloci')\n"
        "except SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('memloci.runtime', "
        "'memloci.tools', 'memloci.sdk_tools', 'yaml')))\n"
        "print('LOADED', heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "LOADED []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Lisbon" in done.stdout


def test_prewarm_only_loads_the_model_the_command_will_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memloci.interfaces import cli_common
    from memloci.interfaces.cli_common import EmbedderName, prewarm

    monkeypatch.setattr(cli_common, "_EARLY", [])
    prewarm(EmbedderName.FAKE)
    prewarm(EmbedderName.NONE)
    monkeypatch.setenv("MEMLOCI_EMBEDDER", "openai")
    prewarm(None)
    monkeypatch.delenv("MEMLOCI_EMBEDDER")
    monkeypatch.setenv("memloci_embedder_options", '{"model_path": "elsewhere.onnx"}')
    prewarm(EmbedderName.LOCAL)
    assert cli_common._EARLY == []


def test_embedder_named_on_the_command_line_before_parsing() -> None:
    from memloci.interfaces.cli_common import EmbedderName, embedder_in

    assert embedder_in(["where", "--user", "sam"]) == (True, None)
    assert embedder_in(["q", "--embedder", "fake"]) == (True, EmbedderName.FAKE)
    assert embedder_in(["q", "--embedder=LOCAL"]) == (True, EmbedderName.LOCAL)
    assert embedder_in(["q", "--embedder", "nope"]) == (False, None)
    assert embedder_in(["q", "--embedder"]) == (False, None)
    assert embedder_in(["q", "--help"]) == (False, None)
    assert embedder_in(["--", "--embedder", "fake"]) == (True, None)


def test_a_missing_store_is_not_prewarmed_for(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memloci.interfaces.cli_common import store_missing

    monkeypatch.delenv("MEMLOCI_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    assert store_missing(["q"])  # ./memloci.db does not exist
    (tmp_path / "there.db").write_bytes(b"")
    assert not store_missing(["q", "--db", str(tmp_path / "there.db")])
    assert store_missing(["q", "--db=" + str(tmp_path / "gone.db")])
    assert not store_missing(["q", "--db", "postgresql://u@h/db"])
    monkeypatch.setenv("MEMLOCI_PATH", str(tmp_path / "there.db"))
    assert not store_missing(["q"])
    assert store_missing(["q", "--db"])  # no value: cannot tell


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["migrate", "--help"], "entities, users, threads, sessions, knowledge and API keys"),
        (["users", "forget", "--help"], "identifier and entity only they mention goes"),
        (["knowledge", "add", "--help"], "--glob '*.md' --glob '*.markdown'"),
    ],
)
def test_help_paragraphs_reflow_and_examples_show_as_typed(args: list[str], sentence: str) -> None:
    """A docstring wrapped in the source reads as one paragraph in ``--help`` (no line
    broken mid-sentence), and an example's glob keeps its ``*``."""
    from typer.testing import CliRunner

    from memloci.interfaces.cli import app

    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert sentence in result.output, result.output
    assert "--install-completion" not in result.output


def test_shell_completion_prints_a_script_and_completes_commands() -> None:
    """``memloci --show-completion bash`` prints the script a shell sources; the script's
    protocol (``_MEMLOCI_COMPLETE``) completes command and subcommand names."""
    exe = [sys.executable, "-c", "from memloci.interfaces.cli import main; main()"]
    script = subprocess.run(
        [*exe, "--show-completion", "bash"], capture_output=True, text=True, timeout=120
    )
    assert script.returncode == 0, script.stderr
    assert "_MEMLOCI_COMPLETE=complete_bash" in script.stdout
    assert "complete -o default -F _memloci_completion memloci" in script.stdout
    zsh = subprocess.run([*exe, "--show-completion", "zsh"], capture_output=True, text=True)
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef memloci"), zsh.stderr

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_MEMLOCI_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - 1)
        done = subprocess.run(exe, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("memloci mem") == ["memory"]
    assert "list" in complete("memloci memory l")
    assert "--user" in complete("memloci memory search --us")
    root = subprocess.run([*exe, "--help"], capture_output=True, text=True, timeout=120)
    assert "--install-completion" in root.stdout
