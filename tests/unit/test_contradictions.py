"""Unkeyed contradictions supersede: the same subject's same property with an
incompatible value ("The build server is fast", later "… is slow"), with the old fact
kept in its history and the reply saying so. ``tests/data/contradictions.jsonl`` holds
pairs that must supersede and pairs that must not (a qualifier, another subject, two
roles at once, a place that may hold the other…): precision first."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from consolidation_helpers import turns
from unruly_llm import Turn, prompt_of, unruly

from memloci import Memory
from memloci.consolidation.contradiction import contradiction
from pgtest import both_backends

MakeMemory = Callable[..., Memory]

DATA = Path(__file__).resolve().parents[1] / "data" / "contradictions.jsonl"
PAIRS: list[dict[str, Any]] = [
    json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line
]


def _facts(m: Memory, user: str) -> dict[str, bool]:
    nodes = m.list(type=["semantic", "opinion"], user=user, include_forgotten=True, limit=50)
    return {n.content: n.is_current for n in nodes}


def test_the_set_is_large_enough_on_both_sides() -> None:
    assert sum(p["supersedes"] for p in PAIRS) >= 30
    assert sum(not p["supersedes"] for p in PAIRS) >= 30
    assert len({(p["old"], p["new"]) for p in PAIRS}) == len(PAIRS)


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p['old']} / {p['new']}" for p in PAIRS])
def test_the_reader_holds_the_set(pair: dict[str, Any]) -> None:
    assert (contradiction(pair["old"], pair["new"]) is not None) is pair["supersedes"], pair["why"]


@pytest.mark.slow
@both_backends
def test_remember_holds_the_set(make_memory: MakeMemory) -> None:
    """Through the SDK with the bundled embedder (near-duplicates are found by meaning),
    each pair for a user of its own."""
    m = make_memory(embedder="local")
    wrong = []
    for i, pair in enumerate(PAIRS):
        user = f"u{i}"
        first = m.remember(pair["old"], user=user)
        assert first.action == "created"
        second = m.remember(pair["new"], user=user)
        facts = _facts(m, user)
        if pair["supersedes"]:
            ok = (
                second.action == "superseded"
                and facts == {pair["old"]: False, pair["new"]: True}  # history kept
                and f"supersedes [{first.memory.id}]" in second.message
                and [n.id for n in second.similar] == [first.memory.id]
            )
        else:  # both stand (or the new one only confirmed the old: never replaced it)
            ok = second.action in ("created", "confirmed") and facts.get(pair["old"]) is True
        if not ok:
            wrong.append((pair, second.action, facts))
    assert wrong == []


@both_backends
def test_the_superseded_fact_keeps_its_history_and_the_edge(mem: Memory) -> None:
    old = mem.remember("The build server is fast", user="sam").memory
    result = mem.remember("The build server is slow", user="sam")
    assert result.action == "superseded" and "'The build server is fast' no longer holds" in (
        result.message
    )
    assert not mem.get(old.id).is_current
    edges = mem.service.store.memories.edges("default", result.memory.id, "supersedes")
    assert [(e.source_id, e.target_id) for e in edges] == [(result.memory.id, old.id)]
    found = [h.memory.id for h in mem.search("Is the build server fast?", user="sam")]
    assert found == [result.memory.id]  # only what holds now


def test_an_older_statement_never_replaces_a_newer_one(mem: Memory) -> None:
    mem.remember("The build server is slow", user="sam")
    older = mem.remember(
        "The build server is fast", user="sam", event_time=datetime(2020, 1, 1, tzinfo=UTC)
    )
    assert older.action == "created"
    both = {"The build server is slow": True, "The build server is fast": True}
    assert _facts(mem, "sam") == both


def test_another_owner_or_a_keyed_fact_is_not_replaced(mem: Memory) -> None:
    mem.remember("The build server is fast", user="sam")
    assert mem.remember("The build server is slow", user="kim").action == "created"
    assert _facts(mem, "sam") == {"The build server is fast": True}
    mem.remember("The office is located in Berlin", user="sam", key="office_city")
    assert mem.remember("The office is located in Munich", user="sam").action == "created"


# ---------------------------------------------------------------------- extractors
RULE_PAIRS = [
    ("The build server is fast", "The build server is slow", True),
    ("The office is located in Berlin", "The office is located in Munich", True),
    ("The build server has 16 GB of RAM", "The build server has 32 GB of RAM", True),
    ("The build server is fast at night", "The build server is slow", False),
    ("Ana lives in Berlin", "Ana lives in Germany", False),
]


@both_backends
@pytest.mark.parametrize(("old", "new", "supersedes"), RULE_PAIRS)
def test_the_rules_extractor(mem: Memory, old: str, new: str, supersedes: bool) -> None:
    turns(mem, "s1", f"Remember that {old[0].lower()}{old[1:]}")
    first = mem.consolidate("s1")
    turns(mem, "s2", f"Please remember: {new[0].lower()}{new[1:]}")
    second = mem.consolidate("s2")
    assert second.superseded == (first.created if supersedes else [])
    facts = _facts(mem, "sam")
    assert facts == {old: not supersedes, new: True}


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_llm_extractor(make_memory: MakeMemory, protocol: str) -> None:
    """A model that states each turn as a fact, served over HTTP by a local server."""
    with unruly(protocol) as model:

        def answer(body: dict[str, Any]) -> Turn:
            line = prompt_of(body).strip().splitlines()[-1]
            said = line.split(": ", 1)[1] if ": " in line else line
            return Turn({"facts": [{"content": said.strip()}], "entities": []})

        model.answer = answer
        options = {"base_url": model.base_url, "max_retries": 1, "timeout": 10}
        m = make_memory(llm=protocol, llm_options=options, consolidate_on_session_switch=False)
        pairs = [(o, n, s) for o, n, s in RULE_PAIRS]
        for i, (old, new, supersedes) in enumerate(pairs):
            user = f"u{i}"
            turns(m, f"a{i}", old, user=user)
            assert m.consolidate(f"a{i}").created
            turns(m, f"b{i}", new, user=user)
            report = m.consolidate(f"b{i}")
            assert bool(report.superseded) is supersedes, (old, new)
            assert _facts(m, user) == {old: not supersedes, new: True}
