"""Docs stay in step with the code: every setting is in docs/configuration.md's table,
every REST endpoint in docs/rest.md, and every link between the docs resolves."""

from __future__ import annotations

from pathlib import Path

from memloci import Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_every_setting_is_documented_in_the_configuration_page() -> None:
    table = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in Settings.model_fields if f"`{name}`" not in table]
    assert missing == []


def test_every_rest_endpoint_is_documented() -> None:
    from memloci import Memory
    from memloci.interfaces.rest import create_app
    from memloci.providers.fake import FakeEmbedder

    doc = (ROOT / "docs" / "rest.md").read_text(encoding="utf-8")
    m = Memory(":memory:", embedder=FakeEmbedder())
    try:
        spec = create_app(m.service, maintenance=False, mcp=False).openapi()
    finally:
        m.close()
    missing = [
        f"{method.upper()} {path}"
        for path, ops in spec["paths"].items()
        for method in ops
        if f"`{method.upper()} {path}`" not in doc
    ]
    assert not missing, f"document these in docs/rest.md: {missing}"


def test_links_between_the_docs_resolve() -> None:
    """The README and docs/ moved sections between them: a relative link to a file
    names one that exists."""
    import re

    pages = [README, *(ROOT / "docs").rglob("*.md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
