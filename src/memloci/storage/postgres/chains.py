"""The locks of a conversation chain on PostgreSQL (layer: storage); which turn a new
turn follows is :func:`memloci.storage.sql.chains.previous_turn`.

The turn's writer holds the chain's advisory lock (one writer per session or owner at a
time) and, shared, the namespace's delete lock that a forget or a purge holds exclusive:
a turn read as the previous one is never deleted before the new turn, which holds its
words in its full-text window, commits.
"""

from __future__ import annotations

from typing import Any

from memloci.models import MemoryNode
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
