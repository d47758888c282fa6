"""The README is executable: its runnable Python examples run as written, with the
bundled model, and give the answers they show."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
# fragments that need a framework, an LLM or the caller's own objects (`memory`, `builder`)
FRAGMENT = ("pip install 'memloci[",)


def blocks() -> list[str]:
    found = BLOCK.findall(README.read_text(encoding="utf-8"))
    return [b for b in found if not b.lstrip().startswith(FRAGMENT)]


def test_the_readme_has_runnable_examples() -> None:
    assert len(blocks()) >= 3


@pytest.mark.slow
def test_readme_examples_run_and_answer_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text(
        "# API keys\n\n## Rotating a key\n\nTo rotate an API key, create a new key, "
        "switch your clients to it, then revoke the old key.\n",
        encoding="utf-8",
    )
    sdk, knowledge, tools = blocks()[:3]
    scope: dict[str, Any] = {}
    exec(compile(sdk, "README:sdk", "exec"), scope)
    hits, r = scope["hits"], scope["r"]
    assert hits[0].memory.content == "I moved to Lisbon"  # the right memory first
    assert 0 < hits[0].score <= 1 and "meaning #" in hits[0].why
    assert r.action == "created" and r.message == f"Remembered [{r.memory.id}]."

    scope = {"Memory": scope["Memory"]}
    exec(compile(knowledge, "README:knowledge", "exec"), scope)
    assert scope["hits"][0].heading and "rotate" in scope["hits"][0].text
    scope["m"].close()

    scope = {"Memory": scope["Memory"]}
    exec(compile(tools, "README:tools", "exec"), scope)
    m = scope["m"]
    out = m.tools(user="u1").call(
        "recall", {"query": "favourite colour", "top_k": 5, "memory_types": ["semantic"]}
    )
    assert out.startswith("1 memory for 'favourite colour' (best first):")
    assert re.search(r"\[Type: semantic \| Category: general \| Score: 0\.\d{3} \| ", out)
    assert out.rstrip().endswith("key=color: color = blue")
    m.close()
