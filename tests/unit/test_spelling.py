"""Query words spelt otherwise than the memories spell them (``retrieval.spelling``):
found by what the best matches by meaning say, searched again by their words."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.retrieval.spelling import candidates, distance, respell, respelt

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("a", "b", "edits"),
    [
        ("alergic", "allergic", 1),  # a letter dropped
        ("penuts", "peanuts", 1),
        ("torunament", "tournament", 1),  # two neighbours swapped
        ("recieved", "received", 1),
        ("educaton", "education", 1),
        ("reccomended", "recommended", 2),
        ("core", "care", 1),
        ("kitten", "sitting", 3),
    ],
)
def test_distance_counts_edits_and_swaps(a: str, b: str, edits: int) -> None:
    assert distance(a, b, 3) == edits
    assert distance(a, b, edits - 1) == edits  # beyond the limit: the limit + 1


def test_only_lower_case_content_words_no_english_word_are_candidates() -> None:
    # "Robin" is written as a name; "mates" and "core" are English words; "the" is no
    # content word; "ok" is too short
    query = "Did Robin tell the mates ok about her alergic core penuts?"
    assert candidates(query) == ["alergic", "penuts"]


def test_respell_takes_the_nearest_word_the_matches_use() -> None:
    texts = ["I'm allergic to peanuts", "My peanut butter", "Allergies again"]
    assert respell(["alergic", "penuts", "zzzzqq"], texts) == {
        "alergic": "allergic",
        "penuts": "peanuts",  # one edit from both "peanuts" and "peanut": the first used
    }
    # the first letter must agree (or the first two be swapped): "ater" is not "water"
    assert respell(["ater"], ["water again"]) == {}
    assert respell(["htis"], ["this works"]) == {"htis": "this"}
    assert respell([], texts) == {}


def test_respelt_replaces_whole_words_in_any_case() -> None:
    assert respelt("Alergic to penuts? alergic!", {"alergic": "allergic", "penuts": "peanuts"}) == (
        "allergic to peanuts? allergic!"
    )


@pytest.mark.slow
def test_a_misspelt_question_finds_what_the_memories_say(make_memory: MakeMemory) -> None:
    mem = make_memory(embedder="local")
    peanuts = mem.add("I'm allergic to peanuts", user="u1")
    for text in ("I started a pottery class", "My neighbour's dog barks all night",
                 "I love spicy ramen", "We went hiking at Sintra last weekend"):  # fmt: skip
        mem.add(text, user="u1")
    mem.flush()
    hits = mem.search("is the user alergic to penuts?", user="u1", k=3)
    assert hits[0].memory.id == peanuts.id
    assert "full text #1" in hits[0].why
    assert "words searched as: alergic → allergic, penuts → peanuts" in hits[0].why
    # spelt right, nothing is respelt
    assert "searched as" not in mem.search("allergic to peanuts", user="u1")[0].why
