"""Consolidation supersedes by when things were said, not by when sessions are
consolidated: a fact drawn from older turns than the current fact it conflicts with is
stored as history (already superseded by it), never as its replacement."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memloci import Memory
from memloci.models import EdgeType
from pgtest import both_backends

MakeMemory = Callable[..., Memory]
T0 = datetime(2024, 5, 1, tzinfo=UTC)


def _moved(mem: Memory) -> None:
    """Lisbon said in s1; a day later, in s2, the move to Porto. s2 is consolidated first."""
    mem.add("I live in Lisbon", user="u", session="s1", speaker="user", event_time=T0)
    later = T0 + timedelta(days=1)
    mem.add("I no longer live in Lisbon", user="u", session="s2", speaker="user", event_time=later)
    mem.add(
        "I live in Porto now", user="u", session="s2", speaker="user",
        event_time=later + timedelta(minutes=1),
    )  # fmt: skip
    mem._call(mem.service.consolidation.consolidate("s2"))


@both_backends
@pytest.mark.parametrize("how", ["consolidate", "maintain"])
def test_an_older_statement_consolidated_late_is_history(make_memory: MakeMemory, how: str) -> None:
    mem = make_memory(consolidate_on_session_switch=False)
    _moved(mem)
    porto = mem.list(user="u", type="semantic")
    assert [n.content for n in porto] == ["User lives in Porto"]
    if how == "consolidate":
        report = mem._call(mem.service.consolidation.consolidate("s1"))
    else:
        mem._call(mem.service.consolidation.maintain())
        report = None
    current = mem.list(user="u", type="semantic")
    assert [n.id for n in current] == [porto[0].id]  # Porto stays the current fact
    lisbon = [
        n for n in mem.list(user="u", type="semantic", include_forgotten=True, limit=50)
        if n.content == "User lives in Lisbon"
    ]  # fmt: skip
    assert len(lisbon) == 1 and lisbon[0].valid_until is not None
    assert lisbon[0].valid_until == porto[0].valid_from  # true until the move
    if report is not None:
        assert report.superseded == [lisbon[0].id] and report.created == [lisbon[0].id]
    edges = mem._call(mem.service.records.explain(porto[0].id)).edges
    superseded = {e.target_id for e in edges if e.relation is EdgeType.SUPERSEDES}
    assert lisbon[0].id in superseded  # Porto → Lisbon, as if said in order
    flt = mem.service.filter(user="u", type="semantic", as_of=T0 + timedelta(hours=12))
    then = mem._call(mem.service.memories.list_nodes(flt))
    assert [n.content for n in then] == ["User lives in Lisbon"]


@both_backends
def test_a_newer_statement_still_supersedes(make_memory: MakeMemory) -> None:
    mem = make_memory(consolidate_on_session_switch=False)
    mem.add("I live in Lisbon", user="u", session="s1", speaker="user", event_time=T0)
    mem._call(mem.service.consolidation.consolidate("s1"))
    later = T0 + timedelta(days=2)
    mem.add("I live in Porto now", user="u", session="s2", speaker="user", event_time=later)
    report = mem._call(mem.service.consolidation.consolidate("s2"))
    assert [n.content for n in mem.list(user="u", type="semantic")] == ["User lives in Porto"]
    assert len(report.superseded) == 1 and len(report.created) == 1
