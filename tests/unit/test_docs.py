"""Docs stay in step with the code: every setting is in the README's table."""

from __future__ import annotations

from pathlib import Path

from memloci import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_setting_is_documented_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Configuration") :]
    missing = [name for name in Settings.model_fields if f"`{name}`" not in table]
    assert missing == []
