"""People called by another form of their name: "Mel" for a speaker labelled
"Melanie", "Mike" for "Michael", "Caro" for "Caroline Okafor" (retrieval/nicknames.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.retrieval.nicknames import nicknamed, other_form, spelt_alike, with_surnames
from memloci.storage.base import NodeFilter
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("word", "name", "same"),
    [
        ("mel", "melanie", True),  # the beginning of the name
        ("caro", "caroline", True),
        ("mike", "michael", True),  # a common short form
        ("michael", "mike", True),  # and the other way
        ("melanie", "mel", True),  # a listed full form of three letters
        ("caroline", "caro", True),  # longer than a name of four letters or more
        ("robin", "rob", False),  # but not of three: Robin is not Rob
        ("tommy", "tom", True),  # a pet form of a short name
        ("katie", "kat", True),
        ("robby", "rob", True),
        ("jo", "joanna", False),  # two letters could be anyone
        ("melanie", "melanie", False),  # the same name is no other form
        ("mel", "mel-ann", False),  # a name of letters only
    ],
)
def test_other_form(word: str, name: str, same: bool) -> None:
    assert other_form(word, name) is same


@pytest.mark.parametrize(
    ("word", "name", "same"),
    [
        ("muhammad", "muhhamed", True),  # doubled letters read once, one letter changed
        ("mohammed", "muhhamed", True),
        ("carroline", "caroline", True),  # a letter doubled
        ("carolina", "caroline", True),  # one changed
        ("jhon", "john", True),  # two swapped
        ("nicholas", "nicolas", True),  # one added
        ("vanesa", "vanessa", True),
        ("mark", "mary", True),  # one letter of four: the store decides (no "mark" in it)
        ("jun", "jon", False),  # three letters: too short to tell
        ("john", "jon", True),  # but for a silent "h"
        ("jon", "john", True),
        ("jonny", "jon", False),
        ("emmy", "emi", True),  # a last "y" for "i"
        ("toni", "tony", True),
        ("emma", "emi", False),
        ("kevin", "keith", False),  # two changes in a short name
        ("paul", "paola", False),
        ("gina", "nina", False),  # another first letter
        ("caroline", "caroline", False),  # the same name
    ],
)
def test_spelt_alike(word: str, name: str, same: bool) -> None:
    assert spelt_alike(word, name) is same


def chat(m: Memory, user: str, turns: list[tuple[str, str]]) -> None:
    for who, text in turns:
        m.add(text, user=user, session=f"{user}-s1", speaker=who)
    m.flush()


@pytest.mark.slow
@both_backends
def test_a_speaker_is_found_by_another_form_of_their_name(make_memory: MakeMemory) -> None:
    m = make_memory(embedder="local")
    chat(
        m, "u1",
        [
            ("Melanie", "I painted a lake at sunrise last weekend"),
            ("Caroline Okafor", "I went to a support group on Friday"),
            ("Michael", "I fixed my old bike in Melbourne"),
            ("Joanna", "I am writing a screenplay"),
            ("Joseph", "I started a pottery class"),
            ("Arthur", "I play the cello"),
            ("Tom", "I fixed the roof"),
        ],
    )  # fmt: skip
    store = m.service.store
    u1 = NodeFilter(namespaces=("default",), user="u1")

    def meant(query: str) -> list[tuple[str, str]]:
        named = store.graph.entities_in_text(u1.namespaces, query)
        return [(w, e.canonical_name) for w, e in nicknamed(store, u1, query, named)]

    assert meant("What did Mel paint?") == [("Mel", "Melanie")]
    assert meant("Where did Caro go on Friday?") == [("Caro", "Caroline Okafor")]
    assert meant("What did Mike fix?") == [("Mike", "Michael")]
    assert meant("What did Tommy fix?") == [("Tommy", "Tom")]  # a pet form
    assert meant("What did Melanie paint?") == []  # the name itself: entities_in_text
    assert meant("What is Jo writing?") == []  # Joanna or Joseph: nobody
    assert meant("Is Melbourne nice?") == []  # a word of the memories, not a name
    # typed in lower case: a word where a name would be, after "did", before "'s"
    assert meant("what did mel paint") == [("mel", "Melanie")]
    assert meant("is caro's group on friday") == [("caro", "Caroline Okafor")]
    assert meant("what is art about") == []  # "is art": a word
    assert meant("what did Art say about art") == [("Art", "Arthur")]
    # misspelt: one person spelt alike, and no memory holds the word
    assert meant("What did Mellanie paint?") == [("Mellanie", "Melanie")]
    assert meant("Where did Carolina go on Friday?") == [("Carolina", "Caroline Okafor")]
    assert meant("What is Joana writing?") == [("Joana", "Joanna")]
    assert meant("What did Micheal fix?") == [("Micheal", "Michael")]
    hits = m.search("What did Mel paint?", user="u1", k=3)
    assert hits[0].memory.content == "I painted a lake at sunrise last weekend"
    assert "entity Melanie" in hits[0].why


@both_backends
def test_another_users_person_is_nobody_here(make_memory: MakeMemory) -> None:
    """Entities are the namespace's, the people a user's memories are linked to are
    theirs: u2's question about "Mel" does not mean u1's Melanie."""
    m = make_memory()
    chat(m, "u1", [("Melanie", "I painted a lake at sunrise"), ("Ben", "Lovely!")])
    chat(m, "u2", [("Ana", "My cat sleeps all day"), ("Bo", "Cute")])
    store = m.service.store
    u2 = NodeFilter(namespaces=("default",), user="u2")
    assert nicknamed(store, u2, "What did Mel paint?", []) == []
    u1 = NodeFilter(namespaces=("default",), user="u1")
    assert [e.canonical_name for _, e in nicknamed(store, u1, "What did Mel paint?", [])] == [
        "Melanie"
    ]
    assert all("Melanie" not in h.why for h in m.search("What did Mel paint?", user="u2"))


@both_backends
def test_a_surname_no_memory_holds_is_part_of_the_name(make_memory: MakeMemory) -> None:
    """A speaker labelled "Caroline" asked about as "Caroline Okafor": the surname is part
    of her name, neither searched for nor embedded; a word the memories hold is not."""
    m = make_memory()
    chat(m, "u1", [("Caroline", "I visited the Hart farm"), ("Ben", "Nice!")])
    store = m.service.store
    u1 = NodeFilter(namespaces=("default",), user="u1")

    def names(query: str) -> list[str]:
        named = store.graph.entities_in_text(u1.namespaces, query)
        return [n for n, _ in with_surnames(store, u1, query, named)]

    assert names("What did Caroline Okafor paint?") == ["caroline Okafor"]
    assert names("Where is Caroline Okafor's studio?") == ["caroline Okafor"]
    assert names("What did Caroline Hart say?") == ["caroline"]  # "Hart": a word here
    assert names("Did Caroline and Ben talk?") == ["caroline", "ben"]
    hits = m.search("What did Caroline Okafor visit?", user="u1", k=1)
    assert "entity Caroline" in hits[0].why


@both_backends
def test_a_misspelt_name_a_memory_holds_is_not_a_person(make_memory: MakeMemory) -> None:
    """A word spelt like a person's name that the memories use ("Marie", a ship here) is
    what they say, not the person misspelt; two people spelt alike mean nobody."""
    m = make_memory()
    chat(
        m, "u1",
        [("Maria", "We sailed on the Marie last June"), ("Ben", "Nice!"),
         ("Dana", "I bake bread"), ("Dina", "I bake cakes")],
    )  # fmt: skip
    store = m.service.store
    u1 = NodeFilter(namespaces=("default",), user="u1")
    assert nicknamed(store, u1, "Did Marie sail?", []) == []
    assert nicknamed(store, u1, "What does Dena bake?", []) == []  # Dana or Dina
    assert [e.canonical_name for _, e in nicknamed(store, u1, "Did Mariah sail?", [])] == ["Maria"]


@both_backends
def test_a_speaker_labelled_in_lower_case_is_a_person(make_memory: MakeMemory) -> None:
    """Chat exports label people by what they typed ("elise", "fahim khan") or by a
    contact name with emoji ("Emi 🌸"): such a label is the person of that name,
    capitalised, without its decoration; a lower-case role or word ("me") is nobody."""
    m = make_memory()
    chat(
        m, "u1",
        [("elise", "I finally painted the lake at sunset"), ("fahim khan", "I went running"),
         ("me", "I adopted a cat"), ("Emi 🌸", "I started at the bakery"),
         ("elise", "I love my new job"), ("Emi 🌸", "My job at the bakery starts early")],
    )  # fmt: skip
    names = {e.canonical_name for e in m.service.store.entities.list_entities("default")}
    assert {"Elise", "Fahim Khan", "Emi"} <= names
    assert not names & {"me", "Me"}
    hits = m.search("When does Emi's job start?", user="u1", k=3)
    assert hits[0].memory.content == "My job at the bakery starts early"
    assert "entity Emi" in hits[0].why
    # her own messages first: Elise's job is another person's
    assert [h.memory.speaker for h in hits[:2]] == ["Emi 🌸", "Emi 🌸"]
    hits = m.search("What did Elise paint?", user="u1", k=2)
    assert hits[0].memory.speaker == "elise"
    assert "entity Elise" in hits[0].why
    hits = m.search("Where did Fahim go?", user="u1", k=2)
    assert "entity Fahim Khan" in hits[0].why


@both_backends
def test_a_name_typed_without_its_accents_finds_the_person(make_memory: MakeMemory) -> None:
    m = make_memory()
    chat(
        m, "u1",
        [("Zoë", "I buy old lamps at flea markets"), ("José", "I buy vintage guitars"),
         ("José", "I play in a band on weekends"), ("Zoë", "I adopted a kitten")],
    )  # fmt: skip
    for query, who in [
        ("What does Jose buy?", "José"),
        ("what does jose buy", "José"),
        ("What does Zoe buy?", "Zoë"),
    ]:
        hits = m.search(query, user="u1", k=4)
        assert hits[0].memory.speaker == who
        assert f"entity {who}" in hits[0].why
        other = next(h for h in hits if h.memory.speaker != who and "buy" in h.memory.content)
        assert f"said by another person than {who}" in other.why
