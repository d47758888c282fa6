"""Near-duplicate detection never merges facts that differ in a number, date, name or
negation (issue 11 item 3); a true paraphrase still confirms the memory it repeats."""

from __future__ import annotations

from pathlib import Path

import pytest

from memloci import Memory
from memloci.consolidation.dedupe import details, same_details

COLOURS = ("red", "blue", "green", "black", "white")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Parallel fact number 1 for the team", "Parallel fact number 2 for the team"),
        ("The server rack sits in room 31", "The server rack sits in room 312"),
        ("The meeting is on the 12th", "The meeting is on the 13th"),
        ("The release is on 2024-05-01", "The release is on 2024-06-01"),
        ("We met in May", "We met in June"),
        ("I have two cats", "I have three cats"),
        ("Alice lives in Paris", "Bob lives in Paris"),
        ("The user moved to Lisbon", "The user moved to Porto"),
        ("I like Python", "I don't like Python"),
        ("I like Python", "I do not like Python"),
        ("The user eats meat", "The user never eats meat"),
        ("Tea with sugar", "Tea without sugar"),
    ],
)
def test_different_details_are_different_facts(a: str, b: str) -> None:
    assert not same_details(a, b)
    assert not same_details(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user's favourite colour is blue", "The user's favorite color is blue"),
        ("The user prefers dark mode", "User prefers dark mode."),
        ("I don't like Python", "I do not like Python"),
        ("Alice works at Google", "Alice is employed by Google"),
        ("I have 2 cats", "I have two cats"),
    ],
)
def test_paraphrases_keep_their_details(a: str, b: str) -> None:
    assert same_details(a, b)


def test_details_reads_digits_inside_tokens() -> None:
    numbers, names, negations = details("Race fact 7: the red server rack 7 sits in room 37")
    assert numbers == {"7", "37"}
    assert "race" in names and not negations


def _facts(mem: Memory, user: str) -> list[str]:
    return [n.content for n in mem.list(user=user, limit=500)]


@pytest.mark.slow
def test_numbered_facts_are_all_kept_with_the_bundled_model(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "real.db")) as mem:
        texts = [
            f"Race fact {i}: the {COLOURS[i % 5]} server rack {i} sits in room 3{i}"
            for i in range(50)
        ]
        results = [mem.remember(t, user="u1") for t in texts]
        assert [r.action for r in results] == ["created"] * 50
        parallel = [f"Parallel fact number {n} for the team" for n in range(1, 5)]
        assert [mem.remember(t, user="u2").action for t in parallel] == ["created"] * 4
        assert sorted(_facts(mem, "u1")) == sorted(texts)
        assert sorted(_facts(mem, "u2")) == sorted(parallel)


@pytest.mark.slow
def test_negation_is_kept_and_a_paraphrase_confirms(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "real.db")) as mem:
        liked = mem.remember("I like Python", user="u1")
        disliked = mem.remember("I don't like Python", user="u1")
        assert (liked.action, disliked.action) == ("created", "created")
        first = mem.remember("The user's favourite colour is blue", user="u1")
        again = mem.remember("The user's favorite color is blue", user="u1")
        assert again.action == "confirmed"
        assert again.memory is not None and first.memory is not None
        assert again.memory.id == first.memory.id
        assert again.memory.times_confirmed == 1
        assert first.memory.id in again.message and "near-duplicate" in again.message
        assert len(_facts(mem, "u1")) == 3
