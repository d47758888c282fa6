"""Only instructions become procedures, and no fact leans on a bare pronoun (issue 37).

A procedure the rule extractor stores is put into every later prompt as a standing
instruction to the agent, so chit-chat shaped like one ("Always great chatting with
you!", "never been there", "you should always follow your dreams, Mel!") must not
become one. ``tests/data/instructions.jsonl`` holds utterances labelled by whether they
tell the agent how to work from now on (``instruction``) and by their ``kind``
(instruction forms; chit-chat with always / never, habits, advice, questions, quoted
or reported instructions, one-off requests, …); a ``speaker`` is a turn of a chat
between named people, any other line a turn of the role ``user``. An utterance is
predicted an instruction when the extractor, given one turn holding it, yields a
procedural fact. ``tests/data/fact_subjects.jsonl`` holds sentences and the facts they
must yield, none of them about a bare "they", "you", "it" or "her".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memloci.consolidation import RuleExtractor
from memloci.consolidation.base import ExtractedFact
from memloci.models import MemoryNode, NodeType

DATA = Path(__file__).resolve().parent.parent / "data"
PRECISION, RECALL = 0.95, 0.80  # the bars of issue 37
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
BARE = re.compile(
    r"^(?:it|it's|they|they're|he|he's|she|she's|you|you're|your|her|his|their|theirs|"
    r"this|that|these|those)\b",
    re.IGNORECASE,
)


def load(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def turn(item: dict[str, Any]) -> MemoryNode:
    """One user turn holding the item's text: of a named speaker (no role) when it has
    one, of the role ``user`` otherwise."""
    speaker = item.get("speaker")
    return MemoryNode(
        id="ep000000",
        type=NodeType.EPISODIC,
        content=item["text"],
        source_role=None if speaker else "user",
        speaker=speaker,
        event_time=T0,
        created_at=T0,
        updated_at=T0,
        valid_from=T0,
    )


def facts_of(item: dict[str, Any]) -> list[ExtractedFact]:
    return RuleExtractor().extract([turn(item)]).facts


def test_the_instruction_set_is_large_varied_and_well_formed() -> None:
    items = load("instructions.jsonl")
    assert len(items) >= 300
    assert all(set(i) <= {"text", "instruction", "kind", "speaker"} for i in items)
    assert all(isinstance(i["instruction"], bool) and i["text"].strip() for i in items)
    texts = Counter(i["text"].casefold() for i in items)
    assert [t for t, n in texts.items() if n > 1] == []
    labels = Counter(i["instruction"] for i in items)
    assert labels[True] >= 100 and labels[False] >= 150
    assert len({i["kind"] for i in items}) >= 10
    assert sum("speaker" in i for i in items) >= 30  # chats between friends too


def test_only_instructions_become_procedures() -> None:
    """Precision and recall of "stored a procedure" against the labels; a failure lists
    the figures and every utterance judged wrong."""
    wrong: list[str] = []
    tp = fp = fn = 0
    for item in load("instructions.jsonl"):
        facts = facts_of(item)
        predicted = any(f.type == "procedural" for f in facts)
        if predicted == item["instruction"]:
            tp += predicted
            continue
        fp, fn = fp + predicted, fn + (not predicted)
        said = f" ({item['speaker']})" if "speaker" in item else ""
        got = [f.content for f in facts]
        wrong.append(
            f"{'FP' if predicted else 'FN'} [{item['kind']}] {item['text']!r}{said} → {got}"
        )
    precision, recall = tp / max(1, tp + fp), tp / max(1, tp + fn)
    figures = f"precision {precision:.3f} recall {recall:.3f} (tp {tp}, fp {fp}, fn {fn})"
    assert precision >= PRECISION and recall >= RECALL, "\n".join([figures, *wrong])


@pytest.mark.parametrize(
    ("text", "speaker", "expected"),
    [
        ("From now on, please reply in English.", None, "User instruction: reply in English"),
        ("Please reply in English from now on.", None, "User instruction: reply in English"),
        (
            "I want you to always answer in French.",
            None,
            "User instruction: always answer in French",
        ),
        (
            "Can you please always reply in Portuguese?",
            None,
            "User instruction: always reply in Portuguese",
        ),
        (
            "Please always cc my manager on emails you draft.",
            None,
            "User instruction: always cc their manager on emails you draft",
        ),
        (
            "Don't ever use emoji in your replies.",
            None,
            "User instruction: don't ever use emoji in your replies",
        ),
        (
            "When I say ship it, run the tests first.",
            None,
            "User instruction: when they say ship it, run the tests first",
        ),
        (
            "Your replies should never be longer than a paragraph.",
            None,
            "User instruction: your replies should never be longer than a paragraph",
        ),
        (
            "Never forget to attach the invoice when you email a client.",
            None,
            "User instruction: never forget to attach the invoice when you email a client",
        ),
        (
            'Please always sign my emails with "Best, Sam".',
            None,
            'User instruction: always sign their emails with "Best, Sam"',
        ),
        (
            "Remember that if I ask for a summary, keep it short.",
            None,
            "User instruction: if they ask for a summary, keep it short",
        ),
        (
            "From now on, always reply in French.",
            "Melanie",
            "Melanie's instruction: always reply in French",
        ),
    ],
)
def test_an_instruction_is_stored_as_it_was_put(
    text: str, speaker: str | None, expected: str
) -> None:
    """Without the markers and frames that made it one; a condition stays."""
    procedures = [f for f in facts_of({"text": text, "speaker": speaker}) if f.type == "procedural"]
    assert [f.content for f in procedures] == [expected]


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("Always great chatting with you!", "Andrew"),
        ("Always running around, exploring and having a great time.", "Audrey"),
        ("Always happy to help.", "John"),
        ("You should always follow your dreams, Mel!", "Caroline"),
        ("My boss said 'never deploy on Fridays' lol", None),
        ("Should I always use sunscreen?", None),
        ("Never put metal in the microwave.", None),
    ],
)
def test_chit_chat_is_no_instruction(text: str, speaker: str | None) -> None:
    """What was stored as a standing instruction before: nothing at all now."""
    assert facts_of({"text": text, "speaker": speaker}) == []


def test_facts_never_lean_on_a_bare_pronoun() -> None:
    """Each sentence yields exactly the facts listed (none for "Remember that they
    loved it"); and no fact of either set begins with a bare pronoun."""
    wrong = []
    for item in load("fact_subjects.jsonl"):
        got = [f.content for f in facts_of(item)]
        if got != item["facts"]:
            wrong.append(f"{item['text']!r} → {got}, expected {item['facts']}")
    assert wrong == [], "\n".join(wrong)
    leaning = [
        f"{item['text']!r} → {f.content!r}"
        for item in [*load("fact_subjects.jsonl"), *load("instructions.jsonl")]
        for f in facts_of(item)
        if f.type != "procedural" and BARE.match(f.content)
    ]
    assert leaning == [], "\n".join(leaning)


def test_the_fact_set_holds_both_sides() -> None:
    items = load("fact_subjects.jsonl")
    assert sum(not i["facts"] for i in items) >= 15 and sum(bool(i["facts"]) for i in items) >= 10


def test_let_me_know_between_friends_is_no_instruction() -> None:
    """In a chat between two named people "let me know if you need anything" is how they
    talk; said to the agent with "always" it is a standing instruction."""
    from memloci.consolidation.instructions import standing_instruction

    friendly = "Let me know if you need any more suggestions"
    assert standing_instruction(friendly, among_people=True) is None
    assert standing_instruction("Always let me know when a build fails") is not None
