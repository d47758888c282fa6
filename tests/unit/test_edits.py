"""Editing a fact keeps it true and single (audit fixes): a ``value`` the new text no
longer says goes with the old text; an edit never makes a fact a copy of another."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.errors import ConflictError
from memloci.service.edits import value_still_holds
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("value", "text", "holds"),
    [
        ("red", "User's favourite colour is blue", False),
        ("red", "User's favourite colour is dark RED", True),
        ("New York", "User moved to New York.", True),
        (42, "User is 42 years old", True),
        (42, "User is 420 km away", False),
        (3.5, "The dose is 3.5 mg", True),
        (3.5, "The dose is 3.55 mg", False),
        (2.0, "User has 2 kids", True),
        (True, "User is no longer vegetarian", True),  # the text cannot show it: kept
        (["tea"], "User drinks coffee", True),
        (None, "anything", False),
    ],
)
def test_a_value_holds_while_the_text_still_says_it(value: object, text: str, holds: bool) -> None:
    assert value_still_holds(value, text) is holds


@both_backends
def test_update_and_correct_drop_a_value_the_new_text_no_longer_says(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    colour = mem.remember("User's favourite colour is red", key="favorite_color", value="red")
    updated = mem.update(colour.memory.id, "User's favourite colour is green").memory
    assert updated.value is None
    assert mem.lookup("favorite_color").value is None  # not the old "red"
    city = mem.remember("User lives in Lisbon", key="city", value="Lisbon").memory
    fixed = mem.correct(city.id, "User lives in Porto").memory
    assert fixed.value is None
    kept = mem.correct(fixed.id, "User lives in Porto, Portugal", value="Porto").memory
    assert kept.value == "Porto"
    again = mem.correct(kept.id, "User lives in the centre of Porto").memory
    assert again.value == "Porto"  # still said: kept
    rephrased = mem.update(again.id, "User lives in central Porto").memory
    assert rephrased.value == "Porto" and rephrased.version == 2
    set_too = mem.update(rephrased.id, "User lives in Braga", value="Braga", set_value=True)
    assert set_too.memory.value == "Braga"


@both_backends
def test_an_edit_never_makes_a_fact_a_copy_of_another(make_memory: MakeMemory) -> None:
    mem = make_memory()
    tom = mem.remember("User has a cat named Tom", user="u1").memory
    rex = mem.remember("User has a dog named Rex", user="u1").memory
    with pytest.raises(ConflictError, match=tom.id) as err:
        mem.update(rex.id, "user has a cat  named Tom")
    assert err.value.hint and rex.id in err.value.hint
    with pytest.raises(ConflictError, match=tom.id):
        mem.correct(rex.id, "User has a cat named Tom")
    assert mem.get(rex.id).content == "User has a dog named Rex" and mem.get(rex.id).is_current
    assert [v.content for v in mem.history(rex.id)] == ["User has a dog named Rex"]
    other = mem.remember("User has a cat named Tom", user="u2").memory  # another owner's
    assert other.id != tom.id
    assert mem.update(rex.id, "User has a dog named Rex Junior").action == "updated"
    assert mem.update(tom.id, "User has a cat named Tom").action == "updated"  # itself: fine


def test_a_fact_said_again_gets_back_the_confidence_decay_took(make_memory: MakeMemory) -> None:
    """Decay lowered the allergy fact below what ``recall`` shows; the user saying it
    again (``remember``, or in a session) makes it as certain as it is said now."""
    from memloci.storage.base import NodePatch

    mem = make_memory(consolidate_on_session_switch=False)
    store = mem.service.store
    fact = mem.remember("User is allergic to penicillin", user="u1").memory
    store.memories.update_node(
        "default", fact.id, NodePatch(confidence=0.333)
    )  # as decay leaves it
    again = mem.remember("User is allergic to penicillin", user="u1")
    assert again.action == "confirmed" and again.memory.confidence == 1.0
    store.memories.update_node("default", fact.id, NodePatch(confidence=0.2))
    mem.add("Remember that I am allergic to penicillin", user="u1", session="s1", role="user")
    report = mem.end_session("s1")
    assert report.confirmed == 1
    restored = mem.get(fact.id)
    assert restored.confidence > 0.5 and restored.times_confirmed == 2
    low = mem.remember("User keeps a spare key under the mat", user="u1", confidence=0.6)
    said = mem.remember("User keeps a spare key under the mat", user="u1", confidence=0.4)
    assert said.memory.confidence == 0.6  # never lowered by a less certain restatement
    assert low.memory.id == said.memory.id
