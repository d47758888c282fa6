"""Agent-runtime helpers of MemoryService (layer: service): what ``memloci.runtime`` needs
beyond the record methods. A mixin, like :mod:`memloci.service.records`."""

from __future__ import annotations

from datetime import datetime
from typing import ParamSpec, TypeVar

from memloci import validate as v
from memloci.errors import NotFoundError
from memloci.models import MemoryUser, utcnow
from memloci.service.owners import OwnersMixin
from memloci.storage.base import Store
from memloci.storage.locks import users_lock

P = ParamSpec("P")
T = TypeVar("T")


class RuntimeMixin(OwnersMixin):
    """Contact statistics of memory users (``last_seen``, ``conversation_count``)."""

    store: Store

    async def touch_user(
        self,
        user_id: str,
        *,
        namespace: str | None = None,
        new_conversation: bool = False,
        when: datetime | None = None,
    ) -> MemoryUser:
        """Record contact with a user: ``last_seen`` becomes ``when`` (default now; it
        never moves backwards) and ``new_conversation`` adds one to
        ``conversation_count``. One transaction; an unknown user is a NotFoundError, and
        a user merged into another counts for the user it joined."""
        ns, uid = self._ns(namespace), v.required(user_id, "user")
        new = v.flag(new_conversation, "new_conversation")
        at = v.when(when) or utcnow()

        def run() -> MemoryUser:
            with self.store.exclusive(users_lock(ns)):  # no contact lost to another server
                user = self.store.get_user(ns, uid)
                if user is None:
                    raise NotFoundError(f"no memory user {uid!r} in namespace {ns!r}")
                user = self._root_user(ns, user)
                seen = at if user.last_seen is None else max(user.last_seen, at)
                count = user.conversation_count + (1 if new else 0)
                return self.store.upsert_user(
                    user.model_copy(update={"last_seen": seen, "conversation_count": count})
                )

        return await self._run(run)
