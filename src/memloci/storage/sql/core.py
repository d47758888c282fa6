"""What the shared slices need of a backend (layer: storage)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from memloci.storage.rows import NODE_COLUMNS
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
            d.json(f"n.{c}") if c in JSON_NODE_COLUMNS else f"n.{c}" for c in NODE_COLUMNS
        ),
        user=(
            f"u.namespace, u.id, u.display_name, {d.json('u.identifiers')},"
            f" {d.json('u.preferences')}, u.conversation_count, u.last_seen, u.merged_into,"
            " u.created_at"
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


class SQLCore:
    """The hooks a backend gives the shared slices: its dialect, and connections for
    reads and for write transactions (nested ones join the open transaction)."""

    dialect: ClassVar[Dialect]
    cols: ClassVar[Columns]
    _dim: int | None

    if TYPE_CHECKING:

        def _reading(self) -> AbstractContextManager[Any]: ...

        def _tx(self) -> AbstractContextManager[Any]: ...

        def _bump(self, c: Any, key: str) -> int: ...

        def get_meta(self, key: str) -> str | None: ...

        def _xlock(self, c: Any, key: str) -> None: ...

        def count_pending_sessions(self, namespaces: Sequence[str]) -> int: ...
