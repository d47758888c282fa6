"""Missing optional parts: one MissingExtraError naming the pip line, nothing written.

Each case runs in a fresh interpreter where the extra's module is made unimportable
(``sys.modules[name] = None``, as Python does for a module that is not installed).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memloci import _extras
from memloci.errors import MissingExtraError

EXIT = MissingExtraError.exit_code


def _run(blocked: list[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked)
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "TMPDIR": str(cwd)},
    )


def _cli(blocked: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = f"""
        from memloci.interfaces.cli import main
        sys.argv = ["memloci", *{args!r}]
        main()
    """
    return _run(blocked, code, cwd)


@pytest.mark.parametrize("module", ["uvicorn", "fastapi", "mcp"])
def test_serve_without_the_server_extra(tmp_path: Path, module: str) -> None:
    result = _cli([module], ["serve", "--demo", "--embedder", "none"], tmp_path)
    assert result.returncode == EXIT, result.stderr
    assert "`memloci serve` needs the server extra: pip install 'memloci[server]'" in result.stderr
    assert f"not installed: {module}" in result.stderr
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # no demo store, no temp folder


def test_serve_with_a_db_writes_nothing_without_the_extra(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    result = _cli(["uvicorn"], ["serve", "--db", str(db)], tmp_path)
    assert result.returncode == EXIT, result.stderr
    assert not db.exists()


def test_mcp_stdio_without_the_server_extra(tmp_path: Path) -> None:
    result = _cli(["mcp"], ["mcp", "--db", str(tmp_path / "m.db")], tmp_path)
    assert result.returncode == EXIT, result.stderr
    assert "`memloci mcp` needs the server extra: pip install 'memloci[server]'" in result.stderr
    assert not (tmp_path / "m.db").exists()


def test_postgres_url_without_the_postgres_extra(tmp_path: Path) -> None:
    url = "postgresql://alice:s3cret@127.0.0.1:9/db"
    result = _cli(["psycopg"], ["memory", "stats", "--db", url, "--embedder", "none"], tmp_path)
    assert result.returncode == EXIT, result.stderr
    assert "needs the postgres extra: pip install 'memloci[postgres]'" in result.stderr
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("memloci.integrations.langchain", "langgraph", "langchain"),
        ("memloci.integrations.langgraph_checkpoint", "langchain_core", "langchain"),
        ("memloci.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("memloci.integrations.openai_agents", "agents", "openai-agents"),
        ("memloci.integrations.llamaindex", "llama_index", "llamaindex"),
        ("memloci.interfaces.rest", "fastapi", "server"),
        ("memloci.interfaces.mcp", "mcp", "server"),  # embedding the MCP server
    ],
)
def test_integrations_name_their_extra(
    tmp_path: Path, module: str, blocked: str, extra: str
) -> None:
    code = f"""
        from memloci.errors import MissingExtraError
        try:
            import {module}
        except MissingExtraError as exc:
            print(exc.code, exc.message, exc.hint, sep="|")
    """
    result = _run([blocked], code, tmp_path)
    assert result.returncode == 0, result.stderr
    code_, message, hint = result.stdout.strip().split("|")
    assert code_ == "missing_extra"
    assert message == f"{module} needs the {extra} extra: pip install 'memloci[{extra}]'"
    assert blocked in hint


def test_require_passes_when_installed_and_names_every_missing_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _extras.require("server", what="x")  # the dev venv has the server extra
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingExtraError) as caught:
        _extras.require("server", what="the thing")
    assert caught.value.message == "the thing needs the server extra: pip install 'memloci[server]'"
    assert caught.value.details["missing"] == ["fastapi", "mcp"]
    assert caught.value.exit_code == EXIT and caught.value.http_status == 501
