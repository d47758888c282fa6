"""What a chat is full of and says nothing: "lol", "Thanks!", an emoji. Such a message's
full-text row holds the turns around it, so without a discount it would be found by
their words and push what was said out of the results."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memloci import Memory
from memloci.retrieval import fusion, pipeline
from memloci.retrieval.fusion import ASKS_ONLY, SAYS_NOTHING, Fused, discount_questions
from memloci.words import only_reacts, says_nothing
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.mark.parametrize(
    ("text", "nothing"),
    [
        ("lol", True),
        ("Thanks!", True),
        ("hahahaha", True),
        ("Yeah, me too!", True),
        ("OKKK 👍", True),
        ("\U0001f602", True),
        ("How about you?", True),
        ("Yep, Joanna.", False),  # names someone: says who
        ("It was awesome!", False),  # how it was: may answer a question
        ("5", False),
        ("We booked Kyoto.", False),
        # what a chat export puts where a message was
        ("<Media omitted>", True),
        ("image omitted", True),
        ("<attached: 00000012-PHOTO-2024-03-01.jpg>", True),
        ("This message was deleted", True),
        ("Missed voice call", True),
        ("brb", True),
        ("I omitted the photo on purpose", False),
        ("[shares an image: a photo of a dog]", False),
    ],
)
def test_says_nothing(text: str, nothing: bool) -> None:
    assert says_nothing(text) is nothing


@pytest.mark.parametrize(
    ("text", "reacts"),
    [
        ("lol", True),  # says nothing
        ("Cool!", True),
        ("Wow, that's awesome!", True),
        ("Sounds great!", True),
        ("Keep it up!", True),
        ("Congrats!!", True),
        ("Nice work 👏", True),
        ("Great to hear from you.", True),
        ("It was great!", False),  # how something went
        ("It's been awesome!", False),
        ("Great, the ryokan has a hot spring.", False),
        ("Cool, I love Kyoto!", False),
        ("See you!", True),  # closes the chat
        ("Have a great weekend!", True),
        ("Talk soon, good night", True),
        ("See you at the ryokan on Friday!", False),
    ],
)
def test_only_reacts(text: str, reacts: bool) -> None:
    assert only_reacts(text) is reacts


@pytest.mark.slow
@both_backends
def test_praise_alone_does_not_push_what_was_said_out(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A "Sounds great!" right after the hike holds it in its row and its context; it is
    discounted like "lol", so what was said of the hike comes first — unless the query
    asks how someone took it, where the praise is the answer."""
    m = make_memory(embedder="local")
    say(m, PRAISE_CHAT)
    praise = {"Wow, that's awesome!", "Congrats!!", "Sounds great!"}
    top = [h.memory.content for h in m.search("How was the hike?", user="u1", k=2)]
    assert top == ["We went hiking in the hills on Sunday.", "The view of the valley was stunning."]
    asked = m.search("What did Ben think of Ana's new job?", user="u1", k=2)
    assert {h.memory.content for h in asked} & praise
    monkeypatch.setattr(pipeline, "only_reacts", says_nothing)
    plain = [h.memory.content for h in m.search("How was the hike?", user="u1", k=2)]
    assert set(plain) & praise


PRAISE_CHAT = [
    ("Ana", "I got the job at the aquarium, I start in May!"),
    ("Ben", "Wow, that's awesome!"),
    ("Ben", "Congrats!!"),
    ("Ana", "I will be feeding the sea turtles every morning."),
    ("Ben", "My brother works at a zoo in Lisbon."),
    ("Ana", "We went hiking in the hills on Sunday."),
    ("Ben", "Sounds great!"),
    ("Ana", "The view of the valley was stunning."),
    ("Ben", "My cat knocked over a plant today."),
]


def test_discount_keeps_a_fraction_of_what_says_nothing_and_reorders() -> None:
    lol = Fused("lol", score=0.9, ranks={"fulltext": 1})
    ask = Fused("ask", score=0.8, ranks={"fulltext": 2})
    said = Fused("said", score=0.35, ranks={"vector": 1})
    out = discount_questions([lol, ask, said], {"ask"}, {"lol"})
    assert [f.id for f in out] == ["ask", "said", "lol"]
    assert out[2].score == pytest.approx(0.9 * SAYS_NOTHING)
    assert out[2].note == f"says nothing of its own (×{SAYS_NOTHING:g})"
    assert out[0].score == pytest.approx(0.8 * ASKS_ONLY)


CHAT = [
    ("Ana", "We finally booked the trip to Kyoto for April."),
    ("Ben", "omg"),
    ("Ben", "lol"),
    ("Ana", "The ryokan has a hot spring bath."),
    ("Ben", "Thanks! \U0001f602"),
    ("Ana", "I also started learning to bake sourdough bread."),
    ("Ben", "hahaha"),
    ("Ben", "My sister lives in Osaka, she moved there for work."),
]
FILLERS = {"omg", "lol", "Thanks! \U0001f602", "hahaha"}


def say(m: Memory, chat: list[tuple[str, str]]) -> None:
    """``chat``'s (speaker, text) messages as one session of user u1, embedded."""
    for who, text in chat:
        m.add(text, user="u1", session="s1", speaker=who)
    m.flush()


@pytest.mark.slow
@both_backends
def test_a_filler_message_does_not_push_what_was_said_out(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = make_memory(embedder="local")
    say(m, CHAT)
    query = "What is the trip to Kyoto like?"
    hits = m.search(query, user="u1", k=3)
    assert hits[0].memory.content.startswith("We finally booked the trip to Kyoto")
    assert not {h.memory.content for h in hits} & FILLERS
    wide = m.search(query, user="u1", k=8)
    assert any("says nothing of its own" in h.why for h in wide if h.memory.content in FILLERS)
    # "omg" and "lol" come right after the trip: their rows hold it, and without the
    # discount they would come second and third
    monkeypatch.setattr(fusion, "SAYS_NOTHING", 1.0)
    assert {h.memory.content for h in m.search(query, user="u1", k=3)} & FILLERS
    monkeypatch.undo()
    # asked for by its own word, a filler is still found
    assert m.search("lol", user="u1", k=1)[0].memory.content == "lol"


@pytest.mark.slow
def test_a_chat_exports_placeholders_are_passed_over(make_memory: MakeMemory) -> None:
    """A WhatsApp-style export: "<Media omitted>" between a question and its answer is in
    no exchange and no window, and is discounted like "lol"."""
    m = make_memory(embedder="local")
    chat = [
        ("Ana", "How is the new puppy settling in?"),
        ("Ben", "<Media omitted>"),
        ("Ben", "The little one is doing great, learning commands already"),
        ("Ana", "This message was deleted"),
        ("Ana", "I started a pottery class on Tuesdays."),
    ]
    say(m, chat)
    hits = m.search("How is the dog adjusting?", user="u1", k=5)
    contents = [h.memory.content for h in hits]
    assert contents[0] == "The little one is doing great, learning commands already"
    assert "meaning in context" in hits[0].why
    placeholders = [
        h for h in hits if h.memory.content in {"<Media omitted>", "This message was deleted"}
    ]
    assert placeholders and all("says nothing of its own" in h.why for h in placeholders)


@pytest.mark.slow
@both_backends
def test_a_question_typed_without_a_question_mark_gives_way_to_its_answer(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chats are typed without punctuation: "how was the trip to norway" only asks, as
    "How was the trip to Norway?" does, and its reply answers."""
    m = make_memory(embedder="local")
    chat = [
        ("ana", "hey"),
        ("bo", "how was the trip to norway"),
        ("ana", "amazing we saw the northern lights and went dog sledding"),
        ("bo", "so jealous"),
        ("ana", "my sister got a new job in oslo"),
    ]
    say(m, chat)
    query = "how was the trip to norway"
    hits = m.search(query, user="u1", k=5)
    asked = next(h for h in hits if h.memory.content == chat[1][1])
    answer = next(h for h in hits if h.memory.content.startswith("amazing we saw"))
    assert "asks, does not tell" in asked.why
    assert hits.index(answer) < 2
    # read as a statement, the question keeps its whole score
    monkeypatch.setattr(pipeline, "asks_only", lambda text, said=False: text.endswith("?"))
    again = next(h for h in m.search(query, user="u1", k=5) if h.memory.content == chat[1][1])
    assert "asks" not in again.why and again.score > asked.score
