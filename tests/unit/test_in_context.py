"""Meaning in context: a chat turn is also matched by what it means together with the
turn it replies to (:mod:`memloci.retrieval.incontext`), with the real embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memloci import Memory
from memloci.retrieval.incontext import meaning_in_context
from memloci.storage.base import NodeFilter

TURNS = [
    ("ana", "How is the new puppy settling in?"),
    ("ben", "The little one is doing great, learning commands already."),
    ("ana", "Aww, send pics!"),
    ("ben", "I started a pottery class last week."),
    ("ana", "My sister moved to Denver."),
    ("ben", "Work has been really busy."),
]


def chat(path: Path, **options: float) -> Memory:
    mem = Memory(str(path), **options)
    for speaker, text in TURNS:
        mem.add(text, user="u1", session="s1", speaker=speaker)
    assert mem.flush(60)
    return mem


def test_a_reply_is_found_by_what_it_answers(tmp_path: Path) -> None:
    """ "The little one is doing great" says nothing of a dog on its own; with the
    question it answers it is the best match. Without the list (weight 0) the question
    and a reaction come first."""
    query = "how is the dog adjusting?"
    with chat(tmp_path / "a.db") as mem:
        hits = mem.search(query, user="u1", k=3)
        assert hits[0].memory.content.startswith("The little one")
        assert hits[0].strategies["context"] <= 2  # its exchange with the question
        assert "meaning in context #" in hits[0].why
        assert "context" not in mem.search(query, user="u1", k=3, recipe="vector")[0].strategies
    with chat(tmp_path / "b.db", weight_context=0) as mem:
        hits = mem.search(query, user="u1", k=3)
        assert not hits[0].memory.content.startswith("The little one")
        assert all("meaning in context" not in h.why for h in hits)


def test_a_turn_takes_the_best_of_its_own_meaning_and_its_exchanges(tmp_path: Path) -> None:
    with chat(tmp_path / "c.db") as mem:
        store = mem.service.store
        flt = NodeFilter(namespaces=("default",), user="u1")
        nodes = {n.content: n.id for n in store.memories.list_nodes(flt, limit=20)}
        ids = list(nodes.values())
        raw = store.search.vectors("default", ids)
        vec = {i: np.frombuffer(b, dtype=np.float32) for i, b in raw.items()}
        question, answer, reaction = (nodes[text] for _, text in TURNS[:3])
        query = vec[question]  # the question's own vector as the query
        got = dict(meaning_in_context(store, flt, [(answer, 1.0)], query, limit=50))
        # the answer, the turn after it and the turns they reply to
        assert set(got) == {question, answer, reaction}
        # the question is the query: its own cosine is best; the answer rises with it
        assert np.isclose(got[question], 1.0)
        mean = vec[answer] + vec[question]
        exchange = float(mean @ query) / float(np.linalg.norm(mean))
        assert np.isclose(got[answer], exchange) and exchange > float(vec[answer] @ query)
        # another user's search sees none of them
        other = NodeFilter(namespaces=("default",), user="u2")
        assert meaning_in_context(store, other, [(i, 1.0) for i in ids], query, limit=50) == []


def test_notes_of_one_person_keep_their_own_meaning(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "n.db")) as mem:
        notes = ("I moved to Lisbon", "My dog Biscuit hates rain", "I work as a nurse")
        for text in notes:
            mem.add(text, user="u1", session="s1", speaker="user")
        assert mem.flush(60)
        hits = mem.search("where does the user live?", user="u1", k=3)
        assert hits[0].memory.content == "I moved to Lisbon"
        for hit in hits:  # in no exchange: the same cosine on both lists
            assert hit.strategies["context"] == hit.strategies["vector"]
