"""Memories and queries are embedded in the third person: people say "I" in a chat, a
question asks about them ("Where does the user live?" → "Where does they live?"), so the
same person is the same word on both sides. A store records the form its vectors were
made in; ``memloci reembed`` rebuilds a store made in the older, first-person form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memloci import Memory
from memloci.interfaces.cli import app
from memloci.retrieval.graph import meaning_query
from memloci.retrieval.query import DOCUMENT_FORM, document_text, third_person
from memloci.service.worker import outdated_form
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("text", "embedded"),
    [
        ("I moved to Lisbon", "they moved to Lisbon"),
        ("My dog and I", "their dog and they"),
        ("I'm here and I’ve got mine myself", "they're here and they’ve got theirs themself"),
        ("i'll call, i'd love to. Tell me!", "they'll call, they'd love to. Tell them!"),
        ("iPhone, Mia, Irish, mime", "iPhone, Mia, Irish, mime"),  # words, not the pronoun
        ("We moved", "We moved"),  # only the first person singular
        ("i.e. I/O, the -i flag, I-95", "i.e. I/O, the -i flag, I-95"),  # not a pronoun
        ("Did I? Me too.", "Did they? them too."),
        # typed without the apostrophe
        ("im so tired, ive been up", "they're so tired, they've been up"),
        ("Im going. IM me", "they're going. IM them"),  # "IM" (a message) stays
        ("Jony Ive's design, a whim", "Jony Ive's design, a whim"),
    ],
)
def test_third_person(text: str, embedded: str) -> None:
    assert third_person(text) == embedded


def test_memories_and_queries_are_embedded_in_the_third_person() -> None:
    assert document_text("I moved to Lisbon", "user", None, None) == "user: they moved to Lisbon"
    assert document_text("User likes tea", None, None, None) == "User likes tea"
    assert meaning_query("Where did I park my car?", []) == "Where did they park their car?"
    assert meaning_query("me", []) == "me"  # nothing else to mean: as asked


@both_backends
def test_a_store_records_its_document_form_and_reembed_rebuilds_an_older_one(
    make_memory: MakeMemory, db_path: str
) -> None:
    m = make_memory()
    m.add("I moved to Lisbon last spring", user="u1")
    m.flush()
    store = m.service.store
    assert store.get_meta("document_form") == DOCUMENT_FORM and not outdated_form(store)
    store.set_meta("document_form", "1")  # as a store made before the third person
    assert outdated_form(store)
    m.close()
    again = make_memory()  # opens as it is: nothing is dropped without reembed
    assert again.stats().pending_embeddings == 0 and outdated_form(again.service.store)
    again.close()
    rebuilt = make_memory(reembed=True)  # drops the vectors and the model: a fresh binding
    rebuilt.flush()
    assert rebuilt.stats().pending_embeddings == 0
    assert not outdated_form(rebuilt.service.store)
    hits = rebuilt.search("where does the user live?", user="u1", recipe="vector")
    assert hits[0].memory.content == "I moved to Lisbon last spring"


def test_cli_reembed_rebuilds_an_older_form_with_confirmation(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with Memory(path, embedder="fake") as old:
        old.add("I moved to Lisbon last spring", user="u1")
        old.flush()
        old.service.store.set_meta("document_form", "1")
    runner = CliRunner()
    refused = runner.invoke(app, ["reembed", "--db", path, "--embedder", "fake"])
    assert refused.exit_code != 0 and "third-person" in refused.output
    assert "Traceback" not in refused.output
    with Memory(path, embedder="fake") as mem:
        assert outdated_form(mem.service.store)  # nothing changed
    done = runner.invoke(app, ["reembed", "--db", path, "--embedder", "fake", "--yes"])
    assert done.exit_code == 0, done.output
    assert "1 memory embedded" in done.output
    with Memory(path, embedder="fake") as mem:
        assert not outdated_form(mem.service.store)
        assert mem.stats().pending_embeddings == 0
