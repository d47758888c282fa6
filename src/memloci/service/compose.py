"""The composition root (layer: service): Settings → store + embedder → MemoryService."""

from __future__ import annotations

import importlib
from enum import Enum
from typing import Final

from memloci._extras import require
from memloci.config import Settings
from memloci.errors import ValidationError
from memloci.providers.base import Embedder, Reranker, load_embedder, load_reranker, warm_up
from memloci.service import MemoryService
from memloci.storage.base import Store
from memloci.storage.location import describe, is_database_url, is_postgres_url


def open_store(location: str, *, schema: str | None = None, read_only: bool = False) -> Store:
    """The store at ``location``: a ``postgresql://`` / ``postgres://`` URL opens a
    :class:`~memloci.storage.postgres.PostgresStore` (``schema`` picks its schema), any
    other string a SQLite file (``:memory:`` for a throwaway one). ``read_only`` opens an
    existing SQLite store for reads only. Errors never repeat the URL's password."""
    if read_only and is_database_url(location):
        raise ValidationError(
            "read_only opens SQLite store files; a database server keeps its own permissions",
            hint="for PostgreSQL, connect as a role granted SELECT only",
        )
    if is_postgres_url(location):
        require(
            "postgres",
            what=describe(location),
            hint="install the extra, or point --db / MEMLOCI_PATH at a SQLite file",
        )
        backend = importlib.import_module("memloci.storage.postgres")
        options = {"schema": schema} if schema else {}
        store: Store = backend.PostgresStore(location, **options)
        return store
    if is_database_url(location):
        raise ValidationError(
            f"unsupported store URL {describe(location)!r}",
            hint="use postgresql://user:password@host:5432/dbname, or a SQLite file path",
        )
    from memloci.storage.sqlite import SQLiteStore

    return SQLiteStore(location, read_only=read_only)


def build_store(settings: Settings) -> Store:
    """The store named by ``settings.path`` (see :func:`open_store`)."""
    return open_store(settings.path, read_only=settings.read_only)


def build_embedder(settings: Settings) -> Embedder | None:
    if settings.embedder in ("none", ""):
        return None
    return load_embedder(settings.embedder, **settings.embedder_options)


def _kept_model(store: Store, settings: Settings, emb: Embedder | None) -> Embedder | None:
    """The bundled model a store was made with, when the settings ask for ``local``
    without a ``model_path`` (``emb`` is then the bundled bge-small, built from the
    settings here or by the command line): the default became bge-small-en, and a store
    whose vectors come from the bundled MiniLM keeps MiniLM (``memloci reembed`` moves
    it to bge-small)."""
    from memloci.providers.bge import BgeSmallEmbedder

    if type(emb) is not BgeSmallEmbedder or settings.embedder != "local":
        return emb
    if "model_path" in settings.embedder_options:
        return emb
    from memloci.providers.minilm import MODEL_ID

    if store.get_meta("embedding_model") != MODEL_ID:
        return emb
    from memloci.providers.minilm_int8 import OnnxMiniLMEmbedder

    require(
        "minilm",
        what="this store (its vectors come from all-MiniLM-L6-v2, int8)",
        hint="or move it to bge-small-en, the default: memloci reembed",
    )
    kept = OnnxMiniLMEmbedder(**settings.embedder_options)
    warm_up(kept)
    return kept


def build_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``settings.reranker`` names, or None (``none``, the default)."""
    if settings.reranker in ("none", ""):
        return None
    return load_reranker(settings.reranker, **settings.reranker_options)


class FromSettings(Enum):
    """The type of :data:`FROM_SETTINGS`: a default that is no embedder and no None."""

    EMBEDDER = "the embedder the settings name"


# build_service's default embedder: build the one the settings name (None is "no embedder")
FROM_SETTINGS: Final = FromSettings.EMBEDDER


def build_service(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    embedder: Embedder | FromSettings | None = FROM_SETTINGS,
    reembed: bool = False,
) -> MemoryService:
    """Wire a service; ``store`` and ``embedder`` may be injected (tests, custom providers)."""
    settings = settings or Settings()
    emb = build_embedder(settings) if embedder is FROM_SETTINGS else embedder
    warm_up(emb)
    reranker = build_reranker(settings)  # before the store: a bad name or model opens nothing
    st = store or build_store(settings)
    try:
        if not reembed:
            emb = _kept_model(st, settings, emb)
        return MemoryService(st, emb, settings, reembed=reembed, reranker=reranker)
    except BaseException:
        if store is None:
            st.close()
        raise
