"""The two extractors behind one interface, and the maintenance LLM helpers."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memloci.consolidation import (
    CausalLink,
    ExtractedFact,
    Extraction,
    Extractor,
    LLMExtractor,
    RuleExtractor,
    extractor_for,
    infer_causal,
    summarize_entity,
)
from memloci.errors import ProviderError
from memloci.models import Entity, EntityType, FactType, MemoryNode, NodeType, SourceType
from memloci.providers.llm import json_schema_for

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def node(
    n: int, content: str, role: str | None = "user", *, kind: NodeType = NodeType.EPISODIC,
    **extra: Any,
) -> MemoryNode:  # fmt: skip
    when = T0 + timedelta(minutes=n)
    return MemoryNode(
        id=f"ep{n:06d}", type=kind, content=content, source_role=role, event_time=when,
        created_at=when, updated_at=when, valid_from=when, **extra,
    )  # fmt: skip


def conversation(*turns: str | tuple[str, str]) -> list[MemoryNode]:
    """User turns as strings; ``("assistant", text)`` for the other side."""
    return [
        node(i, t, "user") if isinstance(t, str) else node(i, t[1], t[0])
        for i, t in enumerate(turns)
    ]


def contents(extraction: Extraction) -> list[str]:
    return [f.content for f in extraction.facts]


# --- rule extractor: one sentence at a time -------------------------------------------

POSITIVE = [
    # reference scenarios
    ("Alec is my boss by the way", "Alec is the user's boss"),
    ("Remember that I prefer Friday due dates", "User prefers Friday due dates"),
    ("From now on, always set reminders for 9am", "User instruction: always set reminders for 9am"),
    # explicit asks
    ("Please remember that my meeting with Sarah is on May 8.",
     "User's meeting with Sarah is on May 8"),
    ("Don't forget that my mom's birthday is on 2024-06-12.",
     "User's mom's birthday is on 2024-06-12"),
    ("Can you remember that my wife is Anna?", "Anna is the user's wife"),
    ("Keep in mind that I have two kids.", "User has two kids"),
    ("Remember that I'm allergic to peanuts.", "User is allergic to peanuts"),
    ("Remember that I usually walk to work.", "User usually walks to work"),
    ("Note that the office closes at 6pm next Friday.", "The office closes at 6pm next Friday"),
    ("Remember that if I ask for a summary, keep it short.",
     "User instruction: if they ask for a summary, keep it short"),
    # standing instructions
    ("Never schedule meetings before 10am.",
     "User instruction: never schedule meetings before 10am"),
    ("Going forward, please reply in English.", "User instruction: reply in English"),
    ("Always call me by my first name.",
     "User instruction: always call the user by their first name"),
    # preferences and opinions
    ("I prefer tea over coffee.", "User prefers tea over coffee"),
    ("I'd rather get emails than calls.", "User would rather get emails than calls"),
    ("I really like Python for scripting.", "User likes Python for scripting"),
    ("I love hiking in the Alps!", "User loves hiking in the Alps"),
    ("I hate long meetings.", "User hates long meetings"),
    ("I don't like cilantro.", "User dislikes cilantro"),
    ("My favourite color is green.", "User's favourite color is green"),
    # people, work, names, places
    ("My boss is Alec Smith.", "Alec Smith is the user's boss"),
    ("Alec is my boss at TechCorp.", "Alec is the user's boss at TechCorp"),
    ("Dr. Smith is my dentist.", "Dr. Smith is the user's dentist"),
    ("Oh, Sarah is my colleague, btw.", "Sarah is the user's colleague"),
    ("My dog Rex is the best.", "Rex is the user's dog"),
    ("My sister Anna lives in Paris.", "Anna is the user's sister"),
    ("I work at Google as a data scientist.", "User works at Google as a data scientist"),
    ("I'm a nurse at St. Mary's Hospital.", "User is a nurse at St. Mary's Hospital"),
    ("I work as a nurse.", "User works as a nurse"),
    ("I work on the Platform team.", "User works on the Platform team"),
    ("My name is Sam Carter.", "User's name is Sam Carter"),
    ("Call me Sam.", "User wants to be called Sam"),
    ("I moved to Berlin last year.", "User moved to Berlin last year"),
    ("I'm originally from Spain.", "User is from Spain"),
    # something that has ended
    ("I don't work at Google anymore.", "User no longer works at Google"),
    ("I no longer live in Lisbon.", "User no longer lives in Lisbon"),
    ("I moved away from Porto.", "User no longer lives in Porto"),
    ("I quit Globex last month.", "User no longer works at Globex"),
]  # fmt: skip

NEGATIVE = [
    "I'm tired today",  # transient (reference 001)
    "I'm working with James on this project",  # task-specific
    "This task is for the Monday meeting",
    "What is my boss's name?",  # questions
    "Do you remember where I live?",
    "Is Alec my boss",
    "If I move to Berlin, I'll need a new bank.",  # hypotheticals and hedges
    "Maybe I prefer tea.",
    "I might work at Google next year.",
    "I think I like Rust.",
    "I don't work at Google.",  # a bare negation
    "Alec is not my boss.",
    "I used to live in Paris.",
    "I like it.",  # nothing durable to hold on to
    "I love this!",
    "Don't forget to buy milk.",  # a chore, not a memory
    "Remember when we went to Rome?",
    "Never mind.",
    "He is my boss.",  # no name
    "My sister is a doctor.",
    "I work on weekends.",
    "I always drink coffee.",  # a habit, not an instruction
    "Always the same problem with this app.",
    "Thanks, that's great.",
    "I live in a small flat.",
]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Remember that my sister Ana lives in Porto",
         ["Ana is the user's sister", "User's sister Ana lives in Porto"]),
        ("Don't forget that my boss Alec hates long emails",
         ["Alec is the user's boss", "User's boss Alec hates long emails"]),
        ("Please remember that my dog is called Rex", ["Rex is the user's dog"]),
    ],
)  # fmt: skip
def test_an_explicit_ask_keeps_all_it_says(sentence: str, expected: list[str]) -> None:
    """A cue that takes part of an explicit ask ("my sister Ana") does not drop the rest
    ("lives in Porto"): what the user asked to keep is kept as they put it too."""
    assert contents(RuleExtractor().extract(conversation(sentence))) == expected


@pytest.mark.parametrize(("sentence", "expected"), POSITIVE)
def test_rules_positive(sentence: str, expected: str) -> None:
    result = RuleExtractor().extract(conversation(sentence))
    assert contents(result)[0] == expected
    fact = result.facts[0]
    assert fact.source_ids == ["ep000000"]
    names = {e.name.casefold() for e in result.entities}
    assert all(name.casefold() in names for fact in result.facts for name in fact.entities)


@pytest.mark.parametrize("sentence", NEGATIVE)
def test_rules_negative(sentence: str) -> None:
    assert RuleExtractor().extract(conversation(sentence)) == Extraction()


def test_rule_cases_cover_enough_ground() -> None:
    assert len(POSITIVE) + len(NEGATIVE) >= 30


def test_rules_fill_the_fact_fields() -> None:
    facts = RuleExtractor().extract(conversation("Alec is my boss by the way")).facts
    assert facts[0].model_dump(exclude={"content"}) == {
        "type": "semantic", "category": "person", "subject": "Alec", "key": "boss",
        "fact_type": FactType.RELATIONSHIP, "confidence": 0.85, "source_ids": ["ep000000"],
        "entities": ["Alec"],
    }  # fmt: skip
    pref = RuleExtractor().extract(conversation("Remember that I prefer Friday due dates")).facts
    assert (pref[0].type, pref[0].category, pref[0].fact_type) == (
        "opinion", "preference", FactType.USER_PREFERENCE,
    )  # fmt: skip
    assert pref[0].confidence == 0.95  # explicit asks are the most certain
    rule = RuleExtractor().extract(conversation("From now on, always set reminders for 9am")).facts
    assert rule[0].type == "procedural" and rule[0].node_type is NodeType.PROCEDURAL


def test_rules_extract_typed_entities() -> None:
    result = RuleExtractor().extract(
        conversation(
            "I live in New York City with my wife Anna.",
            "I work at Bank of America.",
            "Alec is my boss at TechCorp.",
            "My dog Rex hates the mailman.",
        )
    )
    types = {e.name: e.type for e in result.entities}
    assert types == {
        "New York City": EntityType.PLACE, "Anna": EntityType.PERSON,
        "Bank of America": EntityType.ORGANIZATION, "Alec": EntityType.PERSON,
        "TechCorp": EntityType.ORGANIZATION, "Rex": EntityType.CONCEPT,
    }  # fmt: skip
    assert contents(result) == [
        "User lives in New York City with their wife Anna",
        "Anna is the user's wife",
        "User works at Bank of America",
        "Alec is the user's boss at TechCorp",
        "Rex is the user's dog",
    ]
    assert result.facts[0].entities == ["New York City", "Anna"]
    assert result.facts[0].key == "home_location"


# --- rule extractor: whole conversations ----------------------------------------------


def test_declined_in_the_next_turn_is_not_stored() -> None:
    """Reference 001, scenario 4: the user declines, nothing is stored."""
    declined = conversation(
        "I'm working with James on this project",
        ("assistant", "Would you like me to remember that James is a project collaborator?"),
        "No, it's just for this task",
        ("assistant", "No problem, I won't store that."),
    )
    assert RuleExtractor().extract(declined) == Extraction()
    for answer in ("No, don't remember that.", "Nope.", "Please forget that."):
        turns = conversation(
            "Alec is my boss by the way",
            ("assistant", "Got it - should I remember that for future conversations?"),
            answer,
        )
        assert RuleExtractor().extract(turns) == Extraction(), answer


def test_decline_within_the_same_turn() -> None:
    turns = conversation("Anna is my sister. But don't remember that.", "I prefer tea.")
    assert contents(RuleExtractor().extract(turns)) == ["User prefers tea"]


def test_confirmation_raises_confidence() -> None:
    turns = conversation(
        "Alec is my boss by the way",
        ("assistant", "Got it - should I remember that for future conversations?"),
        "Yes",
    )
    facts = RuleExtractor().extract(turns).facts
    assert contents(Extraction(facts=facts)) == ["Alec is the user's boss"]
    assert facts[0].confidence == 0.95 and facts[0].source_ids == ["ep000000"]


def test_a_plain_no_without_a_question_declines_nothing() -> None:
    turns = conversation("I prefer tea.", "No, I mean it.")
    assert contents(RuleExtractor().extract(turns)) == ["User prefers tea"]


def test_only_user_turns_count() -> None:
    episodes = [
        node(0, "Alec is my boss", "assistant"),
        node(1, "I prefer tea", None, speaker="assistant"),
        node(2, "I prefer tea", None, speaker="helper-bot", agent="helper-bot"),
        node(3, "I prefer tea", "tool", source_type=SourceType.TOOL_RESULT),
        node(4, "Remember that I prefer tea", "user", kind=NodeType.SEMANTIC),
        node(5, "I live in Oslo", None, speaker="alice"),  # a named speaker, no role
        node(6, "I love jazz", "user"),
        node(7, "I hate queues", None, agent="helper-bot"),  # plain add(): no role, no speaker
    ]
    result = RuleExtractor().extract(episodes)
    # a label typed in lower case is the name it writes: "alice" is Alice
    assert contents(result) == ["Alice lives in Oslo", "User loves jazz", "User hates queues"]
    assert [f.source_ids for f in result.facts] == [["ep000005"], ["ep000006"], ["ep000007"]]


def test_a_named_speakers_facts_are_about_them() -> None:
    """In a chat between two people (named speakers, no roles) each one's facts name
    them, and keys are theirs: one's opinion never supersedes the other's."""
    episodes = [
        node(0, "I love camping.", None, speaker="Melanie"),
        node(1, "I hate camping.", None, speaker="Caroline"),
        node(2, "Alec is my boss.", None, speaker="Caroline"),
        node(3, "My sister Anna lives in Paris.", None, speaker="Melanie"),
        node(4, "From now on, always reply in French.", None, speaker="Melanie"),
        node(5, "I love jazz.", None, speaker="user"),  # a role word, not a name
        node(6, "I love helping the user community.", None, speaker="Melanie"),  # as said
        node(7, "I hate spicy food.", None, speaker="Emi 🌸"),  # a decorated contact name
    ]
    facts = RuleExtractor().extract(episodes).facts
    assert [(f.content, f.subject, f.key) for f in facts] == [
        ("Melanie loves camping", "Melanie", "melanie.opinion_camping"),
        ("Caroline hates camping", "Caroline", "caroline.opinion_camping"),
        ("Alec is Caroline's boss", "Alec", "caroline.boss"),
        ("Anna is Melanie's sister", "Anna", None),
        ("Melanie's instruction: always reply in French", "Melanie", "melanie.reply_language"),
        ("User loves jazz", "user", "opinion_jazz"),
        (
            "Melanie loves helping the user community",
            "Melanie",
            "melanie.opinion_helping_the_user_community",
        ),
        ("Emi hates spicy food", "Emi", "emi.opinion_spicy_food"),
    ]


def test_a_named_speaker_declines_only_their_own_facts() -> None:
    """Between two people, one's "no, don't remember that" drops their own candidate of
    their previous turn, never what the other one said in between."""
    episodes = [
        node(0, "I love camping.", None, speaker="Melanie"),
        node(1, "I work at Globex.", None, speaker="Caroline"),
        node(2, "Actually, don't remember that.", None, speaker="Melanie"),
        node(3, "My sister Anna lives in Paris.", None, speaker="Caroline"),
        node(4, "Scratch that.", None, speaker="Caroline"),
    ]
    facts = RuleExtractor().extract(episodes).facts
    assert [f.content for f in facts] == ["Caroline works at Globex"]


def test_repeated_facts_merge_sources_and_known_ones_are_returned_to_be_confirmed() -> None:
    turns = conversation("I prefer tea.", "Remember that I prefer tea!", "I hate long meetings.")
    result = RuleExtractor().extract(turns)
    assert contents(result) == ["User prefers tea", "User hates long meetings"]
    assert result.facts[0].source_ids == ["ep000000", "ep000001"]
    assert result.facts[0].confidence == 0.95
    known = [node(9, "User hates long meetings.", None, kind=NodeType.OPINION)]
    assert contents(RuleExtractor().extract(turns, known=known)) == [
        "User prefers tea",
        "User hates long meetings",
    ]  # fmt: skip  (the consolidator confirms the known one)


def test_rules_are_deterministic_and_order_by_time() -> None:
    turns = conversation("Call me Sam.", "My sister Anna lives in Paris.", "I love jazz.")
    first = RuleExtractor().extract(turns)
    assert RuleExtractor().extract(list(reversed(turns))) == first
    assert contents(first)[0] == "User wants to be called Sam"


def test_long_turns_and_odd_input_are_safe() -> None:
    long_turn = "I prefer " + "very " * 200 + "long sentences."  # > 500 characters
    text = "Hello! " * 300 + "I prefer tea."
    result = RuleExtractor().extract(conversation(long_turn, text, "", "   ", "?!"))
    assert contents(result) == ["User prefers tea"]


# --- one interface ----------------------------------------------------------------------


class ScriptedLLM:
    """Answers with the given replies in turn (the last one repeats); records calls."""

    model_id = "scripted:test"

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def complete(self, messages: list[dict[str, Any]], **options: Any) -> str:
        self.calls.append({"messages": messages, **options})
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply if isinstance(reply, str) else json.dumps(reply)


def test_both_extractors_share_the_interface() -> None:
    llm = ScriptedLLM({"facts": [], "entities": []})
    assert isinstance(RuleExtractor(), Extractor) and isinstance(LLMExtractor(llm), Extractor)
    assert isinstance(extractor_for(None), RuleExtractor)
    chosen = extractor_for(llm)
    assert isinstance(chosen, LLMExtractor) and chosen.name == "llm"
    assert RuleExtractor.name == "rules"


# --- LLM extractor ----------------------------------------------------------------------

EPISODES = conversation(
    "Alec is my boss, he runs Platform at TechCorp.",
    ("assistant", "Noted."),
    "Remember that I prefer Friday due dates",
)
GOOD_REPLY = {
    "facts": [
        {"content": "Alec is the user's boss", "type": "semantic", "category": "Person",
         "subject": "Alec", "key": "boss", "fact_type": "relationship", "confidence": 0.9,
         "source_ids": ["ep000000", "made-up"], "entities": ["alec", "TechCorp", "Nobody"]},
        {"content": "User prefers Friday due dates", "type": "opinion", "category": "preference",
         "fact_type": "preference", "confidence": 1.7, "source_ids": [],
         "entities": []},
        {"content": "ok", "type": "semantic"},  # too short: dropped
        {"content": "User likes long walks", "type": "feeling"},  # bad type: dropped
        {"content": "Alec is the user's boss.", "confidence": -3,
         "source_ids": ["ep000002"], "entities": ["Alec"]},  # a repeat: merged
    ],
    "entities": [
        {"name": "Alec", "type": "person", "aliases": ["Alec S.", "alec"]},
        {"name": "TechCorp", "type": "company"},  # unknown type: concept
        {"name": "Platform", "type": "project"},  # mentioned by no fact: dropped
        {"type": "person"},  # no name: dropped
    ],
}  # fmt: skip


def test_llm_extractor_validates_items_one_by_one() -> None:
    llm = ScriptedLLM(GOOD_REPLY)
    result = LLMExtractor(llm).extract(EPISODES)
    alec, friday = result.facts
    assert alec.content == "Alec is the user's boss" and alec.category == "person"
    assert alec.source_ids == ["ep000000", "ep000002"]  # unknown id ignored, repeat merged
    assert alec.entities == ["Alec", "TechCorp"]  # by canonical name; unknown names dropped
    assert alec.confidence == 0.9 and alec.fact_type is FactType.RELATIONSHIP
    assert friday.confidence == 1.0 and friday.fact_type is None  # clamped; unknown type
    assert friday.source_ids == [e.id for e in EPISODES]  # none given: the whole batch
    assert [(e.name, e.type, e.aliases) for e in result.entities] == [
        ("Alec", EntityType.PERSON, ["Alec S."]),
        ("TechCorp", EntityType.CONCEPT, []),
    ]


def test_llm_extractor_prompt_and_schema() -> None:
    llm = ScriptedLLM({"facts": []})
    known = [
        node(50, "User lives in Oslo", None, kind=NodeType.SEMANTIC),
        node(51, "an episode", "user"),
    ]
    assert LLMExtractor(llm).extract(EPISODES, known=known) == Extraction()
    call = llm.calls[0]
    prompt = call["messages"][0]["content"]
    assert "[ep000050] User lives in Oslo" in prompt and "an episode" not in prompt
    assert "[ep000000] 2024-05-01 user: Alec is my boss" in prompt
    assert "[ep000001] 2024-05-01 assistant: Noted." in prompt
    assert call["json_schema"] == json_schema_for(Extraction)
    assert "I'm tired today" in call["system"] and "just for this task" in call["system"]


def test_llm_extractor_accepts_wrapped_replies() -> None:
    reply = f"<think>Hmm {{}}</think>Sure:\n```json\n{json.dumps(GOOD_REPLY)}\n```"
    assert len(LLMExtractor(ScriptedLLM(reply)).extract(EPISODES).facts) == 2


@pytest.mark.parametrize(
    "reply",
    ["I found nothing worth storing.", {"items": []}, {"facts": "none"}, [{"content": "x"}]],
)
def test_llm_extractor_wrong_shape_raises_after_one_repair(reply: Any) -> None:
    llm = ScriptedLLM(reply)
    with pytest.raises(ProviderError, match="not valid JSON"):
        LLMExtractor(llm).extract(EPISODES)
    assert len(llm.calls) == 2
    assert llm.calls[1]["messages"][-1]["role"] == "user"  # the repair request


def test_llm_extractor_repair_succeeds() -> None:
    llm = ScriptedLLM("Alec is the boss.", GOOD_REPLY)
    assert len(LLMExtractor(llm).extract(EPISODES).facts) == 2


def test_llm_extractor_splits_long_batches() -> None:
    episodes = conversation(*(f"I prefer colour number {i} " + "x" * 80 for i in range(6)))
    replies = [
        {"facts": [{"content": f"User prefers colour {i}", "source_ids": [f"ep00000{i}"]}]}
        for i in range(0, 6, 2)
    ]
    llm = ScriptedLLM(*replies)
    result = LLMExtractor(llm, max_chars=300).extract(episodes)
    assert len(llm.calls) == 3
    assert [f.source_ids for f in result.facts] == [["ep000000"], ["ep000002"], ["ep000004"]]
    llm = ScriptedLLM({"facts": []})
    assert LLMExtractor(llm).extract([]) == Extraction() and llm.calls == []


def test_llm_extractor_propagates_provider_errors() -> None:
    class Down:
        model_id = "down"

        def complete(self, messages: list[dict[str, Any]], **options: Any) -> str:
            raise ProviderError("cannot reach the LLM at http://127.0.0.1:9/v1: refused")

    with pytest.raises(ProviderError, match="cannot reach"):
        LLMExtractor(Down()).extract(EPISODES)


def test_extracted_fact_model_bounds() -> None:
    fact = ExtractedFact(content="  User likes tea  ", confidence="0.4", entities=["A", "a", " "])  # type: ignore[arg-type]
    assert fact.content == "User likes tea" and fact.confidence == 0.4
    assert fact.entities == ["A"] and fact.category == "general" and fact.type == "semantic"
    with pytest.raises(ValueError, match="at least 5"):
        ExtractedFact(content="tiny")
    with pytest.raises(ValueError, match="at most 500"):
        ExtractedFact(content="x" * 501)


# --- maintenance helpers ----------------------------------------------------------------

ALEC = Entity(
    id="en000001", canonical_name="Alec", type=EntityType.PERSON, aliases=["Alec S."],
    first_seen=T0, last_seen=T0, mention_count=3,
)  # fmt: skip
FACTS = [
    node(20, "Alec is the user's boss", None, kind=NodeType.SEMANTIC),
    node(21, "Alec works at TechCorp", None, kind=NodeType.SEMANTIC),
]


def test_summarize_entity() -> None:
    llm = ScriptedLLM('<think>Two facts.</think>Summary: "Alec is the user\'s boss at TechCorp."')
    assert summarize_entity(llm, ALEC, FACTS) == "Alec is the user's boss at TechCorp."
    prompt = llm.calls[0]["messages"][0]["content"]
    assert "Alec (also called Alec S.), a person" in prompt and "- Alec works at TechCorp" in prompt
    long = ScriptedLLM("Alec leads things. " * 60)
    assert len(summarize_entity(long, ALEC, FACTS)) <= 500
    unused = ScriptedLLM("never asked")
    assert summarize_entity(unused, ALEC, []) == "" and unused.calls == []
    with pytest.raises(ProviderError, match="empty summary"):
        summarize_entity(ScriptedLLM("<think>hmm</think>  "), ALEC, FACTS)


def test_infer_causal_keeps_only_links_between_given_pairs() -> None:
    a, b, c, d = (node(i, f"event {i}") for i in range(4))
    reply = {
        "links": [
            {"cause_id": a.id, "effect_id": b.id, "confidence": 0.9, "explanation": "because"},
            {"cause_id": d.id, "effect_id": c.id},  # effect before cause: dropped
            {"cause_id": a.id, "effect_id": d.id},  # not a pair we asked about
            {"cause_id": b.id, "effect_id": c.id, "confidence": 7},  # clamped
            {"cause_id": a.id, "effect_id": b.id},  # repeat
            {"effect_id": c.id},  # malformed
        ]
    }
    llm = ScriptedLLM(reply)
    links = infer_causal(llm, [(a, b), (b, c), (c, d)])
    assert links == [
        CausalLink(cause_id=a.id, effect_id=b.id, confidence=0.9, explanation="because"),
        CausalLink(cause_id=b.id, effect_id=c.id, confidence=1.0),
    ]
    assert CausalLink(cause_id="x", effect_id="y").confidence == 0.7
    assert "Pair 1:" in llm.calls[0]["messages"][0]["content"]
    assert infer_causal(ScriptedLLM("unused"), []) == []


def test_infer_causal_batches_and_fails_cleanly() -> None:
    episodes = [node(i, f"event {i}") for i in range(46)]
    pairs = list(itertools.pairwise(episodes))
    llm = ScriptedLLM({"links": []})
    assert infer_causal(llm, pairs) == [] and len(llm.calls) == 3  # 45 pairs, 20 per call
    with pytest.raises(ProviderError):
        infer_causal(ScriptedLLM("no idea"), pairs[:2])
