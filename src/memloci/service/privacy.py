"""Forgetting a person (layer: service): one call that removes everything memloci holds
about a user in a namespace, then scrubs the store so none of it stays on disk.

``MemoryService.privacy``; the storage work is two store primitives,
:meth:`~memloci.storage.base.Store.delete_user_data` (one transaction) and
:meth:`~memloci.storage.base.Store.scrub`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memloci import validate as v
from memloci.errors import ConflictError
from memloci.service.calls import threaded
from memloci.service.core import Service
from memloci.storage.base import Scrub
from memloci.storage.locks import entities_lock, users_lock


class ForgetReport(BaseModel):
    """What ``forget_user`` removed (counts per kind) and whether the files were scrubbed."""

    model_config = ConfigDict(defer_build=True)

    namespace: str
    user: str
    users: int = Field(0, description="user records (the user and users merged into it)")
    identifiers: int = Field(0, description="channel identifiers")
    memories: int = Field(0, description="memories of every type, current or not")
    versions: int = 0
    vectors: int = 0
    edges: int = 0
    entity_links: int = 0
    entities: int = Field(0, description="entities only their memories mentioned")
    threads: int = Field(0, description="conversation threads (checkpoints)")
    sessions: int = Field(0, description="consolidation state of their sessions")
    decay_states: int = 0
    neighbours_blanked: int = Field(
        0, description="rows of kept turns whose copy of a removed neighbouring turn was removed"
    )
    scrubbed: bool = Field(
        description="the database files hold none of the removed text (False: see "
        "scrub_reason; the scrub stays due and the next forget_user finishes it)"
    )
    scrub_reason: str | None = Field(
        None,
        description="why the scrub could not finish (another connection held a read "
        "snapshot from before the deletion); null when scrubbed",
    )

    @property
    def removed(self) -> bool:
        """Whether anything was stored for the user (False: unknown or already forgotten)."""
        kinds = set(type(self).model_fields) - {"namespace", "user", "scrubbed", "scrub_reason"}
        return any(getattr(self, kind) for kind in kinds)


class Privacy(Service):
    """``forget_user``: the "forget a person" operation."""

    @threaded
    def forget_user(self, user_id: str, *, namespace: str | None = None) -> ForgetReport:
        """Forget a person in one namespace: their memories (every type and scope, with
        versions, vectors, full-text rows, edges and entity links), entities only they
        mention, threads, user record and identifiers (and users merged into them), and
        the consolidation state of their sessions go in ONE transaction; then the store
        is scrubbed so the database files hold none of their text. Other namespaces and
        users are untouched.

        The scrub never waits for other connections: when one holds a read snapshot
        from before the deletion it gives up at once and the report says so
        (``scrubbed=False``, ``scrub_reason``); the scrub stays due in the store.
        Forgetting an unknown (or already forgotten) user removes nothing and scrubs
        only when a scrub is due (so repeating a call whose scrub could not finish
        finishes it, and a stream of unknown users costs no vacuum).

        A user merged into another is refused (:class:`ConflictError`): their memories
        now belong to the user they were merged into; forget that one.
        """
        ns, uid = self.core.ns(namespace), v.required(user_id, "user")

        def run() -> ForgetReport:
            # the check and the delete: one transaction, serialised with merges and (in
            # the locks' order) with entity writes, which touch the rows it deletes
            with self.store.exclusive(users_lock(ns)), self.store.exclusive(entities_lock(ns)):
                known = self.store.people.get_user(ns, uid)
                if known is not None and known.merged_into is not None:
                    raise ConflictError(
                        f"memory user {uid!r} was merged into {known.merged_into!r}; "
                        "their memories belong to that user now; nothing was deleted",
                        hint=f"forget {known.merged_into!r} to forget the person",
                    )
                counts = self.store.delete_user_data(ns, uid)
            # outside the transaction (it vacuums); nothing removed and nothing left from
            # an earlier forget: nothing to scrub
            if any(counts.values()) or self.store.scrub_due():
                scrub = self.store.scrub()
            else:
                scrub = Scrub(True)
            return ForgetReport.model_validate(
                {
                    **counts,
                    "namespace": ns,
                    "user": uid,
                    "scrubbed": scrub.done,
                    "scrub_reason": scrub.reason,
                }
            )

        try:
            return run()
        finally:
            self.owners.changed(ns)
