"""Consolidation over time, with the rule extractor: a fact said again in a later session
is confirmed (and no longer decays); an edit is newer than the turns before it; a fact
replaced by one said in the past ends where that one begins, so ``as_of`` shows one."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memloci import Memory
from pgtest import both_backends

MakeMemory = Callable[..., Memory]


@pytest.fixture
def mem(make_memory: MakeMemory) -> Memory:
    return make_memory(consolidate_on_session_switch=False)


def said(mem: Memory, session: str, text: str, when: datetime | None = None) -> None:
    mem.add(text, user="u1", session=session, role="user", event_time=when)


def facts(mem: Memory) -> list[tuple[str, bool]]:
    every = mem.list(user="u1", type="semantic", include_forgotten=True, order="created")
    return [(n.content, n.is_current) for n in every]


@both_backends
def test_a_fact_said_again_in_a_later_session_is_confirmed(mem: Memory) -> None:
    said(mem, "s1", "I live in Lisbon")
    first = mem.end_session("s1")
    assert len(first.created) == 1
    fact = mem.get(first.created[0])
    assert fact.times_confirmed == 0
    said(mem, "s2", "I live in Lisbon")
    again = mem.end_session("s2")
    assert again.created == [] and again.confirmed == 1
    assert mem.get(fact.id).times_confirmed == 1  # a confirmed fact no longer decays


def test_a_restatement_gives_a_remembered_fact_its_key_so_a_move_replaces_it(
    mem: Memory,
) -> None:
    home = mem.remember("User lives in Lisbon", user="u1").memory
    assert home.key is None
    said(mem, "s1", "I live in Lisbon")
    mem.end_session("s1")
    keyed = mem.get(home.id)
    assert keyed.key is not None and keyed.times_confirmed == 1
    said(mem, "s2", "I moved to Porto")
    moved = mem.end_session("s2")
    assert moved.superseded == [home.id]
    assert [c for c, current in facts(mem) if current] == ["User moved to Porto"]


def test_an_edit_is_newer_than_turns_consolidated_after_it(mem: Memory) -> None:
    """The turn "I moved to Porto" was said before the fact was edited to Faro: the
    session consolidated after the edit keeps Faro current (Porto is history)."""
    home = mem.remember("User lives in Lisbon", key="home_location", user="u1").memory
    time.sleep(0.02)
    said(mem, "s1", "I moved to Porto")
    time.sleep(0.02)
    mem.update(home.id, "User lives in Faro")
    report = mem.end_session("s1")
    assert len(report.superseded) == 1 and report.superseded != [home.id]
    assert mem.lookup("home_location", user="u1").content == "User lives in Faro"
    assert facts(mem) == [("User lives in Faro", True), ("User moved to Porto", False)]


@both_backends
def test_a_fact_replaced_in_the_past_ends_where_its_successor_begins(mem: Memory) -> None:
    said(mem, "s1", "I live in Lisbon", datetime(2024, 5, 8, tzinfo=UTC))
    mem.end_session("s1")
    said(mem, "s2", "I moved to Porto", datetime(2024, 6, 1, tzinfo=UTC))
    mem.end_session("s2")
    every = mem.list(user="u1", type="semantic", include_forgotten=True, order="created")
    lisbon, porto = every
    assert lisbon.valid_until == porto.valid_from == datetime(2024, 6, 1, tzinfo=UTC)
    mem.flush()
    for when, expected in (("2024-05-20", "lives in Lisbon"), ("2024-07-01", "moved to Porto")):
        hits = mem.search("where does the user live", user="u1", type="semantic", as_of=when)
        assert [h.memory.content for h in hits] == [f"User {expected}"], when
