"""``memloci init``: scaffold a role file that loads; never overwrite without --force."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memloci.interfaces.cli import app
from memloci.runtime import load_role, memory_template

runner = CliRunner()


def test_init_writes_a_role_file_that_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--template", "memory"])
    assert result.exit_code == 0, result.output
    assert "Wrote role.yaml" in result.stdout and "memloci chat role.yaml" in result.stderr
    role = load_role(tmp_path / "role.yaml")
    assert role.name == "assistant" and role.memory is not None


def test_init_path_and_name(tmp_path: Path) -> None:
    target = tmp_path / "agents" / "support.yaml"
    result = runner.invoke(app, ["init", "--name", "support", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == memory_template("support")
    assert load_role(target).namespace == "support"


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "role.yaml"
    target.write_text("name: mine\n", encoding="utf-8")
    refused = runner.invoke(app, ["init", str(target)])
    assert refused.exit_code == 4
    assert "already exists" in refused.stderr and "--force" in refused.stderr
    assert target.read_text(encoding="utf-8") == "name: mine\n"
    forced = runner.invoke(app, ["init", "--force", str(target)])
    assert forced.exit_code == 0, forced.output
    assert load_role(target).name == "assistant"


def test_init_rejects_bad_input(tmp_path: Path) -> None:
    bad_name = runner.invoke(app, ["init", "--name", "Bad Name", str(tmp_path / "r.yaml")])
    assert bad_name.exit_code == 2 and "invalid agent name" in bad_name.stderr
    assert not (tmp_path / "r.yaml").exists()
    folder = runner.invoke(app, ["init", str(tmp_path)])
    assert folder.exit_code == 2 and "is a folder" in folder.stderr
    unknown = runner.invoke(app, ["init", "--template", "chatbot", str(tmp_path / "r.yaml")])
    assert unknown.exit_code == 2


def test_the_template_writes_every_key_the_readme_documents() -> None:
    """``memloci init`` promises a role file "with every key": each key of the role-file
    table (docs/agents.md) (its first name; the others are aliases) is in the template."""
    import re

    page = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
    table = page.read_text(encoding="utf-8").split("## Role file", 1)[1].split("\n## ", 1)[0]
    template = memory_template()
    keys = [
        re.findall(r"`([^`]+)`", row.split("|")[1])[0]
        for row in table.splitlines()
        if row.startswith("| `")
    ]
    assert len(keys) > 20
    missing = [k for k in keys if not re.search(rf"\b{re.escape(k.split('.')[-1])}\b", template)]
    assert missing == []
