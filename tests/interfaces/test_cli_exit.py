"""``memloci`` (the console script's ``main``) leaves a finished command through
``os._exit`` after flushing its output: exit codes and every byte written survive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memloci import Memory, __version__


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


def test_a_search_with_the_bundled_model_takes_the_fast_exit(tmp_path: Path) -> None:
    """The query-embedding pool's workers stay alive after a search; they are memloci's
    own and idle, so the command still leaves through os._exit (the ordinary exit tore the
    interpreter down, ~0.2 s); a thread the caller started still holds the exit."""
    db = str(tmp_path / "m.db")
    with Memory(db) as m:
        m.remember("Sam lives in Lisbon", user="sam")
    code = (
        "import sys, threading, os\n"
        "hold = len(sys.argv) > 2\n"
        "sys.argv = ['memloci', 'memory', 'search', 'where does Sam live', '--db', sys.argv[1]]\n"
        "import memloci.interfaces.cli as cli\n"
        "real_exit = os._exit\n"
        "def fast(status):\n"
        "    print('fast exit', [t.name for t in cli._foreign_threads()], flush=True)\n"
        "    real_exit(status)\n"
        "os._exit = fast\n"
        "def job():  # runs until the interpreter's own exit stops the main thread\n"
        "    while threading.main_thread().is_alive():\n"
        "        threading.Event().wait(0.05)\n"
        "if hold:\n"
        "    threading.Thread(target=job, name='callers-job').start()\n"
        "cli.main()\n"
    )
    fast = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)  # fmt: skip
    assert fast.returncode == 0, fast.stderr
    assert "Lisbon" in fast.stdout and "fast exit []" in fast.stdout
    held = subprocess.run([sys.executable, "-c", code, db, "with-a-thread"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert held.returncode == 0, held.stderr
    assert "Lisbon" in held.stdout and "fast exit" not in held.stdout


def test_python_dash_m_memloci_is_the_memloci_command(tmp_path: Path) -> None:
    """``python -m memloci`` works where the venv's ``bin`` is not on PATH."""
    run = [sys.executable, "-m", "memloci"]
    version = subprocess.run(
        [*run, "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"memloci {__version__}"
    usage = subprocess.run(
        [*run, "memory", "no-such-command"], capture_output=True, text=True, cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert usage.returncode == 2 and "Usage: memloci memory" in usage.stderr, usage.stderr
