"""The knowledge tier: chunking (markdown, reST, plain text), the directory walk, and
adding / searching / removing through the SDK with the fake embedder (plus one
paraphrase search with the real bundled model)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memloci import AsyncMemory, Memory
from memloci.context import estimate_tokens
from memloci.errors import NotFoundError, ProviderError, ValidationError
from memloci.providers.fake import FakeEmbedder
from memloci.service import documents as kb

MakeMemory = Callable[..., Memory]
Kind = Literal["markdown", "rst", "text"]

GUIDE = """\
---
title: The Guide
---
# Guide

Welcome to the guide.

## Install

### Linux

Run apt install kettle. It needs Python 3.11.

```bash
# this is a comment, not a heading
pip install kettle

echo done
```

### macOS
Use brew to install kettle.

Troubleshooting
---------------

Descale the kettle when it whistles.
"""


def doc(text: str, kind: Kind = "markdown", name: str = "x.md") -> kb.Document:
    return kb.Document(Path(name), text, kind, "hash", datetime.now(UTC), len(text))


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


# ---------------------------------------------------------------------- chunking
def test_markdown_splits_on_headings_and_keeps_the_path() -> None:
    d = doc(GUIDE)
    title, pieces = kb.chunk_document(d)
    assert title == "The Guide"  # front matter wins over the first heading
    assert [p.heading for p in pieces] == [
        "Guide", "Guide > Install > Linux", "Guide > Install > macOS", "Guide > Troubleshooting",
    ]  # fmt: skip
    assert pieces[0].text == "Welcome to the guide."
    linux = pieces[1].text
    assert linux.startswith("Run apt install") and linux.endswith("echo done\n```")
    assert "# this is a comment" in linux  # inside a code fence: not a heading
    for p in pieces:
        assert d.text[p.start : p.end] == p.text


def test_markdown_title_falls_back_to_h1_then_file_name() -> None:
    assert kb.chunk_document(doc("# Handbook\n\ntext"))[0] == "Handbook"
    assert kb.chunk_document(doc("## Only h2\n\ntext", name="notes.md"))[0] == "notes.md"


def test_long_sections_are_packed_near_the_target_with_overlap() -> None:
    paragraphs = [f"Paragraph {i}. " + words(45, f"p{i}w") for i in range(12)]
    text = "# Big\n\n" + "\n\n".join(paragraphs)
    d = doc(text)
    _, pieces = kb.chunk_document(d, target=800, overlap=100)
    assert len(pieces) >= 4
    assert all(len(p.text) <= 800 + 200 + 100 for p in pieces)
    assert all(p.heading == "Big" for p in pieces)
    for prev, nxt in pairwise(pieces):
        assert prev.start < nxt.start < prev.end  # overlaps the previous chunk
        assert prev.end - nxt.start <= 100
        assert not d.text[nxt.start - 1].isalnum()  # starts on a word boundary
    covered = "".join(d.text[p.start : p.end] for p in pieces)
    assert all(f"p{i}w44" in covered for i in range(12))


def test_a_huge_paragraph_is_cut_by_sentences_then_words() -> None:
    text = "Short sentence. " + words(400, "w") + ". Last sentence."
    _, pieces = kb.chunk_document(doc(text, "text", "x.txt"), target=300, overlap=0)
    assert len(pieces) > 5 and all(len(p.text) <= 300 for p in pieces)
    assert pieces[-1].text.endswith("Last sentence.")


def test_plain_text_splits_on_paragraphs_only() -> None:
    text = "# not a heading in a .txt\n\nsecond paragraph\n\n\nthird"
    title, pieces = kb.chunk_document(doc(text, "text", "notes.txt"), target=26, overlap=0)
    assert title == "notes.txt"  # small paragraphs are packed together up to the target
    assert [p.text for p in pieces] == ["# not a heading in a .txt", "second paragraph\n\n\nthird"]
    assert all(p.heading == "" for p in pieces)


def test_rst_headings_follow_adornment_order() -> None:
    text = "=====\nTitle\n=====\n\nintro\n\nInstall\n-------\n\nsteps\n\nUsage\n-------\n\nrun it\n"
    title, pieces = kb.chunk_document(doc(text, "rst", "x.rst"))
    assert title == "Title"
    assert [(p.heading, p.text) for p in pieces] == [
        ("Title", "intro"), ("Title > Install", "steps"), ("Title > Usage", "run it"),
    ]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="ab \n#`-=.", max_size=80),
            st.sampled_from(["# H", "## H2", "```", "---", "", "\n\n"]),
        ),
        max_size=30,
    ),
    st.sampled_from(["markdown", "rst", "text"]),
)
def test_chunks_always_slice_the_document(parts: list[str], kind: Kind) -> None:
    d = doc("\n".join(parts), kind)
    _, pieces = kb.chunk_document(d, target=60, overlap=15)
    for p in pieces:
        assert p.text.strip() and d.text[p.start : p.end] == p.text


def test_source_ids_are_stable_and_short() -> None:
    one = kb.source_id("/docs/a.md")
    assert one == kb.source_id("/docs/a.md") != kb.source_id("/docs/b.md")
    assert len(one) == 8 and one.isalnum()


# ---------------------------------------------------------------------- files
def test_walk_uses_globs_and_skips_hidden(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "a")
    write(tmp_path, "sub/b.TXT", "b")
    write(tmp_path, "sub/c.rst", "c")
    write(tmp_path, "d.py", "print()")
    write(tmp_path, ".hidden.md", "h")
    write(tmp_path, ".git/e.md", "e")
    found = kb.collect_files(tmp_path, kb.DEFAULT_GLOBS)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a.md", "sub/b.TXT", "sub/c.rst"]
    only = kb.collect_files([tmp_path, tmp_path / "d.py"], ["sub/*.rst"])
    assert [p.name for p in only] == ["c.rst", "d.py"]  # a named file needs no glob


def test_unreadable_files_are_reported_not_raised(tmp_path: Path) -> None:
    assert "binary" in str(kb.read_document(write(tmp_path, "b.txt", "ab\x00cd")))
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    assert kb.read_document(tmp_path / "latin.txt") == "not UTF-8 text"
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4 ...")
    assert "PDF is not supported" in str(kb.read_document(tmp_path / "doc.pdf"))
    crlf = tmp_path / "w.md"
    crlf.write_bytes(b"\xef\xbb\xbf# T\r\n\r\nbody\r\n")
    got = kb.read_document(crlf)
    assert isinstance(got, kb.Document) and got.text == "# T\n\nbody\n" and got.kind == "markdown"


def test_a_nul_byte_anywhere_makes_a_file_binary(tmp_path: Path) -> None:
    """One rule on every backend (PostgreSQL text cannot hold a NUL): not only the first
    8 KB are looked at."""
    late = tmp_path / "log.txt"
    late.write_bytes(b"A" * 9000 + b"\n\nNUL \x00 here\n")
    assert "binary" in str(kb.read_document(late))


def test_utf16_without_a_byte_order_mark_is_refused_as_such(tmp_path: Path) -> None:
    path = tmp_path / "faq.txt"
    path.write_bytes("The refund window is thirty days.".encode("utf-16-le"))
    assert "binary" in str(kb.read_document(path))
    path.write_bytes(b"\xff\xfe" + b"\x00\xd8")  # a lone surrogate: broken UTF-16
    assert "UTF-16" in str(kb.read_document(path))


def _read_soon(path: Path) -> kb.Document | str:
    """read_document in a thread, failing the test (not hanging it) after 10 s."""
    done: list[kb.Document | str] = []
    worker = threading.Thread(target=lambda: done.append(kb.read_document(path)), daemon=True)
    worker.start()
    worker.join(10)
    assert done, f"reading {path} did not return"
    return done[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_or_a_device_is_skipped_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    assert "not a regular file" in str(_read_soon(fifo))  # never waits for a writer
    if os.path.exists("/dev/zero"):  # endless: never read
        assert "not a regular file" in str(_read_soon(Path("/dev/zero")))


def _odd_name(folder: Path) -> Path:
    """A file whose name is not UTF-8 (café.md saved by a Latin-1 tool), or skip."""
    path = Path(os.fsdecode(os.path.join(os.fsencode(folder), "caf\xe9.md".encode("latin-1"))))
    try:
        path.write_text("# Café\n\nThe espresso machine is on floor two.\n", "utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    return path


def test_a_file_name_that_is_not_utf8_is_skipped(mem: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "names"
    write(folder, "good.md", "# Good\n\nThe kettle is in the kitchen.\n")
    odd = _odd_name(folder)
    report = mem.add_knowledge(folder)  # the rest of the folder is added
    assert (report.added, report.skipped) == (1, 1)
    (skipped,) = [f for f in report.files if f.action == "skipped"]
    assert "not UTF-8" in str(skipped.reason)
    assert skipped.path.endswith("caf\\xe9.md") and skipped.path.encode("utf-8")
    assert report.model_dump_json()  # printable and storable
    assert "not UTF-8" in str(kb.read_document(odd))
    assert kb.source_id(str(odd)) != kb.source_id(str(folder / "good.md"))


# ---------------------------------------------------------------------- add / search (SDK)
@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder, "guide.md", GUIDE)
    write(folder, "faq.txt", "How do refunds work?\n\nRefunds take five days.\n")
    write(folder, "blob.txt", "\x00\x01\x02")
    write(folder, "empty.md", "   \n")
    return folder


def test_add_chunks_embeds_and_reports(mem: Memory, docs: Path) -> None:
    seen: list[tuple[int, int]] = []
    report = mem.add_knowledge(docs, progress=lambda done, total: seen.append((done, total)))
    assert (report.added, report.updated, report.unchanged, report.skipped) == (2, 0, 0, 2)
    assert report.chunks == 5 and report.embedding_model == "fake:64"
    reasons = {Path(f.path).name: f.reason for f in report.files if f.action == "skipped"}
    assert "binary" in str(reasons["blob.txt"]) and reasons["empty.md"] == "no text in it"
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)
    hits = mem.search_knowledge("install kettle on linux", threshold=0.0)
    assert hits[0].heading == "Guide > Install > Linux" and hits[0].match == "vector"
    assert hits[0].path == str((docs / "guide.md").resolve()) and hits[0].title == "The Guide"
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_re_adding_an_unchanged_file_does_nothing(mem: Memory, docs: Path) -> None:
    mem.add_knowledge(docs)
    before = mem._call(mem.service.knowledge.list_knowledge_sources())
    again = mem.add_knowledge(docs)
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, 2, 0)
    assert mem._call(mem.service.knowledge.list_knowledge_sources()) == before


def test_a_changed_file_replaces_its_chunks(mem: Memory, docs: Path) -> None:
    mem.add_knowledge(docs)
    sid = kb.source_id(str((docs / "faq.txt").resolve()))
    write(docs, "faq.txt", "Shipping is free above fifty euros.\n")
    report = mem.add_knowledge(docs / "faq.txt")
    assert report.updated == 1 and report.files[0].source_id == sid
    assert [c.text for c in mem.service.store.knowledge.knowledge_chunks("default", sid)] == [
        "Shipping is free above fifty euros."
    ]
    texts = [h.text for h in mem.search_knowledge("refunds", threshold=0.0, limit=50)]
    assert not any("Refunds" in t for t in texts)
    sources = {s.id: s for s in mem._call(mem.service.knowledge.list_knowledge_sources())}
    assert sources[sid].chunk_count == 1 and sources[sid].updated_at > sources[sid].added_at


def test_a_missing_path_writes_nothing(mem: Memory, docs: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        mem.add_knowledge([docs, docs / "nope.md", "also-missing"])
    assert "nope.md" in info.value.message and "also-missing" in info.value.message
    assert mem._call(mem.service.knowledge.list_knowledge_sources()) == []


def test_bad_arguments_are_validation_errors(mem: Memory, docs: Path) -> None:
    with pytest.raises(ValidationError):
        mem.add_knowledge(docs, collection=" padded")
    with pytest.raises(ValidationError):
        mem.add_knowledge([])
    with pytest.raises(ValidationError):
        mem.add_knowledge(docs, glob=[""])
    for bad in ({"threshold": 1.5}, {"threshold": -0.1}, {"limit": 0}, {"limit": 101}):
        with pytest.raises(ValidationError):
            mem.search_knowledge("kettle", **bad)
    with pytest.raises(ValidationError):
        mem.search_knowledge("   ")
    assert mem._call(mem.service.knowledge.list_knowledge_sources()) == []


class FailingEmbedder(FakeEmbedder):
    """Fails on any batch mentioning ``poison``."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if any("poison" in t for t in texts):
            raise ProviderError("embedding service is down")
        return super().embed(texts)


def test_an_embedding_failure_keeps_the_old_chunks(make_memory: MakeMemory, docs: Path) -> None:
    mem = make_memory(embedder=FailingEmbedder())
    mem.add_knowledge(docs / "faq.txt")
    write(docs, "faq.txt", "poison pill\n")
    with pytest.raises(ProviderError):
        mem.add_knowledge(docs / "faq.txt")
    [src] = mem._call(mem.service.knowledge.list_knowledge_sources())
    assert src.content_hash != kb.read_document(docs / "faq.txt").content_hash  # type: ignore[union-attr]
    hits = mem.search_knowledge("refunds five days", threshold=0.0)
    assert hits and "Refunds" in hits[0].text


def test_threshold_and_limit(mem: Memory, docs: Path) -> None:
    mem.add_knowledge(docs)
    assert len(mem.search_knowledge("kettle", threshold=0.0, limit=50)) == 5
    assert len(mem.search_knowledge("kettle", threshold=0.0, limit=2)) == 2
    top = mem.search_knowledge("descale the kettle when it whistles", threshold=0.0)
    assert top[0].heading == "Guide > Troubleshooting"
    strict = mem.search_knowledge("descale the kettle when it whistles", threshold=0.9)
    assert [h.chunk_id for h in strict] == [top[0].chunk_id]
    assert all(h.score >= 0.9 for h in strict)
    assert mem.search_knowledge("zzz qqq", threshold=0.5) == []


def test_without_an_embedder_full_text_scores_in_0_1(make_memory: MakeMemory, docs: Path) -> None:
    mem = make_memory(embedder=None)
    report = mem.add_knowledge(docs)
    assert report.embedding_model is None and report.added == 2
    hits = mem.search_knowledge("whistles descale", threshold=0.0)
    assert hits[0].heading == "Guide > Troubleshooting" and hits[0].match == "fulltext"
    assert all(0.0 < h.score <= 1.0 for h in hits)
    whole = mem.search_knowledge("whistles descale", threshold=0.999)  # holds both words
    assert [h.chunk_id for h in whole] == [hits[0].chunk_id]


def test_a_small_collection_without_an_embedder_finds_what_it_says(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    """BM25 gives a word in half the chunks no weight: in a two-section FAQ the chunk that
    says every word of the query scored 0 and no default threshold let it through."""
    (tmp_path / "faq.md").write_text(
        "# FAQ\n\n## Refunds\n\nRefunds are processed within 14 days of the return.\n\n"
        "## Shipping\n\nShipping takes 3 to 5 business days within the EU.\n"
    )
    mem = make_memory(embedder=None)
    mem.add_knowledge(tmp_path / "faq.md")
    hits = mem.search_knowledge("Refunds are processed within 14 days", threshold=0.7)
    assert [h.heading for h in hits] == ["FAQ > Refunds"] and hits[0].score == 1.0
    assert mem.search_knowledge("how long do refunds take")[0].heading == "FAQ > Refunds"


def test_adding_again_with_an_embedder_embeds_old_chunks(
    make_memory: MakeMemory, docs: Path, db_path: str
) -> None:
    bare = make_memory(embedder=None)
    bare.add_knowledge(docs)
    bare.close()
    mem = make_memory(db_path)
    assert mem.search_knowledge("kettle", threshold=0.0) == []  # no vectors yet
    again = mem.add_knowledge(docs)
    assert again.updated == 2 and again.chunks == 5
    assert mem.search_knowledge("kettle", threshold=0.0)


def test_collections_and_namespaces_are_separate(mem: Memory, docs: Path) -> None:
    mem.add_knowledge(docs / "guide.md", collection="manual")
    mem.add_knowledge(docs / "faq.txt", collection="faq", namespace="shop")
    assert {h.collection for h in mem.search_knowledge("kettle refunds", threshold=0.0)} == {
        "manual"
    }
    shop = mem.search_knowledge("kettle refunds", namespace="shop", threshold=0.0)
    assert {(h.namespace, h.collection) for h in shop} == {("shop", "faq")}
    assert mem.search_knowledge("kettle", collections=["faq"], threshold=0.0) == []
    both = mem.search_knowledge("refunds kettle", namespace=["default", "shop"], threshold=0.0)
    assert {h.namespace for h in both} == {"default", "shop"}
    listed = mem._call(mem.service.knowledge.list_knowledge_sources(namespace="shop"))
    assert [s.collection for s in listed] == ["faq"]


def test_remove_by_id_path_or_folder(mem: Memory, docs: Path) -> None:
    write(docs, "more/extra.md", "# Extra\n\nmore kettle facts")
    mem.add_knowledge(docs)
    service = mem.service
    sid = kb.source_id(str((docs / "faq.txt").resolve()))
    assert [s.id for s in mem._call(service.knowledge.remove_knowledge(sid))] == [sid]
    gone = mem._call(service.knowledge.remove_knowledge(str(docs / "more")))
    assert [Path(s.path).name for s in gone] == ["extra.md"]
    assert [
        Path(s.path).name
        for s in mem._call(service.knowledge.remove_knowledge(str(docs / "guide.md")))
    ] == ["guide.md"]
    assert mem._call(service.knowledge.list_knowledge_sources()) == []
    assert mem.search_knowledge("kettle", threshold=0.0) == []
    with pytest.raises(NotFoundError):
        mem._call(service.knowledge.remove_knowledge(sid))


def test_knowledge_block_cites_sources_within_a_budget(mem: Memory, docs: Path) -> None:
    mem.add_knowledge(docs)
    hits = mem.search_knowledge("install kettle on linux", threshold=0.0, limit=3)
    block = kb.knowledge_block(hits)
    assert block.startswith("## Relevant Knowledge\n\n[1] guide.md › Guide > Install > Linux\n")
    assert block.count("\n[") == 3 and "Run apt install kettle" in block
    small = kb.knowledge_block(hits, budget=60)
    assert estimate_tokens(small) <= 60 and "[1] guide.md" in small and "[2]" not in small
    assert kb.knowledge_block([]) == "" and kb.knowledge_block(hits, budget=5) == ""


def test_async_sdk(db_path: str, docs: Path) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            await m.add_knowledge([str(docs / "faq.txt")], collection="faq")
            hits = await m.search_knowledge("refunds", collections=["faq"], threshold=0.0)
            return [h.text for h in hits]

    assert asyncio.run(main()) == ["How do refunds work?\n\nRefunds take five days."]


# ---------------------------------------------------------------------- real model
@pytest.mark.slow
def test_a_paraphrase_finds_the_right_chunk(make_memory: MakeMemory, tmp_path: Path) -> None:
    write(tmp_path, "handbook.md", """\
# Handbook

## Holidays

Employees get twenty-five days of paid vacation per year. Unused days carry over
until the end of March.

## Expenses

Keep every receipt. Travel costs are reimbursed within two weeks of submitting
the expense form.

## Equipment

New starters receive a laptop and a monitor on their first day.
""")  # fmt: skip
    mem = make_memory(embedder="local")
    mem.add_knowledge(tmp_path)
    hits = mem.search_knowledge("how much time off do I get each year?", limit=3)
    assert hits and hits[0].heading == "Handbook > Holidays"
    assert hits[0].score >= 0.3
    money = mem.search_knowledge("when will I be paid back for a business trip?", limit=1)
    assert money and money[0].heading == "Handbook > Expenses"


def test_a_folder_added_again_drops_its_deleted_files(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "a.md").write_text("# Apples\n\nApples grow on trees in the orchard.\n")
    (folder / "b.md").write_text("# Bananas\n\nBananas grow in bunches in the tropics.\n")
    elsewhere = tmp_path / "notes.md"
    elsewhere.write_text("# Notes\n\nApples keep for weeks in a cold cellar.\n")
    mem = make_memory(embedder=None)
    mem.add_knowledge([folder, elsewhere])
    (folder / "a.md").unlink()
    elsewhere.unlink()  # a file named on its own is not the folder's: it stays
    report = mem.add_knowledge(folder)
    assert (report.removed, report.unchanged) == (1, 1)
    assert [f.path for f in report.files if f.action == "removed"] == [str(folder / "a.md")]
    left = sorted(
        Path(s.path).name for s in mem.service.store.knowledge.knowledge_sources("default")
    )
    assert left == ["b.md", "notes.md"]
    assert all("orchard" not in h.text for h in mem.search_knowledge("apples", threshold=0))


def test_reembed_knowledge_after_switching_models(tmp_path: Path) -> None:
    """Knowledge search with an embedder finds by meaning only chunks of its model; after
    ``reembed=True`` the chunks of the old model are embedded with the new one."""
    path = str(tmp_path / "switch.db")
    (tmp_path / "keys.md").write_text("# Keys\n\nRotate API keys every month.\n", "utf-8")
    with Memory(path, embedder=FakeEmbedder(dimension=16)) as m:
        m.add_knowledge(tmp_path / "keys.md")
    with Memory(path, embedder=FakeEmbedder(dimension=32), reembed=True) as m:
        assert m.search_knowledge("keys rotate monthly", threshold=0) == []
        seen: list[tuple[int, int]] = []
        assert m.reembed_knowledge(lambda done, total: seen.append((done, total))) == 1
        assert seen[-1] == (1, 1)
        assert m.search_knowledge("keys rotate monthly", threshold=0)
        assert m.reembed_knowledge() == 0  # nothing left of another model


def test_a_binary_file_that_is_not_utf8_either_is_called_binary(tmp_path: Path) -> None:
    path = tmp_path / "photo.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert "binary" in str(kb.read_document(path))
