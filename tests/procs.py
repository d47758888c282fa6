"""Child processes released at once, for the race and reliability tests: each child
prints ``ready`` once it is set up, then waits for ``go`` on its stdin."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence


def release_together(procs: Sequence[subprocess.Popen[str]], *, timeout: float) -> list[str]:
    """Wait until every child is ready, tell them all to go, and return what each printed;
    a child still running when this ends (a failure, a timeout) is killed. Every child
    must exit 0."""
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=timeout)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [proc.returncode for proc in procs] == [0] * len(procs)
    return outputs
