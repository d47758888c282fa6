"""``memloci chat`` while another process holds the store's write lock (issue 11 item
12): the store opens (an up-to-date schema takes no write lock), every failed write is
a one-line notice, no traceback reaches the terminal, and the chat ends normally."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_models import serving
from typer.testing import CliRunner

import memloci.storage.sqlite.base as sqlite_base
from memloci.interfaces.cli import app

HOLDER = Path(__file__).resolve().parents[1] / "unit" / "lock_holder.py"


def test_chat_under_a_held_write_lock_prints_notices_not_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with serving("openai") as server:
        role = tmp_path / "role.yaml"
        role.write_text(
            yaml.safe_dump(
                {
                    "name": "helper",
                    "system_prompt": "You are Helper.",
                    "model": {
                        "provider": "openai",
                        "name": "scripted-1",
                        "base_url": server.base_url,
                    },
                    "memory": {"store_path": "memory.db", "embeddings": {"provider": "fake"}},
                }
            ),
            encoding="utf-8",
        )
        runner = CliRunner()
        first = runner.invoke(app, ["chat", str(role), "--user", "sam"], input="hello\n")
        assert first.exit_code == 0, first.output + first.stderr
        # writes give up after 0.3 s instead of 30 s: the test holds the lock only briefly
        monkeypatch.setattr(sqlite_base, "BUSY_TIMEOUT", 0.3)
        holder = subprocess.Popen(
            [sys.executable, str(HOLDER), str(tmp_path / "memory.db")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            result = runner.invoke(
                app, ["chat", str(role), "--user", "sam"],
                input="remember that my dog is called Rex\nwhat do you know about me?\n/exit\n",
            )  # fmt: skip
        finally:
            holder.communicate("done\n", timeout=60)
    assert result.exit_code == 0, result.output + result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert "OperationalError" not in result.stderr
    notices = [line for line in result.stderr.splitlines() if "database is busy" in line]
    assert any("could not save the conversation" in line for line in notices)
