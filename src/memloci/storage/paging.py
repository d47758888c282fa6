"""Keyset (cursor) paging of lists (layer: storage), shared by the SQL backends.

A page is read in ONE snapshot — its rows and the total of the filter together — and
ends with an opaque cursor holding the sort key of its last row (the sort columns and
a unique tiebreak: the row's insertion number or id). The next page starts strictly
after that key, so rows inserted or deleted meanwhile never shift the pages: nothing is
skipped or listed twice. A row whose own sort key changes meanwhile (an edited category,
a thread that gets a message, an entity mentioned again) moves to its new place: listed
there again or not at all. ``offset`` paging stays for compatibility.

The cursor is base64url JSON ``[list tag, key values…]``; it is not signed (it holds
nothing secret) but checked: another list's or another order's cursor, or a key of the
wrong shape, is a :class:`~memloci.errors.ValidationError`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memloci.errors import ValidationError
from memloci.models import KeyPage as KeyPage
from memloci.models import PageRequest as PageRequest
from memloci.storage.access import live

if TYPE_CHECKING:
    from memloci.models import (
        Entity,
        EntityFilter,
        MemoryNode,
        MemoryUser,
        NodeFilter,
        Thread,
        ThreadFilter,
        UserFilter,
    )

T = TypeVar("T")
CURSOR_MAX = 2000  # characters; a longer cursor was never made here
_HINT = "pass the next_cursor of the previous page unchanged, with the same order and filters"


@dataclass(frozen=True)
class Keyset:
    """A list's sort order as ``(sql expression, descending, python type)`` columns, the
    last one unique (the tiebreak); ``tag`` names the list (and order) in its cursors."""

    tag: str
    columns: tuple[tuple[str, bool, type], ...]

    def order_sql(self) -> str:
        return ", ".join(f"{e} DESC" if desc else e for e, desc, _ in self.columns)

    def select_sql(self) -> str:
        return ", ".join(e for e, _, _ in self.columns)

    def after_sql(self, key: Sequence[Any], ph: str) -> tuple[str, list[Any]]:
        """WHERE clause for rows strictly after ``key`` in this order."""
        ors: list[str] = []
        params: list[Any] = []
        for i, (expr, desc, _) in enumerate(self.columns):
            same = [f"{e} = {ph}" for e, _, _ in self.columns[:i]]
            ors.append("(" + " AND ".join([*same, f"{expr} {'<' if desc else '>'} {ph}"]) + ")")
            params += [*key[:i], key[i]]
        return "(" + " OR ".join(ors) + ")", params

    def encode(self, key: Sequence[Any]) -> str:
        raw = json.dumps([self.tag, *(_plain(v) for v in key)], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def decode(self, cursor: str) -> list[Any]:
        """The key a cursor of this list holds, or a ValidationError."""

        def bad(why: str) -> ValidationError:
            return ValidationError(f"invalid cursor: {why}", hint=_HINT)

        if not isinstance(cursor, str) or not cursor or len(cursor) > CURSOR_MAX:
            raise bad("not a cursor this server made")
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            data = json.loads(raw.decode())
        except (binascii.Error, ValueError):
            raise bad("not a cursor this server made") from None
        if not isinstance(data, list) or not data or not isinstance(data[0], str):
            raise bad("not a cursor this server made")
        if data[0] != self.tag:
            raise bad(f"it was made for another list or order ({data[0]!r}, not {self.tag!r})")
        key = data[1:]
        if len(key) != len(self.columns) or not all(
            _fits(v, kind) for v, (_, _, kind) in zip(key, self.columns, strict=True)
        ):
            raise bad("its key does not fit this list")
        return key


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _fits(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


# the orders of Store.list_nodes as keysets: ``{seq}`` is the backend's insertion number
# (SQLite rowid, PostgreSQL seq), ``{id}`` the id as the backend sorts it for ``protected``
_NODE_KEYS: dict[str, tuple[tuple[str, bool, type], ...]] = {
    "created": (("n.created_at", False, float), ("{seq}", False, int)),
    "-created": (("n.created_at", True, float), ("{seq}", True, int)),
    "event": (("n.event_time", False, float), ("{seq}", False, int)),
    "-event": (("n.event_time", True, float), ("{seq}", True, int)),
    "category": (("n.category", False, str), ("n.created_at", False, float), ("{seq}", False, int)),
    "confidence": ((live("confidence"), False, float), ("{seq}", False, int)),
    "-confidence": (
        (live("confidence"), True, float),
        ("n.created_at", True, float),
        ("{seq}", True, int),
    ),
    "rowid": (("{seq}", False, int),),
    "protected": (
        ("CASE WHEN n.decay_rate > 0 THEN 1 ELSE 0 END", False, int),
        ("n.updated_at", True, float),
        ("{id}", False, str),
    ),
}


def node_keyset(order: str, *, seq: str, ident: str) -> Keyset | None:
    """The keyset of a :data:`~memloci.models.NODE_ORDERS` order (None: unknown)."""
    cols = _NODE_KEYS.get(order)
    if cols is None:
        return None
    return Keyset(f"nodes:{order}", tuple((e.format(seq=seq, id=ident), d, k) for e, d, k in cols))


def read_page(
    c: Any,
    *,
    table: str,
    columns: str,
    where: str,
    params: Sequence[Any],
    keys: Keyset,
    page: PageRequest,
    ph: str,
    convert: Callable[[Any], T],
) -> KeyPage[T]:
    """One page of ``table`` (aliased in ``columns`` / ``where``) and the total of
    ``where``, on connection ``c`` (the caller holds it in one snapshot); ``offset``
    counts from the cursor's row when both are given."""
    limit, cursor = page.limit, page.cursor
    after, after_params = (
        keys.after_sql(keys.decode(cursor), ph) if cursor is not None else ("", [])
    )
    n = len(keys.columns)
    rows = c.execute(
        f"SELECT {columns}, {keys.select_sql()} FROM {table} WHERE {where}"
        f"{' AND ' + after if after else ''} ORDER BY {keys.order_sql()}"
        f" LIMIT {ph} OFFSET {ph}",
        [*params, *after_params, limit + 1, page.offset],
    ).fetchall()
    total = int(
        c.execute(f"SELECT count(*) FROM {table} WHERE {where}", list(params)).fetchone()[0]
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return KeyPage(
        items=[convert(tuple(r)[:-n]) for r in rows],
        total=total,
        next_cursor=keys.encode(tuple(rows[-1])[-n:]) if more else None,
    )


class PagedReads(Protocol):
    """The paged lists of :class:`~memloci.storage.base.Store`: each returns the page
    ``page`` asks for and the total of the same snapshot, and pages on by its ``cursor``
    (the ``next_cursor`` of the page before: strictly after its last row) or ``offset``
    (counted from the cursor's row when both are given). A cursor of another list or
    order, or one this store did not make, is a ValidationError."""

    def page_nodes(
        self, flt: NodeFilter, page: PageRequest, *, order: str = "created"
    ) -> KeyPage[MemoryNode]:
        """In one of ``NODE_ORDERS`` (as :meth:`Store.list_nodes` lists them)."""

    def page_threads(self, flt: ThreadFilter, page: PageRequest) -> KeyPage[Thread]:
        """Last updated first (then by id), without messages, as ``list_threads``."""

    def page_entities(self, flt: EntityFilter, page: PageRequest) -> KeyPage[Entity]:
        """Most mentioned first (then by name, id), as ``list_entities``."""

    def page_users(self, flt: UserFilter, page: PageRequest) -> KeyPage[MemoryUser]:
        """Oldest first (then by id), as ``list_users``."""


THREAD_KEYS = Keyset("threads", (("updated_at", True, float), ("id", False, str)))
USER_KEYS = Keyset("users", (("u.created_at", False, float), ("u.id", False, str)))


def entity_keys(name_expr: str) -> Keyset:
    """Entities by mentions, then name as the backend folds its case, then id."""
    return Keyset(
        "entities", (("e.mention_count", True, int), (name_expr, False, str), ("e.id", False, str))
    )


def unknown_order(order: str, orders: Sequence[str]) -> ValidationError:
    return ValidationError(f"unknown order {order!r}", hint=f"use one of {', '.join(orders)}")
