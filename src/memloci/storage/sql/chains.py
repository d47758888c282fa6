"""Which turn a new conversation turn follows (layer: storage).

A turn is chained to the previous turn of its session *of the same owner* (user and
agent: users may share a session id, and one's words must never index another's row).
Without a session, a turn that names its speaker or role follows its owner's previous
such turn when their times are at most :data:`~memloci.storage.base.PAUSE` apart (turns
stored concurrently or out of order need not arrive in time order), looked for among
the namespace's newest :data:`~memloci.storage.base.RECENT_LOOSE` session-less turns; a
turn without a speaker is a note on its own. How a backend keeps two writers of one
chain apart is its own (SQLite's single writer, PostgreSQL's advisory locks).
"""

from __future__ import annotations

from typing import Any

from memloci.models import MemoryNode
from memloci.storage.base import PAUSE, RECENT_LOOSE
from memloci.storage.sql.dialect import Dialect


def previous_turn(c: Any, d: Dialect, node: MemoryNode) -> tuple[Any, ...] | None:
    """``(id, speaker, content, context)`` of the turn ``node`` follows, or None."""
    if node.session is not None:
        found = c.execute(
            d.q(
                "SELECT id, speaker, content, context FROM nodes WHERE namespace = ?"
                f" AND session_id = ? AND type = 'episodic' AND user_id {d.same} ?"
                f" AND agent_id {d.same} ? ORDER BY {d.rowid} DESC LIMIT 1"
            ),
            (node.namespace, node.session, node.user, node.agent),
        ).fetchone()
        return tuple(found) if found is not None else None
    if node.speaker is None:
        return None
    at = node.event_time.timestamp()
    found = c.execute(
        d.q(
            "SELECT id, speaker, content, context FROM (SELECT id, speaker, content, context,"
            f" {d.rowid}, user_id, agent_id, event_time FROM nodes WHERE namespace = ?"
            f" AND session_id IS NULL AND type = 'episodic' ORDER BY {d.rowid} DESC LIMIT ?) r"
            f" WHERE speaker IS NOT NULL AND user_id {d.same} ? AND agent_id {d.same} ?"
            f" AND event_time BETWEEN ? AND ? ORDER BY {d.rowid} DESC LIMIT 1"
        ),
        (node.namespace, RECENT_LOOSE, node.user, node.agent, at - PAUSE, at + PAUSE),
    ).fetchone()
    return tuple(found) if found is not None else None
