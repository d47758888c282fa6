"""The composition root (layer: service): Settings → store + embedder → MemoryService."""

from __future__ import annotations

from memloci.config import Settings
from memloci.providers.base import Embedder, load_embedder
from memloci.service import MemoryService
from memloci.storage.base import Store


def build_store(settings: Settings) -> Store:
    """The store named by ``settings.path`` (SQLite file; PostgreSQL URLs later)."""
    from memloci.storage.sqlite import SQLiteStore

    return SQLiteStore(settings.path)


def build_embedder(settings: Settings) -> Embedder | None:
    if settings.embedder in ("none", ""):
        return None
    return load_embedder(settings.embedder, **settings.embedder_options)


def build_service(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    embedder: Embedder | str | None = "settings",
    reembed: bool = False,
) -> MemoryService:
    """Wire a service; ``store`` and ``embedder`` may be injected (tests, custom providers)."""
    settings = settings or Settings()
    emb = build_embedder(settings) if embedder == "settings" else embedder
    assert not isinstance(emb, str)
    st = store or build_store(settings)
    try:
        return MemoryService(st, emb, settings, reembed=reembed)
    except BaseException:
        if store is None:
            st.close()
        raise
