"""Speakers labelled by role or handle ("user", "assistant", "Speaker 1") are known by
the name the other speaker calls them: the names in direct address, the inference over
a two-person chat, and the worker's links — on both backends, through the SDK. And a
person the query names is embedded as a pronoun: the entity list holds their memories."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pytest

from memloci import Memory
from memloci.consolidation.speakers import MIN_CALLED, says, speaker_names
from memloci.models import Entity, EntityType
from memloci.providers.fake import FakeEmbedder
from memloci.retrieval.graph import meaning_query, strangers
from memloci.retrieval.mentions import addressed, mentions
from memloci.storage.base import NodeFilter
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("text", "called"),
    [
        ("Hey Melanie!", ["Melanie"]),
        ("Yep, Caroline.", ["Caroline"]),
        ("Wow, Melanie, what a beautiful moment!", ["Melanie"]),
        ("Hey Jon, my store has been a roller coaster.", ["Jon"]),
        ("Congrats on the promotion, John!", ["John"]),
        ("Thanks Mel! See you soon.", ["Mel"]),
        # a sentence's first word followed by a comma is as often "Definitely," as a name
        ("Gina, you ever been in a dance comp?", []),
        ("Definitely, I agree.", []),
        # a mention is not an address
        ("I told Sarah about Rome.", []),
        # chats written in lower case: a word between a greeting and punctuation or the end
        ("thanks mel!", ["Mel"]),
        ("hey sam, how are you", ["Sam"]),
        ("yeah thanks nate. it was fun", ["Nate"]),
        ("omg congrats jo", ["Jo"]),
        # ... unless it is what people call a group or a friend, or a common word
        ("thanks guys!", []),
        ("hey girl", []),
        ("hi there!", []),
        ("thanks again!", []),
        ("lol thank you so much!", []),
        ("I said hi to them.", []),
    ],
)
def test_names_in_direct_address(text: str, called: list[str]) -> None:
    assert addressed(text) == called
    assert not set(addressed(text)) & set(mentions(text))


def chat(*turns: tuple[str, str], session: str = "s1") -> list[tuple[str, str, str]]:
    return [(label, session, text) for label, text in turns]


def test_a_speaker_is_the_name_the_other_one_calls_them() -> None:
    turns = chat(
        ("user", "Hi! I finally finished the pottery class."),
        ("assistant", "That's great, Alice!"),
        ("user", "Thanks, Sam. It was hard work."),
        ("assistant", "Hey Alice, what did you make?"),
        ("user", "A bowl for my sister."),
        ("assistant", "Lovely, Alice."),
    )
    # Alice is called three times; Sam once, which is not enough
    assert speaker_names(turns) == {"user": "Alice"}
    assert speaker_names(turns[:-1]) == {}  # twice is not enough either
    assert MIN_CALLED == 3


def test_a_nickname_counts_for_the_longer_name() -> None:
    turns = chat(
        ("b", "Thanks, Mel!"),
        ("b", "Hey Melanie, how was it?"),
        ("b", "Wow, Mel."),
        ("a", "It was fun."),
    )
    assert speaker_names(turns) == {"a": "Melanie"}


def test_no_name_when_the_calls_disagree_or_the_chat_has_three_people() -> None:
    split = chat(
        ("b", "Thanks, Ana!"), ("b", "Hey Ana."), ("b", "Yes, Ana."),
        ("b", "Thanks, Eva!"), ("b", "Hey Eva."), ("b", "Yes, Eva."), ("a", "ok"),
    )  # fmt: skip
    assert speaker_names(split) == {}  # 50/50: neither is theirs
    group = chat(
        ("b", "Thanks, Ana!"), ("b", "Hey Ana."), ("b", "Yes, Ana."), ("a", "ok"), ("c", "hi"),
    )  # fmt: skip
    assert speaker_names(group) == {}  # a group: called before anyone else spoke
    # two speakers called by one name: it is neither's
    both = chat(
        ("b", "Thanks, Jo!"), ("b", "Hey Jo."), ("b", "Yes, Jo."),
        ("a", "Thanks, Jo!"), ("a", "Hey Jo."), ("a", "Yes, Jo."),
    )  # fmt: skip
    assert speaker_names(both) == {}


def test_in_a_group_a_name_is_the_one_answered() -> None:
    """With three people, "Thanks, Ana!" answers whoever spoke last before (not the
    speaker): that is Ana. Calls that went elsewhere count against the name's share."""
    group = chat(
        ("s1", "I booked the cabin for May."), ("s2", "Thanks, Ana!"),
        ("s3", "I can drive us there."), ("s1", "Great, Bo."),
        ("s1", "Who brings the food?"), ("s3", "Me! Anything else, Ana?"),
        ("s2", "Board games"), ("s3", "Nice one, Cy."),
        ("s3", "And I bring the tent."), ("s1", "Perfect, Bo."),
        ("s1", "See you there."), ("s2", "Bye Ana!"),
        ("s2", "I found the map"), ("s1", "Good, Cy."),
        ("s3", "Leaving now"), ("s2", "Drive safe, Bo!"),
        ("s2", "Me too"), ("s3", "See you, Cy!"),
    )  # fmt: skip
    assert speaker_names(group) == {"s1": "Ana", "s3": "Bo", "s2": "Cy"}
    # a call that went elsewhere each time: no name wins the share
    mixed = chat(
        ("s1", "a"), ("s2", "Thanks, Ana!"), ("s3", "b"), ("s2", "Hey Ana."),
        ("s1", "c"), ("s2", "Yes, Ana."), ("s3", "d"), ("s2", "Ok Ana."),
    )  # fmt: skip
    assert speaker_names(mixed) == {}


def test_sessions_count_apart() -> None:
    """Each session is its own chat: a session of one speaker gives no call."""
    turns = chat(("b", "Thanks, Ana!"), ("b", "Hey Ana."), ("b", "Yes, Ana."), session="s1")
    turns += chat(("a", "I moved to Lisbon."), session="s2")
    assert speaker_names(turns) == {}
    turns += chat(("a", "ok"), session="s1")
    assert speaker_names(turns) == {"a": "Ana"}


USER_TURNS = [
    "I finally finished the pottery class.",
    "I cook lasagna every Sunday for my family.",
    "My sister lives in Porto.",
]


@both_backends
def test_role_labelled_turns_are_linked_to_the_name_they_are_called(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store = mem.service.store
    replies = ["That's great, Alice!", "Yum, Alice.", "Hey Alice, do you visit her?"]
    for said, reply in zip(USER_TURNS, replies, strict=True):
        mem.add(said, user="u1", session="s1", speaker="user")
        mem.add(reply, user="u1", session="s1", speaker="assistant")
        assert mem.flush(20)  # batch by batch: the name is known only after the third
    # another user of the namespace whose chat calls nobody
    mem.add("I cook lasagna on Sundays too.", user="u2", session="t1", speaker="user")
    mem.add("Nice!", user="u2", session="t1", speaker="assistant")
    for topic in ("the weather", "my bike", "a new phone", "the train", "our garden", "jazz"):
        mem.add(f"Let me tell you about {topic}.", user="u2", session="t1", speaker="user")
        mem.add(f"Tell me more about {topic}!", user="u2", session="t1", speaker="assistant")
    assert mem.flush(20)
    alice = store.entities.find_entity("default", "Alice")
    assert alice is not None and alice.type is EntityType.PERSON
    turns = {(n.user, n.content): n.id for n in mem.list(type="episodic", limit=100)}
    linked = store.entities.node_entities("default", list(turns.values()))
    to_alice = {key for key, i in turns.items() if any(e.id == alice.id for e in linked[i])}
    # every turn she said, the ones before she was named too; not the ones said to her,
    # and nothing of the other user
    assert to_alice == {("u1", text) for text in USER_TURNS}
    # the question about Alice finds what she said, not what was said to her
    hits = mem.search("What does Alice cook on Sundays?", user="u1", k=3)
    assert hits[0].memory.content == USER_TURNS[1]
    assert "entity Alice" in hits[0].why
    assert all(h.memory.user == "u1" for h in hits)


@both_backends
def test_a_group_chats_speakers_are_linked_to_the_names_they_are_answered_by(
    make_memory: MakeMemory,
) -> None:
    """Three people labelled by number: each one's turns are linked to the name of the
    replies that answer them, in the order they were said."""
    mem = make_memory()
    said = [
        ("Speaker 1", "I booked the cabin by the lake."), ("Speaker 2", "Thanks, Ana!"),
        ("Speaker 3", "I will bring my guitar."), ("Speaker 1", "Great, Bo."),
        ("Speaker 1", "I also found a canoe to rent."), ("Speaker 2", "Wow, Ana."),
        ("Speaker 3", "I can cook on the first night."), ("Speaker 2", "Yum, Bo!"),
        ("Speaker 1", "I checked the weather: sunny."), ("Speaker 3", "Perfect, Ana."),
        ("Speaker 3", "And I fixed the car."), ("Speaker 1", "Thanks Bo!"),
    ]  # fmt: skip
    # one turn per batch: the call that names Bo comes in a batch of Speaker 1 alone,
    # who is named already
    for who, text in said:
        mem.add(text, user="u1", session="s1", speaker=who)
        assert mem.flush(20)
    store = mem.service.store
    turns = {n.content: n.id for n in mem.list(type="episodic", limit=100)}
    linked = store.entities.node_entities("default", list(turns.values()))

    def said_by(name: str) -> set[str]:
        return {t for t, i in turns.items() if any(e.canonical_name == name for e in linked[i])}

    assert said_by("Ana") == {t for w, t in said if w == "Speaker 1"}
    assert said_by("Bo") == {t for w, t in said if w == "Speaker 3"}
    hits = mem.search("What will Bo bring?", user="u1", k=3)
    assert "entity Bo" in hits[0].why and hits[0].memory.speaker == "Speaker 3"


@both_backends
def test_a_label_that_says_the_name_adds_no_second_person(make_memory: MakeMemory) -> None:
    """A label that is the name, or begins with what they are called ("Mel" for
    "Melanie"), already says who speaks."""
    mem = make_memory()
    for reply in ("Thanks, Mel!", "Hey Mel.", "Yes, Mel."):
        mem.add("I love camping.", user="u1", session="s1", speaker="Melanie")
        mem.add(reply, user="u1", session="s1", speaker="Caroline")
    assert mem.flush(20)
    names = sorted(e.canonical_name for e in mem.service.store.entities.list_entities("default"))
    assert names == ["Caroline", "Melanie"]


@both_backends
def test_a_handle_is_linked_to_the_name_as_well(make_memory: MakeMemory) -> None:
    """A label shaped like a name that is not what they are called ("Speaker A") keeps
    its own link and gains the name's."""
    mem = make_memory()
    for reply in ("Wow, Ana!", "Hey Ana, and then?", "Sure, Ana."):
        mem.add("I started a ceramics course.", user="u1", session="s1", speaker="Speaker A")
        mem.add(reply, user="u1", session="s1", speaker="Speaker B")
    assert mem.flush(20)
    store = mem.service.store
    turns = {n.id: n for n in mem.list(type="episodic", limit=100)}
    linked = store.entities.node_entities("default", list(turns))
    for node_id, entities in linked.items():
        names = sorted(e.canonical_name for e in entities)
        expected = ["Ana", "Speaker A"] if turns[node_id].speaker == "Speaker A" else ["Speaker B"]
        assert names == expected


@pytest.mark.parametrize(
    ("label", "called", "said"),
    [
        ("Melanie", "Melanie", True),
        ("melanie", "Melanie", True),
        ("Melanie", "Mel", True),  # a nickname: the label is more of the name
        ("Melanie Hart", "Melanie", True),  # found by its given name
        ("Melanie H.", "Melanie", True),  # an initial for a surname: the same
        # handles that only begin with the name: nothing finds "Melanie" in them
        ("melanie18", "Melanie", False),
        ("mel_k", "Mel", False),
        ("@melanie", "Melanie", False),
        ("user", "Melanie", False),
    ],
)
def test_a_label_says_a_name_only_when_a_search_for_it_finds_the_label(
    label: str, called: str, said: bool
) -> None:
    assert says(label, called) is said


def linked_to(
    mem: Memory, said: list[str], replies: tuple[str, ...], labels: tuple[str, str], name: str
) -> set[str]:
    """Store a two-person chat (``said`` by ``labels[0]``, each answered by ``labels[1]``
    with a reply that calls them ``name``); the turns the worker linked to the person
    ``name``."""
    for text, reply in zip(said, replies, strict=True):
        mem.add(text, user="u1", session="s1", speaker=labels[0])
        mem.add(reply, user="u1", session="s1", speaker=labels[1])
    assert mem.flush(20)
    store = mem.service.store
    person = store.entities.find_entity("default", name)
    assert person is not None and person.type is EntityType.PERSON
    turns = {n.id: n for n in mem.list(type="episodic", limit=100)}
    linked = store.entities.node_entities("default", list(turns))
    return {turns[i].content for i, es in linked.items() if person.id in {e.id for e in es}}


@both_backends
def test_a_handle_that_begins_with_the_name_is_linked_to_the_name(
    make_memory: MakeMemory,
) -> None:
    """Chat exports label people by handle ("melanie18"): the question says "Melanie",
    which no label is, so the turns she said are linked to the name she is called by."""
    mem = make_memory()
    said = ["I started a ceramics course.", "I cook lasagna every Sunday.", "I love jazz."]
    replies = ("Wow, Melanie!", "Yum, Melanie.", "Same, Melanie!")
    assert linked_to(mem, said, replies, ("melanie18", "caroline_k"), "Melanie") == set(said)
    hits = mem.search("What does Melanie cook on Sundays?", user="u1", k=3)
    assert hits[0].memory.content == said[1]
    assert "entity Melanie" in hits[0].why


@both_backends
def test_a_chat_in_lower_case_names_its_speakers_too(make_memory: MakeMemory) -> None:
    mem = make_memory()
    said = ["started a ceramics course lol", "making lasagna again", "my sister is in porto"]
    replies = ("thanks ana!", "hey ana, save me some", "love you ana")
    assert linked_to(mem, said, replies, ("u_4821", "u_7730"), "Ana") == set(said)


@both_backends
def test_a_reopened_store_links_the_named_speakers_new_turns(make_memory: MakeMemory) -> None:
    mem = make_memory()
    for reply in ("Thanks, Alice!", "Hey Alice.", "Yes, Alice."):
        mem.add("I love hiking.", user="u1", session="s1", speaker="user")
        mem.add(reply, user="u1", session="s1", speaker="assistant")
    assert mem.flush(20)
    mem.close()
    again = make_memory()
    new = again.add("I bought new boots.", user="u1", session="s1", speaker="user")
    assert again.flush(20)
    store = again.service.store
    linked = store.entities.node_entities("default", [new.id])[new.id]
    assert [e.canonical_name for e in linked] == ["Alice"]
    said = [n.id for n in again.list(type="episodic", limit=100) if n.speaker == "user"]
    assert all(
        [e.canonical_name for e in entities] == ["Alice"]
        for entities in store.entities.node_entities("default", said).values()
    )
    assert len(said) == 4


@both_backends
def test_a_speaker_labelled_by_full_name_is_found_by_their_given_name(
    make_memory: MakeMemory,
) -> None:
    """Chats often label people by their full name ("Fahim Khan") while the questions
    use the first: the question about Fahim gets his entity list. Words said to him
    ("Hey Fahim!") are still not linked to him, and another user's Fahim stays apart."""
    mem = make_memory()
    store = mem.service.store
    replies = ["Nice one, Fahim!", "Hey Fahim, yum.", "Sounds lovely, Fahim."]
    for said, reply in zip(USER_TURNS, replies, strict=True):
        mem.add(said, user="u1", session="s1", speaker="Fahim Khan")
        mem.add(reply, user="u1", session="s1", speaker="Muhammed Ali")
    # another user's chat, with a Fahim of its own
    mem.add("I cook lasagna on Sundays too.", user="u2", session="t1", speaker="Fahim Rahman")
    for topic in (
        "the weather",
        "my bike",
        "a new phone",
        "the train",
        "our garden",
        "jazz",
        "chess",
        "my cousin",
        "the museum",
        "a podcast",
        "the market",
        "tennis",
    ):
        mem.add(f"Let me tell you about {topic}.", user="u2", session="t1", speaker="Fahim Rahman")
        mem.add(f"Tell me more about {topic}!", user="u2", session="t1", speaker="Ana")
    assert mem.flush(20)
    hits = mem.search("What does Fahim cook on Sundays?", user="u1", k=3)
    assert hits[0].memory.content == USER_TURNS[1]
    assert "entity Fahim Khan" in hits[0].why
    # typed all in lower case, as people type: the same person
    typed = mem.search("what does fahim cook on sundays?", user="u1", k=3)
    assert typed[0].memory.content == USER_TURNS[1] and "entity Fahim Khan" in typed[0].why
    # u2's Fahim is named by the same word, yet nobody u1 may know of
    assert all(h.memory.user == "u1" and "Rahman" not in h.why for h in hits)
    turns = {n.id: n for n in mem.list(type="episodic", user="u1", limit=100)}
    for node_id, entities in store.entities.node_entities("default", list(turns)).items():
        assert [e.canonical_name for e in entities] == [turns[node_id].speaker]


# ---------------------------------------------------------------------- the embedded query
@pytest.mark.parametrize(
    ("query", "embedded"),
    [
        ("What does Alice cook on Sundays?", "What does they cook on Sundays?"),
        ("What is Alice's favourite food?", "What is their favourite food?"),
        ("Did Alice and Bo go to Rome together?", "Did they and they go to Rome together?"),
        # the name is most of what there is to mean
        ("Describe Alice", "Describe Alice"),
        # typed in lower case among capitals: maybe a plain word
        ("What does alice cook on Sundays?", "What does alice cook on Sundays?"),
        # a query all in lower case: its case says nothing
        ("what does alice cook on sundays?", "what does they cook on sundays?"),
        # a longer word is not the name
        ("What did Alicia cook for the party?", "What did Alicia cook for the party?"),
    ],
)
def test_a_named_person_is_embedded_as_a_pronoun(query: str, embedded: str) -> None:
    entity = Entity(
        id="e1", namespace="default", canonical_name="Alice", type=EntityType.PERSON,
        first_seen=datetime.now(UTC), last_seen=datetime.now(UTC),
    )  # fmt: skip
    found = re.findall(r"\b(?:Alice|alice|Bo)\b", query)
    assert meaning_query(query, [(name, entity) for name in found]) == embedded


@pytest.mark.parametrize(
    ("query", "embedded"),
    [
        ("Where is the user going on vacation?", "Where is they going on vacation?"),
        ("What's the name of the user's pet?", "What's the name of their pet?"),
        ("What did The Assistant suggest?", "What did they suggest?"),
        ("the user", "the user"),  # nothing else to mean
        ("Which users asked for refunds?", "Which users asked for refunds?"),
    ],
)
def test_the_user_is_embedded_as_a_pronoun(query: str, embedded: str) -> None:
    assert meaning_query(query, []) == embedded


class RecordingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.queries.append(text)
        return super().embed_query(text)


def test_search_embeds_the_query_without_the_names_it_constrains(
    make_memory: MakeMemory,
) -> None:
    embedder = RecordingEmbedder()
    mem = make_memory(embedder=embedder)
    mem.add("I cook lasagna every Sunday.", user="u1", session="s1", speaker="Alice")
    mem.add("Hey Alice, that sounds great!", user="u1", session="s1", speaker="Bo")
    assert mem.flush(20)
    mem.search("What does Alice cook on Sundays?", user="u1")
    mem.search("Who cooks lasagna on Sundays?", user="u1")
    assert "What does they cook on Sundays?" in embedder.queries
    assert "What does Alice cook on Sundays?" not in embedder.queries
    assert "Who cooks lasagna on Sundays?" in embedder.queries  # names nobody: as asked
    # the baselines embed the query as asked
    mem.search("What does Alice cook on Sundays?", user="u1", recipe="vector")
    assert embedder.queries[-1] == "What does Alice cook on Sundays?"


@both_backends
def test_people_no_memory_names_are_embedded_as_pronouns_too(make_memory: MakeMemory) -> None:
    embedder = RecordingEmbedder()
    mem = make_memory(embedder=embedder)
    mem.add("I visited Japan with my sister last spring.", user="u1", session="s1",
            speaker="Caroline")  # fmt: skip
    mem.add("Robin sent me a postcard.", user="u2", session="t1", speaker="Kim")
    assert mem.flush(20)
    store, flt = mem.service.store, NodeFilter(namespaces=("default",), user="u1")
    named = store.graph.entities_in_text(("default",), "What did Caroline do with Robin?")
    # Robin: no memory of u1 holds it (u2's does, which u1 does not see)
    assert strangers(store, flt, "What did Caroline do with Robin?", named) == ["Robin"]
    assert strangers(store, flt, "Where did Robin's sister travel?", []) == ["Robin"]
    assert strangers(store, flt, "What is Japan's capital city?", []) == []  # a memory says it
    assert strangers(store, flt, "What did we see in Kyoto last spring?", []) == []  # a place
    mem.search("Where did Robin's sister travel?", user="u1")
    assert embedder.queries[-1] == "Where did their sister travel?"


@both_backends
def test_a_name_no_memory_holds_does_not_weigh_the_query_down(make_memory: MakeMemory) -> None:
    mem = make_memory()
    may = datetime(2023, 5, 8, tzinfo=UTC)
    mem.add("My sister Ana traveled to Peru last spring.", user="u1", session="s1",
            speaker="Caroline", event_time=may)  # fmt: skip
    for i in range(30):
        mem.add(f"We baked bread number {i} all weekend.", user="u1", session=f"s{i % 5}",
                speaker="Melanie", event_time=may)  # fmt: skip
    assert mem.flush(20)
    # "Robin" is nobody the store knows: the question is the one about "their sister",
    # so the answer matches it as well as it matches that one (no rarest word unmatched)
    by_stranger = mem.search("Where did Robin's sister travel?", user="u1", k=1)[0]
    as_pronoun = mem.search("Where did their sister travel?", user="u1", k=1)[0]
    assert by_stranger.memory.content == as_pronoun.memory.content
    assert by_stranger.memory.content.startswith("My sister Ana")
    assert by_stranger.score == pytest.approx(as_pronoun.score, abs=1e-6)
    lexical = re.search(r"full text #1 \(bm25 [\d.]+, evidence ([\d.]+)\)", by_stranger.why)
    assert lexical is not None and lexical.group(0) in as_pronoun.why
    # nor the time list's, inside the window the question names
    by_stranger = mem.search("Where did Robin's sister travel in May 2023?", user="u1", k=1)[0]
    as_pronoun = mem.search("Where did their sister travel in May 2023?", user="u1", k=1)[0]
    timed = re.search(r"time: May 2023 \([\d.]+\)", by_stranger.why)
    assert timed is not None and timed.group(0) in as_pronoun.why
    assert by_stranger.score == pytest.approx(as_pronoun.score, abs=1e-6)
