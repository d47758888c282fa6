"""Which turn a new conversation turn follows (layer: storage), on PostgreSQL.

A turn is chained to the previous turn of its session *of the same owner* (user and
agent: users may share a session id, and one's words must never index another's row).
Without a session, a turn that names its speaker or role follows its owner's previous
such turn when their times are at most :data:`~memloci.storage.base.PAUSE` apart (turns
stored concurrently or out of order need not arrive in time order), looked for
among the namespace's newest :data:`~memloci.storage.base.RECENT_LOOSE` session-less
turns; a turn without a speaker is a note on its own. The SQLite store asks the same.

The turn's writer holds the chain's advisory lock (one writer per session or owner at a
time) and, shared, the namespace's delete lock that a forget or a purge holds exclusive:
a turn read as the previous one is never deleted before the new turn, which holds its
words in its full-text window, commits.
"""

from __future__ import annotations

from typing import Any

from memloci.models import MemoryNode
from memloci.storage.base import PAUSE, RECENT_LOOSE
from memloci.storage.postgres.base import _LOCK_CLASS


def deleting(namespace: str) -> str:
    """The advisory lock key a delete of memories of ``namespace`` holds exclusive."""
    return f"forget:{namespace}"


def lock_chain(c: Any, schema: str | None, node: MemoryNode) -> None:
    """Take the locks a turn linked to the previous one needs (see the module's doc)."""
    ns, prefix = node.namespace, schema or ""
    owner = f"loose:{ns}:{node.user or ''}:{node.agent or ''}"
    chain = owner if node.session is None else f"session:{ns}:{node.session}"
    c.execute(
        "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s)),"
        " pg_advisory_xact_lock(%s, hashtext(%s))",
        (_LOCK_CLASS, f"{prefix}:{deleting(ns)}", _LOCK_CLASS, f"{prefix}:{chain}"),
    )


def previous_turn(c: Any, node: MemoryNode) -> tuple[Any, ...] | None:
    """``(id, speaker, content, context)`` of the turn ``node`` follows, or None."""
    if node.session is not None:
        found = c.execute(
            "SELECT id, speaker, content, context FROM nodes WHERE namespace = %s"
            " AND session_id = %s AND type = 'episodic' AND user_id IS NOT DISTINCT FROM %s"
            " AND agent_id IS NOT DISTINCT FROM %s ORDER BY seq DESC LIMIT 1",
            (node.namespace, node.session, node.user, node.agent),
        ).fetchone()
        return tuple(found) if found is not None else None
    if node.speaker is None:
        return None
    at = node.event_time.timestamp()
    found = c.execute(
        "SELECT id, speaker, content, context FROM (SELECT id, speaker, content, context,"
        " seq, user_id, agent_id, event_time FROM nodes WHERE namespace = %s"
        " AND session_id IS NULL AND type = 'episodic' ORDER BY seq DESC LIMIT %s) r"
        " WHERE speaker IS NOT NULL AND user_id IS NOT DISTINCT FROM %s"
        " AND agent_id IS NOT DISTINCT FROM %s AND event_time BETWEEN %s AND %s"
        " ORDER BY seq DESC LIMIT 1",
        (node.namespace, RECENT_LOOSE, node.user, node.agent, at - PAUSE, at + PAUSE),
    ).fetchone()
    return tuple(found) if found is not None else None
