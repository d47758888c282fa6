"""A SQL store put together (layer: storage): the database object and the slices built
over it, and the store-wide calls (lifecycle, privacy, housekeeping) passed to the one
of them that does each."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Generic

from memloci.models import StoreStats
from memloci.storage.base import (
    EntityStore,
    GraphStore,
    JobStore,
    KnowledgeStore,
    MemoryStore,
    PeopleStore,
    Scrub,
    SearchStore,
    SessionState,
)
from memloci.storage.paging import PagedReads
from memloci.storage.sql.consolidation import SQLConsolidation
from memloci.storage.sql.core import DB
from memloci.storage.sql.inventory import SQLInventory
from memloci.storage.sql.privacy import SQLPrivacy


class SQLStore(Generic[DB]):
    """What both SQL backends' stores share: ``db`` owns the connections, each slice
    attribute (``memories``, ``search``, …) is a plain object given ``db``."""

    supports_vectors = True

    def __init__(
        self,
        db: DB,
        *,
        memories: MemoryStore,
        search: SearchStore,
        graph: GraphStore,
        people: PeopleStore,
        entities: EntityStore,
        jobs: SQLConsolidation[DB],
        knowledge: KnowledgeStore,
        pages: PagedReads,
        privacy: SQLPrivacy[DB],
    ) -> None:
        self.db = db
        self.memories = memories
        self.search = search
        self.graph = graph
        self.people = people
        self.entities = entities
        self.jobs: JobStore = jobs
        self.knowledge = knowledge
        self.pages = pages
        self._privacy = privacy
        self._inventory = SQLInventory(db, jobs)

    # lifecycle / metadata
    def close(self) -> None:
        self.db.close()

    def get_meta(self, key: str) -> str | None:
        return self.db.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.db.set_meta(key, value)

    def bind_embedder(self, model_id: str, dimension: int) -> None:
        self.db.bind_embedder(model_id, dimension)

    def schema_version(self) -> int:
        return self.db.schema_version()

    def batch(self) -> AbstractContextManager[None]:
        return self.db.batch()

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        return self.db.exclusive(key)

    # privacy
    def delete_user_data(self, namespace: str, user_id: str) -> dict[str, int]:
        return self._privacy.delete_user_data(namespace, user_id)

    def scrub(self) -> Scrub:
        return self._privacy.scrub()

    def scrub_due(self) -> bool:
        return self._privacy.scrub_due()

    # housekeeping and inventory
    def stats(self, namespaces: Sequence[str]) -> StoreStats:
        return self._inventory.stats(namespaces)

    def namespaces(self) -> list[str]:
        return self._inventory.namespaces()

    def record_namespaces(self) -> list[str]:
        return self._inventory.record_namespaces()

    def sessions(self, namespace: str) -> list[SessionState]:
        return self._inventory.sessions(namespace)

    def knowledge_vectors(self, namespace: str, source_id: str) -> dict[str, bytes]:
        return self._inventory.knowledge_vectors(namespace, source_id)
