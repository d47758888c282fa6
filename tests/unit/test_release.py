"""A release's version and its CHANGELOG come from one place.

``memloci._version.__version__`` (re-exported as ``memloci.__version__``) is the only
place the version is written: pyproject.toml reads it (``dynamic = ["version"]``), the
CLI, REST and MCP report it, and CHANGELOG.md has a section for it. The build's inputs
(setup.py's hook, MANIFEST.in) ship in the sdist.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import memloci

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert "version" not in project and "version" in project["dynamic"]
    tool = _pyproject()["tool"]
    assert isinstance(tool, dict)
    assert tool["setuptools"]["dynamic"]["version"] == {"attr": "memloci._version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.dev\d+)?", memloci.__version__)
    init = (ROOT / "src" / "memloci" / "_version.py").read_text(encoding="utf-8")
    assert re.findall(r'^__version__ = "([^"]+)"', init, flags=re.M) == [memloci.__version__]


def test_the_changelog_has_a_section_for_the_version_and_unreleased_on_top() -> None:
    """Keep a Changelog: ``## [Unreleased]`` first (changes since the last release),
    then one section per release, newest first; the current version has its own,
    dated, and is the newest."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.M)
    assert heads[0] == ("Unreleased", "")
    released = heads[1:]
    assert released and all(d for _, d in released), released
    assert released[0][0] == memloci.__version__
    versions = [tuple(int(p) for p in v.split(".")) for v, _ in released]
    assert versions == sorted(versions, reverse=True)


def test_the_sdist_carries_the_build_hook() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8")
    assert "include scripts/bundle_model.py" in manifest
    assert "recursive-include src/memloci/providers/bge_small_en" in manifest
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "bundle_model.py" in setup
