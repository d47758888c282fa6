"""The dynamic part of the context block: filled by relevance — entity profiles of what the
prompt names, a timeline only for a time window, evidence best first, shares that flow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memloci import Memory
from memloci.context import SHARES, estimate_tokens

BASE = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def _section(text: str, title: str) -> str:
    if title not in text:
        return ""
    rest = text.split(title, 1)[1]
    return title + rest.split("\n## ", 1)[0]


def seed(mem: Memory) -> dict[str, str]:
    turns = [
        "We planned the lighthouse trip with Sarah for the spring",
        "Sarah booked the ferry to the lighthouse island",
        "The ferry was cancelled because of the storm",
        "We rebooked the lighthouse trip for the following weekend",
        "My sister Anna adopted a kitten called Miso",
        "Anna's kitten Miso learned to open doors",
    ]
    ids = [
        mem.add(t, user="sam", session="s1", speaker="Sam", event_time=BASE + timedelta(hours=i)).id
        for i, t in enumerate(turns)
    ]
    fact = mem.remember("Sarah is the user's climbing partner", category="person", user="sam")
    svc = mem.service
    sarah = mem._call(svc.records.save_entity("Sarah", type="person", summary="Climbing partner"))
    mem._call(svc.records.link_entities(ids[1], [sarah.id]))
    mem._call(svc.records.link_entities(fact.memory.id, [sarah.id]))
    mem.flush()
    return {"fact": fact.memory.id, "ferry": ids[1], "first": ids[0], "sarah": sarah.id}


def test_entity_profiles_timeline_and_evidence(mem: Memory) -> None:
    seed(mem)
    text = mem.context("what happened with Sarah and the ferry?", user="sam", budget=2000)
    people = _section(text, "## People and Things")
    assert "**Sarah** (person): Climbing partner" in people  # the prompt names her
    evidence = _section(text, "## Relevant Past Conversations")
    assert "ferry" in evidence
    assert "## Timeline" not in text  # the prompt names no time window
    order = [text.index(t) for t in ("## Your Memory", "## People and Things")]
    assert order == sorted(order)
    # a profile only for an entity the prompt names
    assert "## People and Things" not in mem.context("the ferry was cancelled?", user="sam")


def test_a_timeline_only_for_a_window_the_prompt_names(mem: Memory) -> None:
    seed(mem)
    mem.add(
        "The ferry company refunded the lighthouse tickets",
        user="sam",
        session="s9",
        speaker="Sam",
        event_time=BASE + timedelta(days=70),
    )
    mem.flush()
    text = mem.context("what happened with the lighthouse ferry in May 2024?", user="sam")
    timeline = _section(text, "## Timeline")
    assert "refunded" in timeline  # in the window
    assert "2024-03-01" not in timeline  # items outside it are not in the timeline
    dates = [line[4:] for line in timeline.splitlines() if line.startswith("### ")]
    assert dates and all(d.startswith("2024-05") for d in dates)


def test_an_off_topic_prompt_gets_no_relevant_section(make_memory: Any) -> None:
    mem = make_memory(embedder="local")  # the bundled model: scores are calibrated for it
    seed(mem)
    on_topic = mem.context("Who booked the ferry?", user="sam", budget=1000)
    assert "Sarah booked the ferry" in on_topic.partition("## Relevant")[2]
    for prompt in ("What is the capital of Peru?", "How do I reverse a linked list in C?"):
        text = mem.context(prompt, user="sam", budget=1000)
        assert "## Relevant" not in text and "## People and Things" not in text, text
        hits = mem.search(prompt, user="sam")
        assert all(h.score < mem.service.settings.relevance_threshold for h in hits)


def test_no_prompt_gives_only_the_cacheable_part(mem: Memory) -> None:
    seed(mem)
    text = mem.context(user="sam")
    assert "## Your Memory" in text
    for title in ("## People and Things", "## Timeline", "## Relevant Past Conversations"):
        assert title not in text
    assert mem.context("the ferry?", user="sam").startswith(text)


@pytest.mark.parametrize("budget", [200, 400, 800])
def test_an_unfilled_share_flows_to_the_evidence(make_memory: Any, budget: int) -> None:
    mem = make_memory(embedder="local")
    seed(mem)
    for i in range(30):
        mem.add(
            f"Another lighthouse ferry note number {i} about the storm and the island",
            user="sam",
            session="s2",
            event_time=BASE + timedelta(days=1, minutes=i),
        )
    mem.flush()
    text = mem.context("lighthouse ferry storm island", user="sam", budget=budget)
    assert estimate_tokens(text) <= budget
    # nothing else competes: the evidence takes far more than its 10 % share
    evidence = _section(text, "## Relevant Past Conversations")
    assert estimate_tokens(evidence) > budget * SHARES["evidence"] * 2


def test_deterministic_with_a_prompt(mem: Memory) -> None:
    seed(mem)
    first = mem.context("the lighthouse trip", user="sam")
    assert mem.context("the lighthouse trip", user="sam") == first


def test_other_users_turns_stay_out_of_the_timeline(mem: Memory) -> None:
    seed(mem)
    mem.add("Bob's private lighthouse secret", user="bob", session="b1")
    mem.flush()
    assert "secret" not in mem.context("lighthouse secret", user="sam")


def test_the_report_says_what_is_in_the_block_and_why(make_memory: Any) -> None:
    mem = make_memory(embedder="local")
    seed(mem)
    report = mem.context_report("Who booked the ferry?", user="sam", budget=1000)
    assert report.block == mem.context("Who booked the ferry?", user="sam", budget=1000)
    assert report.tokens == estimate_tokens(report.block) <= report.budget == 1000
    assert report.threshold == mem.service.settings.relevance_threshold
    titles = [s.title for s in report.sections]
    assert "## Your Memory" in titles and "## Relevant Past Conversations" in titles
    evidence = next(s for s in report.sections if s.title == "## Relevant Past Conversations")
    assert not evidence.cacheable and evidence.tokens > 0
    booked = next(i for i in evidence.items if any("booked the ferry" in x for x in i.lines))
    assert booked.score >= report.threshold and booked.why and booked.memory_ids
    # every hit below the threshold is reported as left out, none of them in the block
    assert all(i.score < report.threshold for i in report.left_out)
    shown = {m for s in report.sections for i in s.items for m in i.memory_ids}
    assert not shown & {m for i in report.left_out for m in i.memory_ids}
