"""Merged memory users, followed by every user-scoped call (layer: service).

After ``merge_users(old, new)`` the old id names the new user: a call that gives
``user=old`` (or ``owner_user=old``) — SDK, REST, MCP, tools, CLI, agent runner — reads
and writes as the user ``old`` was (transitively) merged into. Reads see that user's
memories; writes land under it. ``get_user``, ``save_user`` and ``forget_user`` still
address the record itself (forgetting a merged user stays a ConflictError).

Reads pay a dict lookup: roots are cached per (namespace, user id), unknown ids too
(a miss reads the record in the thread of the call: a worker thread for an awaited
service method, the caller's for :meth:`Owners.filter`), and dropped when this process
merges, saves, deletes, forgets or imports users. Another process's merge reaches this cache within
:data:`OWNER_TTL` seconds. Writes never wait for that: after its transaction commits,
a write with a user reads that user's record afresh (one primary-key read,
:meth:`Owners.settled`) and, if it was merged meanwhile, moves what stands under
the old id to the user it joined before the call returns; ``merge_users`` moves them
once more after its own commit. Either the write's fresh read sees the merge, or the
merge's second move starts after the write committed — so no memory stays under a
merged id, on SQLite or PostgreSQL (short of the merging process dying between its
commit and its second move while such a write raced it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memloci import validate as v
from memloci.config import Settings
from memloci.models import MemoryNode, MemoryUser, Thread
from memloci.storage.base import NodeFilter, Store

CHAIN_MAX = 100  # supersedes / merged_into chains followed at most this far
OWNER_TTL = 5.0  # seconds a cached root stands for reads (another process may merge)
OWNERS_MAX = 50_000  # cached ids at most (then the cache starts afresh)


class Owners:
    """Resolve a user id to the user it was merged into (cached); see the module doc."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        # (namespace, user id) → (root id, when read)
        self._owners: dict[tuple[str, str], tuple[str, float]] = {}
        self._generation = 0  # users changed by this process: bumped on each change

    def root_user(self, ns: str, user: MemoryUser) -> MemoryUser:
        """Follow ``merged_into`` (loop-safe; stops at a deleted user)."""
        seen = {user.id}
        while user.merged_into and user.merged_into not in seen and len(seen) < CHAIN_MAX:
            nxt = self.store.people.get_user(ns, user.merged_into)
            if nxt is None:
                break
            seen.add(nxt.id)
            user = nxt
        return user

    def owner(self, ns: str, user: str | None) -> str | None:
        """``user`` (validated), or the user it was merged into; None stays None."""
        uid = v.ident(user, "user")
        if uid is None:
            return None
        return self._cached_owner(ns, uid) or self.owner_now(ns, uid)

    def who(
        self, ns: str, user: str | None, agent: str | None, session: str | None
    ) -> tuple[str | None, str | None, str | None]:
        """A write's or lookup's user (followed, see :meth:`owner`), agent and session,
        validated."""
        agent, session = v.ident(agent, "agent"), v.ident(session)
        return self.owner(ns, user), agent, session

    def _cached_owner(self, ns: str, uid: str) -> str | None:
        hit = self._owners.get((ns, uid))
        return hit[0] if hit is not None and time.monotonic() - hit[1] < OWNER_TTL else None

    def owner_now(self, ns: str, uid: str) -> str:
        """:meth:`owner` read from the store (not the cache), and cached — unless this
        process changed its users meanwhile (the read may be older than that change)."""
        generation = self._generation
        record = self.store.people.get_user(ns, uid)
        root = uid if record is None else self.root_user(ns, record).id
        if self._generation == generation:
            if len(self._owners) >= OWNERS_MAX:
                self._owners.clear()
            self._owners[(ns, uid)] = (root, time.monotonic())
        return root

    def changed(self, ns: str) -> None:
        """Users of ``ns`` were merged, saved, deleted, forgotten or imported here: look
        them up again."""
        self._generation += 1
        for key in list(self._owners):  # one C call: safe while other threads add keys
            if key[0] == ns:
                self._owners.pop(key, None)

    def as_owner(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        """``nodes`` (not stored yet) owned by the users their users were merged into."""
        out = []
        for node in nodes:
            root = self.owner(node.namespace, node.user)
            out.append(node if root == node.user else node.model_copy(update={"user": root}))
        return out

    def settled(self, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        """Just-written ``nodes``, checked against a fresh read of their user: one merged
        meanwhile (another process, after this one's cache looked) has its memories
        moved to the user it joined, and the nodes say so. Call after the commit."""
        out = list(nodes)
        for ns, uid in {(n.namespace, n.user) for n in out if n.user is not None}:
            root = self.settled_user(ns, uid)
            if root != uid:
                out = [n.model_copy(update={"user": root}) if n.user == uid else n for n in out]
        return out

    def settled_thread(self, thread: Thread) -> Thread:
        """:meth:`settled` for a just-written thread."""
        if thread.user is None:
            return thread
        root = self.settled_user(thread.namespace, thread.user)
        return thread if root == thread.user else thread.model_copy(update={"user": root})

    def settled_user(self, ns: str, uid: str) -> str:
        root = self.owner_now(ns, uid)
        if root != uid:
            self.store.people.reassign_user(ns, uid, root)
        return root

    def filter(self, **kwargs: Any) -> NodeFilter:
        """Build a validated :class:`NodeFilter` from keyword arguments (see
        ``v.node_filter``); ``user`` and ``owner_user`` name the users they were merged
        into (when every namespace of the filter agrees on it)."""
        flt = v.node_filter(default_namespace=self.settings.namespace, **kwargs)
        if flt.user is None and flt.owner_user is None:
            return flt
        return replace(
            flt,
            user=self._owner_in(flt.namespaces, flt.user),
            owner_user=self._owner_in(flt.namespaces, flt.owner_user),
        )

    def _owner_in(self, namespaces: Sequence[str], user: str | None) -> str | None:
        roots = {self.owner(ns, user) for ns in namespaces}
        return roots.pop() if len(roots) == 1 else user
