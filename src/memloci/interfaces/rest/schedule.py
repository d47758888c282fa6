"""The server's daily maintenance schedule (layer: interfaces)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import datetime, timedelta

from memloci.models import utcnow
from memloci.service import MemoryService

log = logging.getLogger("memloci.server")


def seconds_until(hhmm: str, now: datetime) -> float:
    """Seconds from ``now`` (UTC) to the next ``HH:MM`` (UTC); a full day if it is now."""
    hh, mm = (int(x) for x in hhmm.split(":"))
    nxt = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    if nxt <= now:
        nxt += timedelta(days=1)
    return (nxt - now).total_seconds()


async def _loop(service: MemoryService, hhmm: str) -> None:
    while True:
        await asyncio.sleep(seconds_until(hhmm, utcnow()))
        try:
            report = await service.consolidation.maintain()
            log.info("maintenance done: %s", report)
        except Exception:  # a failed night must not stop the next one
            log.exception("maintenance failed")


@asynccontextmanager
async def nightly(service: MemoryService) -> AsyncIterator[asyncio.Task[None]]:
    """Run :meth:`~memloci.service.consolidation.Consolidation.maintain` daily at
    ``settings.maintenance_time`` (UTC)."""
    hhmm = service.settings.maintenance_time or "03:00"
    task = asyncio.create_task(_loop(service, hhmm), name="memloci-maintenance")
    try:
        yield task
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
