"""What counts as the same fact again (audit fixes): near-duplicates must agree on order,
sign, decimals, units and the case of literal tokens; a restatement right after an edit
sees the new text; a confirmed duplicate keeps the key, value and category it brings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memloci import Memory
from memloci.consolidation.dedupe import details, same_details, same_text
from memloci.errors import ValidationError
from pgtest import both_backends

MakeMemory = Callable[..., Memory]

DIFFERENT = [
    ("Ana owes Bob money", "Bob owes Ana money"),
    ("User's flight goes from Lisbon to Paris", "User's flight goes from Paris to Lisbon"),
    ("Rent is due on 2024-05-01", "Rent is due on 2024-01-05"),
    ("The exam is on 3/5", "The exam is on 5/3"),
    ("User lives at 12 Elm Street, apartment 3", "User lives at 3 Elm Street, apartment 12"),
    ("The meeting moved from 3pm to 5pm", "The meeting moved from 5pm to 3pm"),
    ("User's timezone is UTC+2", "User's timezone is UTC-2"),
    ("The temperature was -5 degrees", "The temperature was 5 degrees"),
    ("User's blood type is O+", "User's blood type is O-"),
    ("The dose is 3.5 mg", "The dose is 3.05 mg"),
    ("The daily run is 5 km", "The daily run is 5 miles"),
    ("User's son is 3 years old", "User's son is 3 months old"),
    ("User's budget is at least 500 dollars", "User's budget is at most 500 dollars"),
    ("User prefers tea over coffee", "User prefers coffee over tea"),
    ("User's email is ana@example.com", "User's email is ana@example.org"),
    ("User's password is Pa55word", "User's password is pa55word"),
    ("User's API key is sk-ABC", "User's API key is sk-abc"),
    ("User lives in Lisbon", "User lived in Lisbon"),
    ("User is a nurse", "User was a nurse"),
    ("User has a dog", "User had a dog"),
    ("User works at Initech", "User worked at Initech"),
    ("User drinks coffee", "User rarely drinks coffee"),
    ("User likes spicy food", "User likes very spicy food"),
    ("User runs on Sundays", "User sometimes runs on Sundays"),
    # kept apart before, still apart
    ("The meeting is in room 12", "The meeting is in room 9"),
    ("User likes jazz", "User doesn't like jazz"),
    ("Rent is $1,200 a month", "Rent is $1,500 a month"),
    ("The call is on Monday", "The call is on Tuesday"),
    ("Ana plays chess on Sundays", "Anna plays chess on Sundays"),
]

SAME = [
    ("User prefers light mode", "The user prefers light mode"),
    ("User likes hiking", "user likes hiking"),
    ("User's gym locker is number 17", "The user's gym locker is number 17"),
    ("Sarah's gym locker is number 17", "sarah's gym locker is number 17"),
    ("The dose is 3.5 mg", "The dose is 3.50 mg"),
    ("Rent is $1,200 a month", "Rent is $1200 a month"),
    ("I have 2 cats", "I have two cats"),
    ("User's favourite colour is green", "User's favorite color is green"),
    ("User moved to Porto", "The user moved to Porto"),
    ("User is married", "The user is married"),
    ("The user loves hiking", "The user really loves hiking"),  # emphasis only
    ("User likes coffee", "User likes coffee a lot"),
]


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_order_sign_decimals_units_and_case_make_different_facts(a: str, b: str) -> None:
    assert not same_details(a, b)
    assert not same_details(b, a)


@pytest.mark.parametrize(("a", "b"), SAME)
def test_restatements_keep_their_details(a: str, b: str) -> None:
    assert same_details(a, b)
    assert same_details(b, a)


def test_exact_text_keeps_the_case_of_literal_tokens() -> None:
    assert same_text("User likes hiking", "user  likes hiking")
    assert not same_text("User's password is Pa55word", "User's password is pa55word")
    assert not same_text("User's API key is sk-ABC", "user's api key is sk-abc")


def test_a_possessive_user_opening_a_sentence_is_no_name() -> None:
    assert details("User's gym locker is number 17")[1] == frozenset()
    assert details("Sarah's gym locker is number 17")[1] == {"sarah"}


@pytest.mark.slow
def test_remember_keeps_different_facts_and_confirms_restatements(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "real.db")) as mem:
        for i, (a, b) in enumerate(DIFFERENT):
            first = mem.remember(a, user=f"d{i}")
            second = mem.remember(b, user=f"d{i}")
            # never merged: a new memory each time (one that says another value of the
            # same single-valued property, "timezone is UTC-2", supersedes the first)
            assert first.action == "created", (a, b)
            assert second.action in ("created", "superseded"), (a, b)
            assert second.memory.id != first.memory.id
        for i, (a, b) in enumerate(SAME[:4]):  # the others are further apart in meaning
            first = mem.remember(a, user=f"s{i}")
            second = mem.remember(b, user=f"s{i}")
            assert (first.action, second.action) == ("created", "confirmed"), (a, b)
            assert second.memory.id == first.memory.id


def _no_background(mem: Memory) -> Memory:
    """Stop the embedding worker: nothing embeds behind the test's back."""
    assert mem.service.worker is not None
    mem.service.worker.close()
    mem.service.worker = None
    return mem


@both_backends
def test_a_restatement_right_after_an_edit_confirms_the_edited_fact(
    make_memory: MakeMemory,
) -> None:
    mem = _no_background(make_memory(duplicate_threshold=0.8))
    band = mem.remember("User's favourite band is Radiohead", user="x").memory
    mem.update(band.id, "User's favourite band is Portishead")
    again = mem.remember("The user's favourite band is Portishead", user="x")
    assert (again.action, again.memory.id) == ("confirmed", band.id)

    food = mem.remember("User's favourite food is sushi", user="x").memory
    fixed = mem.correct(food.id, "User's favourite food is ramen").memory
    again = mem.remember("The user's favourite food is ramen", user="x")
    assert (again.action, again.memory.id) == ("confirmed", fixed.id)

    car = mem.remember("User's car is a Volvo", key="car", user="x").memory
    assert mem.remember("User's car is a Saab", key="car", user="x").action == "updated"
    again = mem.remember("The user's car is a Saab", user="x")
    assert (again.action, again.memory.id) == ("confirmed", car.id)
    assert len(mem.list(user="x", limit=50)) == 3


@both_backends
def test_a_duplicate_with_a_key_value_or_category_sets_them(mem: Memory) -> None:
    first = mem.remember("Sam lives in Lisbon", user="sam").memory
    again = mem.remember(
        "Sam lives in Lisbon", key="home_city", value="Lisbon", category="person", user="sam"
    )
    assert again.action == "updated" and again.memory.id == first.id
    got = again.memory
    assert (got.key, got.value, got.category) == ("home_city", "Lisbon", "person")
    assert got.version == first.version + 1 and got.times_confirmed == 1
    assert "key 'home_city'" in again.message and "category 'person'" in again.message
    found = mem.lookup("home_city", user="sam")
    assert found is not None and found.id == first.id
    same = mem.remember("Sam lives in Lisbon", key="home_city", value="Lisbon", user="sam")
    assert same.action == "confirmed" and same.memory.version == got.version
    other = mem.remember("Sam lives in Lisbon", category="place", user="sam")
    assert other.action == "confirmed" and other.memory.category == "person"  # has one
    plain = mem.remember("sam lives in lisbon", user="sam")  # nothing new: kept as is
    assert plain.action == "confirmed" and plain.memory.key == "home_city"
    assert plain.memory.category == "person" and plain.memory.value == "Lisbon"


def test_overwriting_a_key_embeds_the_new_text_once(tmp_path: Path) -> None:
    """``remember`` embeds the new text to look for duplicates; the key's update then
    stores that vector rather than embedding the same text again."""
    from memloci.providers.fake import FakeEmbedder

    embedded: list[str] = []

    class Counting(FakeEmbedder):
        def embed(self, texts: list[str]) -> object:
            embedded.extend(texts)
            return super().embed(texts)

    with Memory(str(tmp_path / "m.db"), embedder=Counting()) as m:
        m.remember("User's home city is Lisbon", key="home_city", user="u")
        embedded.clear()
        done = m.remember("User's home city is Porto", key="home_city", user="u")
        assert done.action == "updated" and done.memory.content == "User's home city is Porto"
        assert len(embedded) == 1, embedded
        m.flush()
        hits = m.search("home city Porto", user="u", recipe="vector")
        assert hits[0].memory.id == done.memory.id


@both_backends
def test_an_edit_racing_a_forget_is_refused_not_lost(make_memory: Callable[..., Memory]) -> None:
    """Another process forgets the memory between an update's check and its write: the
    update is refused under the lock, never written onto a memory no longer current."""
    from memloci.models import utcnow
    from memloci.storage.base import NodePatch

    mem = make_memory()
    mid = mem.remember("The office is on the second floor", user="u").memory.id
    service = mem.service
    real = service.edits._embed_doc

    def forget_meanwhile(doc: str) -> object:  # runs between the check and the write
        service.store.memories.update_node("default", mid, NodePatch(valid_until=utcnow()))
        return real(doc)

    service.edits._embed_doc = forget_meanwhile  # type: ignore[method-assign]
    with pytest.raises(ValidationError, match="was forgotten; it can no longer change"):
        mem.update(mid, "The office is on the third floor")
    service.edits._embed_doc = real  # type: ignore[method-assign]
    assert [v.content for v in mem.history(mid)] == ["The office is on the second floor"]
    assert mem.forget(mid).action == "unchanged"


@both_backends
def test_a_search_as_of_a_past_time_reads_the_memory_as_it_was(make_memory: MakeMemory) -> None:
    from memloci.models import utcnow

    mem = make_memory()
    mid = mem.remember("Sarah works on the Platform team", user="u").memory.id
    then = utcnow()
    mem.update(mid, "Sarah works on the Design team")
    mem.update(mid, "Sarah is the Design team lead")
    mem.flush()
    [past] = [h for h in mem.search("Sarah team", user="u", as_of=then) if h.memory.id == mid]
    assert (past.memory.content, past.memory.version) == ("Sarah works on the Platform team", 1)
    [now] = [h for h in mem.search("Sarah team", user="u") if h.memory.id == mid]
    assert (now.memory.content, now.memory.version) == ("Sarah is the Design team lead", 3)
