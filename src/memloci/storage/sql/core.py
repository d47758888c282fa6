"""The database object every slice of a SQL store is given (layer: storage)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from memloci.errors import EmbeddingModelError, NotFoundError
from memloci.storage.access import live
from memloci.storage.rows import NODE_COLUMNS, USER_ACTIVITY
from memloci.storage.sql.dialect import Dialect

JSON_NODE_COLUMNS = ("value", "metadata", "details")


@dataclass(frozen=True)
class Columns:
    """The column lists the shared rows are read by (JSON as text on both backends)."""

    node: str
    user: str
    entity: str
    key: str
    thread: str  # ``{messages}``: the messages, or their count in listings


def columns(d: Dialect) -> Columns:
    return Columns(
        node=", ".join(
            d.json(f"n.{c}") if c in JSON_NODE_COLUMNS else live(c) for c in NODE_COLUMNS
        ),
        user=(
            f"u.namespace, u.id, u.display_name, {d.json('u.identifiers')},"
            f" {d.json('u.preferences')}, {USER_ACTIVITY}, u.merged_into, u.created_at"
        ),
        entity=(
            f"e.id, e.namespace, e.canonical_name, e.type, {d.json('e.aliases')}, e.summary,"
            f" e.first_seen, e.last_seen, e.mention_count, {d.json('e.attributes')}"
        ),
        key=(
            f"id, name, {d.json('namespaces')}, can_write, admin, created_at, revoked_at,"
            " last_used_at"
        ),
        thread="namespace, id, user_id, agent_id, {messages}, summary, created_at, updated_at",
    )


def require_node(c: Any, d: Dialect, namespace: str, node_id: str) -> None:
    """Raise NotFoundError unless ``node_id`` is a memory of ``namespace``."""
    found = c.execute(
        d.q(f"SELECT 1 FROM nodes WHERE {d.unindexed('namespace')} = ? AND id = ?"),
        (namespace, node_id),
    ).fetchone()
    if found is None:
        raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")


def refuse_other_embedder(bound: dict[str, str], model_id: str, dimension: int) -> None:
    """Raise :class:`EmbeddingModelError` when the store's ``meta`` rows (``bound``) name
    another embedding model or dimension than ``model_id`` / ``dimension``."""
    known = bound.get("embedding_model")
    if known is not None and (known != model_id or bound.get("dimension") != str(dimension)):
        raise EmbeddingModelError(
            f"this store holds vectors from {known!r} ({bound.get('dimension')}-d), "
            f"not {model_id!r} ({dimension}-d)",
            hint="use the same embedder, or run `memloci reembed` to switch models",
        )


class SQLDatabase:
    """What every slice of a SQL store is given: the backend's dialect and column lists,
    connections for reads and for write transactions (nested ones join the open
    transaction), and the store's ``meta`` rows. A backend subclasses it once
    (:class:`~memloci.storage.sqlite.base.SQLiteDatabase`,
    :class:`~memloci.storage.postgres.base.PostgresDatabase`); its connection state is
    read by that backend's own slices only."""

    dialect: ClassVar[Dialect]
    cols: ClassVar[Columns]
    _dim: int | None

    if TYPE_CHECKING:

        def reading(self) -> AbstractContextManager[Any]: ...

        def tx(self) -> AbstractContextManager[Any]: ...

        def bump(self, c: Any, key: str) -> int: ...

        def xlock(self, c: Any, key: str) -> None: ...

        def drop_vectors(self, c: Any, rowids: Sequence[int]) -> None: ...

        def size_bytes(self, c: Any) -> int: ...

        def vector_bytes(self, value: object) -> bytes: ...

        def close(self) -> None: ...

        def batch(self) -> AbstractContextManager[None]: ...

        def exclusive(self, key: str) -> AbstractContextManager[None]: ...

        def bind_embedder(self, model_id: str, dimension: int) -> None: ...

        def schema_version(self) -> int: ...

    def get_meta(self, key: str) -> str | None:
        with self.reading() as c:
            row = c.execute(self.dialect.q("SELECT value FROM meta WHERE key = ?"), (key,))
            found = row.fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.tx() as c:
            self.put_meta(c, key, value)

    def put_meta(self, c: Any, key: str, value: str) -> None:
        d = self.dialect
        c.execute(d.q(d.upsert("meta", ("key", "value"), ("key",))), (key, value))

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read (``sql`` with ``?`` placeholders)."""
        with self.reading() as c:
            return list(c.execute(self.dialect.q(sql), params).fetchall())

    def select_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one read, or None."""
        with self.reading() as c:
            return c.execute(self.dialect.q(sql), params).fetchone()


DB = TypeVar("DB", bound=SQLDatabase)


class SQLSlice(Generic[DB]):
    """A slice of a SQL store (memories, search, jobs, …): a plain object given the
    database it reads and writes through (composition: a slice that needs another is
    given that one too)."""

    def __init__(self, db: DB) -> None:
        self.db = db
