"""``scripts/apt-install.sh``: what `make test` installs system-wide is only what it
names, and every change apt-get would make is listed first.

The plan is read from ``apt-get -s install`` (real apt output below, from a Debian 12
machine where installing libzstd-dev needs newer libzstd1 and zstd), and nothing else
in the repository calls ``apt-get install`` or ``apt-get upgrade``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "apt-install.sh"

SIMULATED = """\
NOTE: This is only a simulation!
Reading package lists...
Inst libzstd1 [1.5.4+dfsg2-5] (1.5.4+dfsg2-5+deb12u1 Debian-Security:12/oldstable-security [amd64])
Conf libzstd1 (1.5.4+dfsg2-5+deb12u1 Debian-Security:12/oldstable-security [amd64])
Inst libzstd-dev (1.5.4+dfsg2-5+deb12u1 Debian-Security:12/oldstable-security [amd64])
Inst zstd [1.5.4+dfsg2-5] (1.5.4+dfsg2-5+deb12u1 Debian-Security:12/oldstable-security [amd64])
Remv libfoo1 [2.0-1]
Conf libzstd-dev (1.5.4+dfsg2-5+deb12u1 Debian-Security:12/oldstable-security [amd64])
"""


def _script(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], input=stdin, capture_output=True, text=True, check=False
    )


def test_the_plan_names_new_packages_upgrades_and_removals() -> None:
    done = _script("--parse", stdin=SIMULATED)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "upgrade libzstd1 1.5.4+dfsg2-5 1.5.4+dfsg2-5+deb12u1",
        "new libzstd-dev 1.5.4+dfsg2-5+deb12u1",
        "upgrade zstd 1.5.4+dfsg2-5 1.5.4+dfsg2-5+deb12u1",
        "remove libfoo1 2.0-1",
    ]


def test_usage_errors() -> None:
    assert _script().returncode == 2
    assert _script("for nothing").returncode == 2  # no package named


@pytest.mark.skipif(
    shutil.which("apt-get") is None or shutil.which("dpkg-query") is None,
    reason="needs apt-get (Debian)",
)
def test_the_plan_of_an_installed_package_changes_nothing_it_did_not_name() -> None:
    """``--plan`` asks apt-get itself (a simulation: nothing installed): a package that
    is installed already brings no new package and touches no other."""
    done = _script("--plan", "bash")
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert line.split()[:2] == ["upgrade", "bash"], line  # at most itself


def test_nothing_else_installs_or_upgrades_with_apt() -> None:
    """The Makefile, CI and the PostgreSQL script install through apt-install.sh."""
    for path in (ROOT / "Makefile", ROOT / "scripts" / "pg-test-env.sh", ROOT / ".ci" / "run"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"apt-get[^\n|;&]*\s(install|upgrade|dist-upgrade)\b", text), path
    code = [
        line
        for line in SCRIPT.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    installs = [line for line in code if re.search(r"apt-get\b.*\binstall\b", line)]
    assert installs and all("--no-install-recommends" in line for line in installs)
    assert not [line for line in code if re.search(r"apt-get\b.*\b(dist-)?upgrade\b", line)]
