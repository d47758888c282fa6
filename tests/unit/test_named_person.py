"""A question that names one speaker favours what that person said (or what is known of
them): another person's memory keeps ``OTHER_PERSON`` of its score."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memloci import Memory
from memloci.models import (
    Entity,
    EntityType,
    MemoryNode,
    NodeType,
    Scope,
    SearchHit,
    short_id,
)
from memloci.retrieval import fusion
from memloci.retrieval.fusion import OTHER_PERSON, Fused, favour_person
from memloci.retrieval.pipeline import handle_person, named_person, role_person, same_person
from memloci.retrieval.query import subjects
from pgtest import both_backends

MakeMemory = Callable[..., Memory]
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def person(name: str, *aliases: str) -> tuple[str, Entity]:
    entity = Entity(
        id=short_id(), canonical_name=name, type=EntityType.PERSON, aliases=list(aliases),
        first_seen=T0, last_seen=T0,
    )  # fmt: skip
    return name.split()[0], entity


def memory(speaker: str | None = None, subject: str | None = None) -> MemoryNode:
    return MemoryNode(
        id=short_id(), type=NodeType.EPISODIC, content="something said", speaker=speaker,
        subject=subject, scope=Scope.USER, user="u1", event_time=T0, created_at=T0,
        updated_at=T0, valid_from=T0,
    )  # fmt: skip


def test_named_person_is_the_one_named_speaker_or_subject() -> None:
    nodes = [memory("Ana Silva"), memory("Ben"), memory(subject="Cleo"), memory()]
    assert named_person([person("Ana Silva")], nodes) == "Ana Silva"
    assert named_person([person("Cleo")], nodes) == "Cleo"  # a fact's subject
    assert named_person([person("Benjamin", "ben")], nodes) == "Ben"  # by an alias
    assert named_person([person("Ana Silva"), person("Ben")], nodes) is None  # two people
    assert named_person([person("Dora")], nodes) is None  # named, but says nothing here
    assert named_person([], nodes) is None


def test_one_person_may_go_by_several_labels() -> None:
    """A chat export labels a person as their account was named at the time: "Fahim",
    later "Fahim Khan"; a contact name with emoji, "Emi 🌸". A question naming them is
    about every label they go by; two full names are two people."""
    assert same_person("Fahim", "Fahim Khan")
    assert same_person("Emi 🌸", "Emi")
    assert same_person("elise", "Elise")
    assert not same_person("Fahim Khan", "Fahim Ali")
    assert not same_person("Mel", "Melanie")  # another form: nicknames.py, not a label
    nodes = [memory("Fahim"), memory("Fahim Khan"), memory("Akib")]
    named = [person("Fahim"), person("Fahim Khan")]
    assert named_person(named, nodes) == "Fahim"
    two = [memory("Fahim Khan"), memory("Fahim Ali")]
    assert named_person([person("Fahim Khan"), person("Fahim Ali")], two) is None


@both_backends
def test_a_question_about_someone_favours_all_their_labels(make_memory: MakeMemory) -> None:
    m = make_memory()
    turns = [
        ("Fahim", "I started a new job at the bank"), ("Akib", "cool, how is it?"),
        ("Akib", "I bought a new bike"), ("Fahim Khan", "my job got me a bonus"),
        ("Akib", "I want to buy a car soon"),
        ("Fahim Khan", "I am thinking of buying a car with the bonus"),
        # other days: the query's words are in a few rows, not half of them
        ("Fahim", "the rain kept us home"), ("Akib", "we played chess all evening"),
        ("Fahim", "my sister visited from Dhaka"), ("Akib", "the match was a draw"),
        ("Fahim Khan", "I finished the novel"), ("Akib", "my cat slept all day"),
    ]  # fmt: skip
    for i, (who, text) in enumerate(turns):
        m.add(text, user="u1", session=f"s{i // 3}", speaker=who)
    m.flush()
    hits = m.search("What did Fahim want to buy?", user="u1", k=3)
    assert hits[0].memory.speaker == "Fahim Khan"
    akib = next(h for h in hits if h.memory.speaker == "Akib")
    assert "said by another person than Fahim" in akib.why


def test_favour_person_discounts_other_people_and_reorders() -> None:
    fused = [Fused("b", 0.9, {"vector": 1}), Fused("a", 0.8, {"vector": 2})]
    fused.append(Fused("n", 0.7, {"vector": 3}))
    out = favour_person(fused, {"a": "Ana", "b": "Ben", "n": None}, "Ana")
    assert [f.id for f in out] == ["a", "n", "b"]
    assert out[2].score == pytest.approx(0.9 * OTHER_PERSON)
    assert out[2].note == f"said by another person than Ana (×{OTHER_PERSON:g})"
    assert out[0].score == 0.8 and out[1].score == 0.7 and not out[0].note


def chat(m: Memory) -> None:
    turns = [
        ("Ana", "I adopted a rescue dog last spring, she is a shy greyhound."),
        ("Ben", "Ana, you should meet my dog Pixel, he is a big friendly labrador and loves"
         " other dogs!"),
        ("Ana", "Sure, the park on Sunday?"),
        ("Ben", "My dog Pixel will be thrilled, dogs are the best, Ana."),
    ]  # fmt: skip
    for who, text in turns:
        m.add(text, user="u1", session="s1", speaker=who)
    m.flush()


@pytest.mark.slow
@both_backends
def test_a_question_naming_a_speaker_finds_what_they_said_first(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = make_memory(embedder="local")
    chat(m)
    query = "What kind of dog does Ana own?"
    hits = m.search(query, user="u1", k=4)
    assert hits[0].memory.content.startswith("I adopted a rescue dog")
    assert "said by another person than Ana" in hits[1].why
    # by meaning alone Ben's turn is closer: without the rule (and without the exchange
    # that lifts Ana's turn toward Ben's closer reply) it would come first
    monkeypatch.setattr(fusion, "OTHER_PERSON", 1.0)
    monkeypatch.setattr(m.service.retriever.settings, "weight_context", 0.0)
    assert m.search(query, user="u1", k=4)[0].memory.speaker == "Ben"
    monkeypatch.undo()
    ben = m.search("What is Ben's dog called?", user="u1", k=4)
    assert ben[0].memory.speaker == "Ben" and "Pixel" in ben[0].memory.content


@pytest.mark.slow
@both_backends
def test_a_fact_about_the_named_person_comes_before_one_about_another(
    make_memory: MakeMemory,
) -> None:
    m = make_memory(embedder="local")
    m.remember("Ana adopted a shy greyhound from a shelter", user="u1", subject="Ana")
    m.remember("Ben's dog Pixel is a friendly labrador who loves dogs", user="u1", subject="Ben")
    m.remember("Ben walks Pixel in the park with Ana on Sundays", user="u1", subject="Ben")
    m.flush()
    hits = m.search("What kind of dog does Ana own?", user="u1", k=3)
    assert hits[0].memory.subject == "Ana"


@pytest.mark.slow
@both_backends
def test_a_speaker_labelled_by_role_is_known_by_the_name_they_are_called(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker links the `user` label's turns to "Alice" (the assistant calls them
    so): a question about Alice favours them, and `why` says her name."""
    m = make_memory(embedder="local")
    pairs = [
        ("I adopted a rescue dog last spring, she is a shy greyhound.",
         "That's great, Alice! My dog is a big friendly labrador who loves other dogs."),
        ("I finished my pottery class.", "Yum, Alice."),
        ("My sister lives in Porto.", "Hey Alice, do you visit her?"),
    ]  # fmt: skip
    for said, reply in pairs:
        m.add(said, user="u1", session="s1", speaker="user")
        m.add(reply, user="u1", session="s1", speaker="assistant")
        assert m.flush(20)  # batch by batch: the name is known after the third call
    favours_the_user(m, "What kind of dog does Alice own?", "Alice", 3, monkeypatch)


# one speaker's greyhound, the other's labrador (closer by meaning to "what kind of dog")
DOG_CHAT = [
    ("I adopted a rescue dog last spring, she is a shy greyhound.",
     "Lovely! A friendly labrador that loves other dogs is a great dog to have too."),
    ("I finished my pottery class.", "Well done, that takes patience."),
    ("My sister lives in Porto.", "Porto is a beautiful city."),
]  # fmt: skip


def favours_the_user(
    m: Memory,
    query: str,
    name: str,
    k: int,
    monkeypatch: pytest.MonkeyPatch,
    labels: tuple[str, str] = ("user", "assistant"),
) -> list[SearchHit]:
    """The greyhound turn said by ``labels[0]`` comes first for ``query``; the best hit of
    ``labels[1]`` says it is by another person than ``name`` and keeps OTHER_PERSON of its
    fused score (so it scores lower than without the rule). Returns the hits without the
    rule (and without meaning in context, which lifts an answer toward a closer reply
    to it)."""
    hits = m.search(query, user="u1", k=k)
    assert hits[0].memory.speaker == labels[0] and "greyhound" in hits[0].memory.content
    other = next(h for h in hits if h.memory.speaker == labels[1])
    assert other.why.endswith(f"said by another person than {name} (×{OTHER_PERSON:g})")
    monkeypatch.setattr(fusion, "OTHER_PERSON", 1.0)
    plain = m.search(query, user="u1", k=k)
    score = {h.memory.id: h.score for h in plain}[other.memory.id]
    assert other.score < score  # the score is calibrated relevance: lower, not in proportion
    monkeypatch.setattr(m.service.retriever.settings, "weight_context", 0.0)
    return m.search(query, user="u1", k=k)


def test_role_person_is_the_one_role_the_query_names() -> None:
    nodes = [memory("User"), memory("User"), memory("User"), memory("assistant")]
    assert role_person("What does the user cook?", nodes) == ("User", "the user")
    assert role_person("The user's sister", nodes) == ("User", "the user")
    # both roles, none, a role no hit (or too few) is said by, one speaker only
    assert role_person("what did the assistant tell the user?", nodes) is None
    assert role_person("what does Ana cook?", nodes) is None
    assert role_person("what did the assistant suggest?", nodes) is None
    assert role_person("what does the user cook?", nodes[:3]) is None
    assert role_person("what does the username say?", nodes) is None
    # the query is the user's own message: "I", "my", "me" are the user
    assert role_person("What's my dog called?", nodes) == ("User", "the user")
    assert role_person("what did i tell you about Porto", nodes) == ("User", "the user")
    assert role_person("what did the assistant tell me?", nodes) is None
    # the labels a role goes by: "Human" / "AI", "Me" in a chat export
    labelled = [memory("Human"), memory("Human"), memory("Human"), memory("AI")]
    assert role_person("what does the user cook?", labelled) == ("Human", "the user")


@pytest.mark.slow
@both_backends
def test_a_question_about_the_user_finds_what_the_user_said_first(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an agent's chat (speakers `user` and `assistant`), "the user" in a question is
    the speaker `user`: what the assistant said about the same thing gives way."""
    m = make_memory(embedder="local")
    for said, reply in DOG_CHAT:
        m.add([{"role": "user", "content": said}, {"role": "assistant", "content": reply}],
              user="u1", session="s1")  # fmt: skip
    m.flush()
    query = "What kind of dog does the user have?"
    plain = favours_the_user(m, query, "the user", 6, monkeypatch)
    assert plain[0].memory.speaker == "assistant"  # the rule decides the order


@pytest.mark.slow
@both_backends
def test_speakers_labelled_a_and_b_are_not_named_by_the_word_a(make_memory: MakeMemory) -> None:
    """A chat whose speakers are labelled "A" and "B": "a" in a question is a word, so
    no rule favours A's memories over what answers."""
    m = make_memory(embedder="local")
    for i in range(3):
        m.add(f"I went hiking in the Alps, trip {i}", user="u1", session="s1", speaker="A")
        m.add(f"I love painting a sunset, canvas {i}", user="u1", session="s1", speaker="B")
    m.flush()
    hits = m.search("Who likes painting a sunset?", user="u1", k=3)
    assert [h.memory.speaker for h in hits] == ["B", "B", "B"]
    assert not any("another person" in h.why for h in hits)


def test_handle_person_is_the_one_label_the_name_begins() -> None:
    nodes = [memory("melanie18"), memory("melanie18"), memory("melanie18"), memory("@caro_k")]
    assert handle_person("What does Melanie cook?", nodes) == ("melanie18", "Melanie")
    assert handle_person("Did Caro call?", nodes * 3) == ("@caro_k", "Caro")
    # not a handle of the name ("melanies"), too few hits, one speaker only, two names
    assert handle_person("What does Mel cook?", [memory("melanies")] * 3 + nodes[3:]) is None
    assert handle_person("What does Melanie cook?", nodes[2:]) is None
    assert handle_person("What does Melanie cook?", nodes[:3]) is None
    assert handle_person("Did Melanie call Caro?", nodes * 3) is None


@pytest.mark.slow
@both_backends
def test_a_handle_nobody_calls_by_name_is_found_by_the_name_it_begins_with(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """People rarely type each other's names in a chat: "melanie18" is never called
    Melanie, yet a question about Melanie favours what that handle said."""
    m = make_memory(embedder="local")
    for said, reply in DOG_CHAT:
        m.add(said, user="u1", session="s1", speaker="melanie18")
        m.add(reply, user="u1", session="s1", speaker="jo_k")
    m.flush()
    query = "What kind of dog does Melanie have?"
    plain = favours_the_user(m, query, "Melanie", 6, monkeypatch, ("melanie18", "jo_k"))
    assert plain[0].memory.speaker == "jo_k"  # the rule decides the order


@pytest.mark.parametrize(
    ("query", "names", "doers"),
    [
        ("What did Jon say about Gina's progress with her store?", ["Jon", "Gina"], ["Jon"]),
        ("What book did Tim recommend to John?", ["Tim", "John"], ["Tim"]),
        ("What nickname does Nate use for Joanna?", ["Nate", "Joanna"], ["Nate"]),
        ("What did Gina tell Jon?", ["Gina", "Jon"], ["Gina"]),
        ("According to Gina, what makes Jon a good mentor?", ["Gina", "Jon"], ["Gina"]),
        ("What animal do both Nate and Joanna like?", ["Nate", "Joanna"], []),
        ("What did Ana and Ben cook?", ["Ana", "Ben"], []),
        ("Did ana meet ben?", ["ana", "ben"], ["ana"]),
        ("What did Gina's friend tell Jon?", ["Gina", "Jon"], []),
        ("What recommendations has Nate received from Joanna?", ["Nate", "Joanna"], ["Joanna"]),
        ("What advice did Caroline get from Melanie?", ["Caroline", "Melanie"], ["Melanie"]),
        ("What did Nate buy from Joanna?", ["Nate", "Joanna"], ["Nate"]),
    ],
)
def test_subjects_are_who_does_what_the_query_asks(
    query: str, names: list[str], doers: list[str]
) -> None:
    assert subjects(query, names) == doers


@pytest.mark.slow
@both_backends
def test_of_two_people_named_the_one_who_does_it_is_favoured(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question naming both speakers ("What kind of dog did Ana tell Ben about?")
    favours the one who told: her turn comes first and Ben's says why it is lower."""
    m = make_memory(embedder="local")
    chat(m)
    query = "What kind of dog did Ana tell Ben about?"
    hits = m.search(query, user="u1", k=4)
    assert hits[0].memory.content.startswith("I adopted a rescue dog")
    ben = next(h for h in hits if h.memory.speaker == "Ben")
    assert "said by another person than Ana" in ben.why
    both = m.search("What kind of dog do Ana and Ben talk about?", user="u1", k=4)
    assert not any("another person" in h.why for h in both)  # neither is favoured
    monkeypatch.setattr(fusion, "OTHER_PERSON", 1.0)
    monkeypatch.setattr(m.service.retriever.settings, "weight_context", 0.0)
    assert m.search(query, user="u1", k=4)[0].memory.speaker == "Ben"


def test_a_fact_about_someone_answers_a_question_about_my_life(make_memory: MakeMemory) -> None:
    """ "who is my partner?" means the user (a speaker label): what the assistant said is
    another speaker's, but a fact about the partner is not "said by another person"."""
    mem = make_memory()
    chat = [
        ("user", "Hey, I'm Tom. I live in Berlin with my partner."),
        ("assistant", "Nice to meet you, Tom!"),
        ("user", "My partner is a nurse and works nights."),
        ("assistant", "That sounds demanding."),
        ("user", "I work as a carpenter."),
        ("assistant", "A lovely craft."),
    ]
    for role, text in chat:
        mem.add(text, user="tom", session="s1", role=role)
    fact = mem.remember("Tom's partner is called Lena", user="tom", subject="Lena").memory
    mem.flush()
    hits = {h.memory.id: h for h in mem.search("who is my partner?", user="tom")}
    assert fact.id in hits and "another person" not in hits[fact.id].why
    assistant = [h for h in hits.values() if h.memory.speaker == "assistant"]
    assert assistant and all("another person than the user" in h.why for h in assistant)


def test_turns_about_someone_who_never_speaks_are_not_anothers(
    make_memory: MakeMemory,
) -> None:
    """Ana is only talked about (the subject of a fact, never a speaker): the user's turns
    about her are not "said by another person than Ana"; a fact about someone else is."""
    mem = make_memory()
    for role, text in [
        ("user", "My best friend Ana Souza started her new job at Spotify."),
        ("assistant", "That's exciting for Ana!"),
        ("user", "I work as a product manager."),
        ("assistant", "Nice."),
    ]:
        mem.add(text, user="u1", session="s1", role=role)
    mem.remember("Ana Souza is the user's best friend", user="u1", subject="Ana Souza")
    mem.remember("Rui works at the bakery", user="u1", subject="Rui")
    mem.flush()
    hits = {h.memory.content: h for h in mem.search("where does Ana work?", user="u1", k=10)}
    spotify = hits["My best friend Ana Souza started her new job at Spotify."]
    assert "another person" not in spotify.why
    assert "another person" in hits["Rui works at the bakery"].why
