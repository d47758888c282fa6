"""The server's daily maintenance schedule."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from memloci import Memory
from memloci.interfaces.rest import schedule


def test_seconds_until_next_run() -> None:
    now = datetime(2026, 1, 1, 2, 59, 30, tzinfo=UTC)
    assert schedule.seconds_until("03:00", now) == 30
    assert schedule.seconds_until("02:00", now) == 23 * 3600 + 30
    at_time = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
    assert schedule.seconds_until("03:00", at_time) == 24 * 3600


def test_nightly_runs_maintenance_and_survives_failures(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schedule, "seconds_until", lambda hhmm, now: 0.01)
    calls: list[str] = []
    real = mem.service.consolidation.maintain

    async def flaky() -> dict:
        calls.append("run")
        if len(calls) == 1:
            raise RuntimeError("disk hiccup")
        return await real()

    monkeypatch.setattr(mem.service.consolidation, "maintain", flaky)

    async def main() -> None:
        async with schedule.nightly(mem.service):
            while len(calls) < 3:
                await asyncio.sleep(0.01)

    asyncio.run(main())
    assert mem.stats().last_maintenance is not None
