"""Context v2: entity profiles, timeline and evidence, each within its budget share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
    sarah = mem._call(svc.save_entity("Sarah", type="person", summary="Climbing partner"))
    mem._call(svc.link_entities(ids[1], [sarah.id]))
    mem._call(svc.link_entities(fact.memory.id, [sarah.id]))
    mem.flush()
    return {"fact": fact.memory.id, "ferry": ids[1], "first": ids[0], "sarah": sarah.id}


def test_entity_profiles_timeline_and_evidence(mem: Memory) -> None:
    seed(mem)
    text = mem.context("what happened with the ferry to the lighthouse?", user="sam", budget=2000)
    people = _section(text, "## People and Things")
    assert "**Sarah** (person): Climbing partner" in people
    evidence = _section(text, "## Relevant Past Conversations")
    assert "ferry" in evidence
    timeline = _section(text, "## Timeline")
    dates = [line[3:19] for line in timeline.splitlines() if line.startswith("- [")]
    assert dates == sorted(dates)
    order = [text.index(t) for t in ("## Your Memory", "## People and Things")]
    assert order == sorted(order)


def test_no_prompt_gives_only_the_cacheable_part(mem: Memory) -> None:
    seed(mem)
    text = mem.context(user="sam")
    assert "## Your Memory" in text
    for title in ("## People and Things", "## Timeline", "## Relevant Past Conversations"):
        assert title not in text
    assert mem.context("the ferry?", user="sam").startswith(text)


@pytest.mark.parametrize("budget", [200, 400, 800])
def test_each_section_stays_within_its_share(mem: Memory, budget: int) -> None:
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
    for title, share in (
        ("## People and Things", SHARES["entities"]),
        ("## Timeline", SHARES["timeline"]),
        ("## Relevant Past Conversations", SHARES["evidence"]),
    ):
        assert estimate_tokens(_section(text, title)) <= budget * share + 1


def test_deterministic_with_a_prompt(mem: Memory) -> None:
    seed(mem)
    first = mem.context("the lighthouse trip", user="sam")
    assert mem.context("the lighthouse trip", user="sam") == first


def test_other_users_turns_stay_out_of_the_timeline(mem: Memory) -> None:
    seed(mem)
    mem.add("Bob's private lighthouse secret", user="bob", session="b1")
    mem.flush()
    assert "secret" not in mem.context("lighthouse secret", user="sam")
