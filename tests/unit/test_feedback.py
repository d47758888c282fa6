"""Meaning of the best facts: when a search's best hits are facts, meaning is searched
again from where they are (pseudo-relevance feedback on the stored vectors) — never
from chat turns, never when the query names a person no memory holds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memloci import Memory
from memloci.retrieval.feedback import FEEDBACK_HITS, FEEDBACK_SHARE, feedback_vector
from memloci.storage.base import NodeFilter
from pgtest import both_backends

MakeMemory = Callable[..., Memory]
FEEDBACK = "meaning of the best facts"


def _facts(mem: Memory) -> list[str]:
    ids = [
        mem.remember(text, user="u1", subject="Nate").memory.id
        for text in (
            "Nate has turtles as pets and loves watching them.",
            "Nate has a third turtle as a pet.",
            "Nate enjoys spending time with his pets.",
            "Nate adopted a dog named Max who is full of energy.",
            "Nate won a video game tournament last week.",
        )
    ]
    assert mem.flush(20)
    return ids


@both_backends
def test_a_fact_store_searches_meaning_again_from_its_best_facts(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    _facts(mem)
    hits = mem.search("What pets does Nate have?", user="u1", k=5)
    assert any(FEEDBACK in h.why for h in hits)
    # a name nobody holds: the best hits may be anyone's, so no feedback
    hits = mem.search("What pets does Robin have?", user="u1", k=5)
    assert hits and not any(FEEDBACK in h.why for h in hits)
    # the baselines never
    hits = mem.search("What pets does Nate have?", user="u1", k=5, recipe="vector")
    assert not any(FEEDBACK in h.why for h in hits)


@both_backends
def test_chat_turns_give_no_feedback(make_memory: MakeMemory) -> None:
    mem = make_memory()
    for i, (who, text) in enumerate(
        [
            ("Nate", "I have turtles as pets, I love watching them."),
            ("Joanna", "Haha, that's so cute!"),
            ("Nate", "I adopted a dog named Max, he's full of energy."),
            ("Joanna", "Max sounds like a great pup."),
        ]
    ):
        mem.add(text, user="u1", session="s1", speaker=who, metadata={"i": i})
    assert mem.flush(20)
    hits = mem.search("What pets does Nate have?", user="u1", k=4)
    assert hits and not any(FEEDBACK in h.why for h in hits)


@both_backends
def test_the_query_moves_toward_the_mean_of_the_best_facts(make_memory: MakeMemory) -> None:
    mem = make_memory()
    ids = _facts(mem)
    store, flt = mem.service.store, NodeFilter(namespaces=("default",), user="u1")
    vectors = store.search.vectors("default", ids)
    query = np.zeros_like(np.frombuffer(vectors[ids[0]], dtype=np.float32))
    query[0] = 1.0
    moved = feedback_vector(store, flt, ids, query)
    assert moved is not None
    mean = np.mean(
        [np.frombuffer(vectors[i], dtype=np.float32) for i in ids[:FEEDBACK_HITS]], axis=0
    )
    want = query + FEEDBACK_SHARE * mean
    assert moved == pytest.approx(want / np.linalg.norm(want), abs=1e-5)
    # an episode among the best hits: none
    turn = mem.add("I have turtles.", user="u1", session="s1", speaker="Nate")
    assert mem.flush(20)
    assert feedback_vector(store, flt, [ids[0], turn.id, ids[1]], query) is None
    assert feedback_vector(store, flt, ids[:2], query) is None  # fewer than three
