"""``memloci`` (the console script's ``main``) leaves a finished command through
``os._exit`` after flushing its output: exit codes and every byte written survive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memloci import Memory


def _memloci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = f"import sys; sys.argv = ['memloci', *{list(args)!r}]\n"
    code += "from memloci.interfaces.cli import main\nmain()\n"
    code += "print('not reached')\n"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_a_long_piped_output_arrives_whole_and_the_command_exits_0(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=None) as m:
        for i in range(300):
            m.remember(f"Fact number {i} about the garden", user="sam")
    done = _memloci("memory", "list", "--db", db, "--embedder", "none", "--limit", "300",
                    "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 300  # all of it, although the process _exits
    assert "not reached" not in done.stdout


def test_exit_codes_survive(tmp_path: Path) -> None:
    missing = _memloci("memory", "search", "x", "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    assert missing.returncode == 3 and "no memory store" in missing.stderr
    usage = _memloci("memory", "no-such-command", cwd=tmp_path)
    assert usage.returncode == 2 and "No such command" in usage.stderr
    assert _memloci("--help", cwd=tmp_path).returncode == 0
