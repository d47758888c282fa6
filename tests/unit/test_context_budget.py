"""The context block's budget: the whole block never exceeds it, whatever the section mix,
and the facts kept when not all fit are the protected then the newest, whatever the store
size."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memloci import Memory
from memloci.context import (
    Candidate,
    EntityProfile,
    compose,
    entity_line,
    episode_line,
    estimate_tokens,
    fact_line,
    join_parts,
)
from memloci.models import Entity, EntityType, MemoryNode, NodeType, Scope

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
HANDLE = re.compile(r"\[id:([A-Za-z0-9]{8})\]")


def node(i: int, text: str, *, type: NodeType = NodeType.SEMANTIC, **fields: Any) -> MemoryNode:
    when = T0 + timedelta(minutes=i)
    data: dict[str, Any] = {
        "id": f"n{i:07d}",
        "type": type,
        "content": text,
        "event_time": when,
        "created_at": when,
        "updated_at": when,
        "valid_from": when,
    }
    data.update(fields)
    return MemoryNode(**data)


def entity(i: int, summary: str) -> EntityProfile:
    e = Entity(
        id=f"e{i:07d}",
        canonical_name=f"Person {i}",
        type=EntityType.PERSON,
        summary=summary,
        first_seen=T0,
        last_seen=T0,
    )
    return EntityProfile(e)


# Text of any length from a word to well over a section's share; a section's lines come
# in runs of one text, from none to well over what fits (many short lines fill a share).
TEXT = st.builds(
    lambda word, n: " ".join([word] * n),
    st.sampled_from(["deploy", "payments", "a", "migration-failed", "Sarah"]),
    st.one_of(st.integers(1, 6), st.integers(1, 120)),
)
LINES = st.lists(st.tuples(TEXT, st.integers(1, 60)), max_size=3).map(
    lambda runs: [f"{text} {i}" for text, count in runs for i in range(count)]
)


@settings(max_examples=300, deadline=None)
@given(
    facts=LINES,
    procedures=LINES,
    task=LINES,
    people=LINES,
    timeline=LINES,
    evidence=LINES,
    relevant=LINES,
    protected=st.sets(st.integers(0, 29)),
    categories=st.integers(1, 6),
    budget=st.integers(1, 4000),
    share=st.sampled_from([0.0, 0.2, 0.4, 1.0]),
)
def test_whole_block_stays_within_the_budget_whatever_the_mix(
    facts: list[str],
    procedures: list[str],
    task: list[str],
    people: list[str],
    timeline: list[str],
    evidence: list[str],
    relevant: list[str],
    protected: set[int],
    categories: int,
    budget: int,
    share: float,
) -> None:
    fact_nodes = [
        node(i, t, category=f"cat_{i % categories}", decay_rate=0.0 if i in protected else 0.1)
        for i, t in enumerate(facts)
    ]
    proc = NodeType.PROCEDURAL
    procs = [node(10000 + i, t, type=proc) for i, t in enumerate(procedures)]
    people_lines = [entity_line(entity(i, t)) for i, t in enumerate(people)]
    turns = [node(30000 + i, t, type=NodeType.EPISODIC) for i, t in enumerate(timeline + evidence)]
    extra_facts = fact_nodes[::2] + [node(50000 + i, t) for i, t in enumerate(relevant)]
    candidates = [
        *(
            Candidate(
                "procedures", (fact_line(node(20000 + i, t, type=proc)),), (f"n{20000 + i:07d}",)
            )
            for i, t in enumerate(task)
        ),
        *(Candidate("entities", (line,)) for line in people_lines),
        *(
            Candidate("timeline" if i % 2 else "evidence", (episode_line(n, 1200),), (n.id,))
            for i, n in enumerate(turns)
        ),
        *(Candidate("facts", (fact_line(n),), (n.id,)) for n in extra_facts),
    ]
    kwargs: dict[str, Any] = {"facts": fact_nodes, "procedures": procs, "candidates": candidates}
    composed = compose(**kwargs, budget=budget, stable_share=share)
    cacheable, dynamic = composed.cacheable, composed.dynamic
    assert estimate_tokens(join_parts(cacheable, dynamic)) <= budget
    # the cacheable part is the same whatever the prompt brought up
    plain = compose(facts=fact_nodes, procedures=procs, budget=budget, stable_share=share)
    assert plain.cacheable == cacheable
    # standing procedures in at most half the budget, "Your Memory" in its share
    head, _, memory = cacheable.partition("## Your Memory")
    assert estimate_tokens(head) <= budget // 2 + 1
    if memory:
        assert estimate_tokens("## Your Memory" + memory) <= int(budget * share)
    # a complex prompt's block may be given more in all: still within that total
    total = budget + budget // 2
    wider = compose(**kwargs, budget=budget, stable_share=share, total=total)
    both = join_parts(wider.cacheable, wider.dynamic)
    assert estimate_tokens(both) <= total
    assert both.startswith(cacheable)
    # an item appears once: no fact the cacheable part shows comes again in the dynamic one
    assert not set(HANDLE.findall(cacheable)) & set(HANDLE.findall(dynamic))


def seed_busy_store(mem: Memory) -> None:
    """Short facts, long person facts, many triggered and standing procedures, turns."""
    names = ["Sarah", "Marcus", "Priya", "Tom", "Elena", "Nina", "Omar", "Lee"]
    for i in range(60):
        mem.remember(f"Short fact {i} about item {i * 7}", user="u")
    for i, name in enumerate(names):
        mem.remember(
            f"{name} is a payments engineer who led migration {i}; they care about deploy "
            "safety and careful rollouts, and worked on billing, ledgers, reconciliation, "
            f"fraud checks and the on-call rota for the payments platform, team {i}",
            user="u",
            category="person",
            subject=name,
        )
    for i in range(25):
        mem.learn_procedure(
            f"Deploy rule {i}: before a payments deploy check step {i} and the migration log",
            triggers={"goal_contains": ["deploy"]},
            user="u",
        )
    for i in range(10):
        mem.learn_procedure(f"Standing rule {i}: keep answers short, number {i}", user="u")
    for i in range(80):
        mem.add(
            f"Turn {i}: {names[i % 8]} said the payments deploy migration failed at step {i}",
            user="u",
            session="s1",
            speaker=names[i % 8],
        )
    mem.flush()


def test_busy_store_context_stays_within_the_budget(mem: Memory) -> None:
    seed_busy_store(mem)
    prompt = "Sarah Marcus Priya Tom Elena deploy payments engineer migration failed"
    for budget in (150, 300, 600, 800, 1000, 1200, 1500, 3000):
        text = mem.context(prompt, user="u", budget=budget)
        assert estimate_tokens(text) <= budget, budget
        assert "## Procedures for This Task" in text or budget < 600
        # the same cacheable part whatever the prompt
        cacheable = mem.context_parts("anything else", user="u", budget=budget)[0]
        assert text.startswith(cacheable)


def test_a_small_context_budget_setting_is_kept(make_memory: Any) -> None:
    """``context_budget`` 200: a simple prompt's block stays within 200 tokens, a complex
    one's within 600 (it used to be lifted to 1000 / 3000)."""
    mem = make_memory(context_budget=200)
    seed_busy_store(mem)
    simple = mem.context("Sarah", user="u")
    assert 0 < estimate_tokens(simple) <= 200
    complex_ = mem.context(
        "Why did the payments deploy migration fail, and who told Sarah and Marcus about it?",
        user="u",
    )
    assert estimate_tokens(complex_) <= 600


def test_newest_fact_is_shown_past_two_thousand_facts(mem: Memory) -> None:
    """More facts than the context loads (2000): the newest and the protected are kept."""
    store = mem.service.store
    old = [
        node(
            i,
            f"Inventory record {i}: shelf A{i} holds box number {i}",
            scope=Scope.USER,
            user="u",
            decay_rate=0.0 if i == 0 else 0.1,  # the oldest of all is protected
        )
        for i in range(2100)
    ]
    store.memories.insert_nodes(old)
    new = mem.remember("User's new phone number is 555-0199", user="u")
    mem.flush()
    text = mem.context(None, user="u", budget=1000)
    shown = HANDLE.findall(text)
    assert new.memory.id in shown
    assert old[0].id in shown  # protected first
    records = sorted(int(n) for n in re.findall(r"Inventory record (\d+)", text))
    assert records[0] == 0 and records[1:] == list(range(2100 - len(records) + 1, 2100))


def test_kept_facts_are_a_prefix_of_newest_first(mem: Memory) -> None:
    """An older, shorter fact does not take the room a newer, longer one did not fit in."""
    store = mem.service.store
    facts = [
        node(i, f"Record {i}: " + ("a long note about the shelf " * 6 if i % 3 else "short"),
             scope=Scope.USER, user="u")
        for i in range(200)
    ]  # fmt: skip
    store.memories.insert_nodes(facts)
    # one fact too long for the whole room at this budget is passed over, not a stop
    huge = node(300, "Huge " + "x" * 2000, scope=Scope.USER, user="u")
    store.memories.insert_nodes([huge])
    text = mem.context(None, user="u", budget=400)  # no prompt: the whole budget
    shown = [int(n) for n in re.findall(r"Record (\d+)", text)]
    assert shown and huge.id not in text
    assert sorted(shown) == list(range(200 - len(shown), 200))  # the newest, none skipped
