"""The knowledge tier as a user keeps a folder in sync: what a search gives back (an
exact phrase of a document, with the real bundled model), what a re-add keeps, and
which files are refused. On both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memloci import Memory
from pgtest import both_backends

MakeMemory = Callable[..., Memory]
pytestmark = both_backends

# A page about the nightly job, and a recipe that says when it starts, in passing:
# searched for by meaning, the recipe ranks below every section of the page.
JOBS = """\
# Nightly jobs

## Schedule

The nightly job starts every night after midnight and runs the database backups, the
report exports and the cache cleanup. When the nightly job starts, it takes a lock.

## Timing

Each nightly job start time is set in UTC in the scheduler. The job starts sharp at
the configured time and a second start is refused while one runs.

## Failures

If the nightly job does not start, the scheduler pages the operator on call.
"""
RECIPE = """\
# Kitchen notes

Soak the chickpeas overnight, then simmer them with garlic, cumin and a bay leaf
until they are soft. The nightly job starts at 02:15 UTC sharp, so leave the office
printer alone. Blend with tahini, lemon juice and a little of the cooking water.
"""


def test_an_exact_phrase_of_a_document_is_found_with_an_embedder(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    (tmp_path / "jobs.md").write_text(JOBS, encoding="utf-8")
    (tmp_path / "kitchen.md").write_text(RECIPE, encoding="utf-8")
    mem = make_memory(embedder="local")
    mem.add_knowledge(tmp_path)
    phrase = "the nightly job starts at 02:15 UTC sharp"
    hits = mem.search_knowledge(phrase, limit=3, threshold=0.3)
    assert hits and "02:15 UTC sharp" in hits[0].text, [h.heading for h in hits]
    assert hits[0].score == 1.0 and hits[0].match == "fulltext"
    assert hits == sorted(hits, key=lambda h: -h.score)
    # spacing, case and a line break inside the document make no difference
    again = mem.search_knowledge("The  NIGHTLY job starts at 02:15 utc", limit=1)
    assert again and again[0].chunk_id == hits[0].chunk_id
    # a word of the phrase is not the phrase: "02:1" does not hold "02:15"
    assert all(h.score < 1.0 for h in mem.search_knowledge("nightly job starts at 02:1"))


@pytest.mark.parametrize("query", ["soak", "bay leaf"])
def test_a_short_query_held_by_a_chunk_keeps_its_cosine_score(
    make_memory: MakeMemory, tmp_path: Path, query: str
) -> None:
    """Only a phrase of some length counts as asked for word for word: a word or two
    ("thanks", "ok") held by a chunk is no reason to put it first."""
    (tmp_path / "kitchen.md").write_text(RECIPE, encoding="utf-8")
    mem = make_memory(embedder="local")
    mem.add_knowledge(tmp_path)
    hits = mem.search_knowledge(query, threshold=0.0)
    assert hits and all(h.match == "vector" and h.score < 1.0 for h in hits)


def test_a_file_in_one_collection_is_not_moved_by_adding_it_to_another(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    faq = tmp_path / "faq.md"
    faq.write_text("# FAQ\n\nThe refund window is thirty days.\n", encoding="utf-8")
    mem = make_memory(embedder=None)
    mem.add_knowledge(faq, collection="faq")
    report = mem.add_knowledge(tmp_path, collection="docs")
    assert (report.added, report.updated, report.skipped) == (0, 0, 1)
    assert "'faq'" in str(report.files[0].reason) and "remove" in str(report.files[0].reason)
    hits = mem.search_knowledge("refund window", collections=["faq"], threshold=0.0)
    assert [h.collection for h in hits] == ["faq"]
    assert [s.collection for s in mem.service.store.knowledge.knowledge_sources("default")] == [
        "faq"
    ]


@pytest.mark.parametrize(
    ("now", "why"),
    [
        (b"The refund window is thirty days.\x00\x01", "binary"),
        (b"The refund window is thirty days, caf\xe9.", "not UTF-8"),
        (b"%PDF-1.7 The refund window is thirty days.", "PDF"),
    ],
)
def test_a_file_that_can_no_longer_be_added_loses_its_old_chunks(
    make_memory: MakeMemory, tmp_path: Path, now: bytes, why: str
) -> None:
    """What a file held before it was overwritten with something that cannot be added is
    no answer any more: a re-add removes it, and says so."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "faq.txt").write_text("The refund window is thirty days.\n", encoding="utf-8")
    (folder / "keep.txt").write_text("Shipping is free above fifty euros.\n", encoding="utf-8")
    mem = make_memory(embedder=None)
    mem.add_knowledge(folder)
    (folder / "faq.txt").write_bytes(now)
    report = mem.add_knowledge(folder)
    (gone,) = [f for f in report.files if f.path.endswith("faq.txt")]
    assert gone.action == "removed" and why in str(gone.reason), gone
    assert (report.removed, report.unchanged) == (1, 1)
    assert mem.search_knowledge("refund window", threshold=0.0) == []
    kept = mem.service.store.knowledge.knowledge_sources("default")
    assert [Path(s.path).name for s in kept] == ["keep.txt"]


def test_one_path_in_two_namespaces_is_found_in_both(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    """Chunk ids come from the file's path, so two namespaces holding one file (here
    added before and after an edit) hold the same chunk ids: a search of both keeps both."""
    page = tmp_path / "kitchen.md"
    page.write_text(RECIPE, encoding="utf-8")
    mem = make_memory(embedder="local")
    mem.add_knowledge(page, namespace="shop")
    page.write_text(RECIPE.replace("02:15", "03:30"), encoding="utf-8")
    mem.add_knowledge(page, namespace="office")
    query = "the nightly job starts at 02:15 UTC sharp"
    hits = mem.search_knowledge(query, namespace=["shop", "office"], threshold=0.0)
    assert [(h.namespace, h.score == 1.0) for h in hits] == [("shop", True), ("office", False)]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_text_with_a_byte_order_mark_is_added(
    make_memory: MakeMemory, tmp_path: Path, encoding: str
) -> None:
    """Windows writes UTF-16 with a byte-order mark (Notepad's "Unicode", PowerShell's
    ``>``): text, not a binary file."""
    text = "# Café\r\n\r\nThe refund window is thirty days.\r\n"
    bom = "\ufeff" if encoding != "utf-16" else ""  # "utf-16" writes its own
    (tmp_path / "faq.md").write_bytes((bom + text).encode(encoding))
    mem = make_memory(embedder=None)
    report = mem.add_knowledge(tmp_path)
    assert (report.added, report.skipped) == (1, 0), report.files
    (hit,) = mem.search_knowledge("refund window", threshold=0.0)
    assert hit.text == "The refund window is thirty days." and hit.heading == "Café"
