"""The neighbouring turns a turn's full-text row holds (layer: storage), for both SQL
backends.

A conversation turn's row indexes, besides its own words, the turns around it in its
chain (the ``temporal`` edges: its session's turns of the same owner, or a session-less
chat's): ``context`` holds the turns before it, nearest first, ``next_context`` the turns
after it. Each holds the nearest turn whole and further ones while they all fit in
:data:`WINDOW` characters — so a turn of ordinary length holds one turn each way, as a
row always did, while a message of a chat of short messages ("I love the connection to
nature.") holds the few around it that say what it is about ("I started surfing five
years ago"). A message that says nothing of its own ("lol", "Thanks!": :func:`said`)
is held by no window: the windows around it reach past it.

The windows are defined step by step along the chain — a turn's ``context`` is
:func:`window` of the previous turn's text and that turn's own ``context`` — so a change
anywhere is carried along by :func:`carry` until a window comes out as it was: a new
turn (its predecessors' ``next_context``), an edited turn, and a removed one (the turns
beyond it then start afresh), whose words must never stay findable through another row.
Temporal edges written as records (an import, a migration: :func:`linked`) set the
windows of the turns they join as if each turn had arrived after the one before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from memloci.models import Edge, EdgeType, short_id
from memloci.words import says_nothing

WINDOW = 160  # characters: further turns join a window while they fit in this many
SEP = "\n"  # between the turns of a window
MAX_TURNS = 6  # turns one window holds at most (tiny messages: "at 5", "the blue one")
MAX_STEPS = MAX_TURNS + 1  # turns that say something a change is carried past: every holder
MAX_WALK = 10_000  # rows one change rewrites at most (a run of fillers is walked through)
_SAID_MAX = 600  # characters of one turn a window keeps
_CHUNK = 400  # ids per IN list


def said(speaker: str | None, text: str) -> str:
    """A turn as its neighbours' rows hold it: ``speaker: text`` on one line; nothing for
    a message that says nothing of its own ("lol", "Thanks!", an emoji:
    :func:`~memloci.words.says_nothing`), which :func:`window` passes over."""
    if says_nothing(text):
        return ""
    return (f"{speaker}: {text}" if speaker else text)[:_SAID_MAX].replace(SEP, " ")


def window(nearest: str, further: str) -> str:
    """The window starting with the ``nearest`` turn, then the turns of ``further`` (the
    nearest turn's own window on that side) while they fit in :data:`WINDOW` characters
    in all, :data:`MAX_TURNS` turns at most (so a change carried :data:`MAX_STEPS` turns
    reaches every window holding it): a turn of ordinary length holds its neighbour on
    each side, a short message the few short ones around it. A nearest turn that says
    nothing (``said`` is empty) is passed over: the window is its own, ``further``."""
    if not nearest:
        return further
    pieces, total = [nearest], len(nearest)
    for piece in further.split(SEP) if further else ():
        total += len(piece)
        if total > WINDOW or len(pieces) == MAX_TURNS:
            break
        pieces.append(piece)
    return SEP.join(pieces)


class Chain(Protocol):
    """One transaction's view of a namespace's turn chains."""

    def neighbour(self, node_id: str, column: str) -> str | None:
        """The turn after ``node_id`` (``column`` ``"context"``: the turns whose context
        it is in) or before it (``"next_context"``), if any."""
        ...

    def row(self, node_id: str) -> tuple[str, str, str] | None:
        """``(said, context, next_context)`` of a turn, None if it is gone."""
        ...

    def write(self, node_id: str, column: str, value: str) -> None: ...


def carry(chain: Chain, node_id: str, column: str) -> int:
    """``node_id``'s text or window on one side changed: recompute the windows that hold
    it, along the chain away from it (``column`` ``"context"``: the turns after it;
    ``"next_context"``: the turns before), until one comes out as it was. Returns how
    many rows changed. The rows are written oldest first, whichever way the change
    goes, as the worker writes vectors and claims episodes: the two never wait on each
    other's rows in opposite orders (a deadlock on PostgreSQL, where an insert broken
    by one runs again)."""
    writes: list[tuple[str, str]] = []
    here = chain.row(node_id)
    steps = 0  # past turns that say something: a window holds MAX_TURNS of them at most
    while steps < MAX_STEPS and len(writes) < MAX_WALK:
        other = chain.neighbour(node_id, column) if here is not None else None
        there = chain.row(other) if other is not None else None
        if here is None or other is None or there is None:
            break
        value = window(here[0], here[1] if column == "context" else here[2])
        if value == (there[1] if column == "context" else there[2]):
            break
        writes.append((other, value))
        steps += 1 if here[0] else 0  # a filler is passed over: its window is carried on
        node_id = other
        here = (there[0], value, there[2]) if column == "context" else (*there[:2], value)
    for other, value in writes if column == "context" else reversed(writes):
        chain.write(other, column, value)
    return len(writes)


def restart(chain: Chain, node_id: str, column: str) -> int:
    """``node_id``'s neighbour on one side is gone: its window on that side (``column``)
    is emptied, and the change carried on to the turns beyond it on the *other* side."""
    here = chain.row(node_id)
    if here is None:
        return 0
    chain.write(node_id, column, "")
    return 1 + carry(chain, node_id, column)


def edited(chain: Chain, ids: Sequence[str]) -> None:
    """The text of ``ids`` changed: carry it into the windows on both sides."""
    for node_id in ids:
        carry(chain, node_id, "context")
        carry(chain, node_id, "next_context")


class SQLChain:
    """:class:`Chain` over a transaction's cursor ``c`` in ``namespace`` (``ph``: the
    driver's placeholder). Rows are read once per instance: make a new one after
    deleting turns."""

    def __init__(self, c: Any, namespace: str, ph: str = "?") -> None:
        self.c, self.namespace, self.ph = c, namespace, ph
        self._rows: dict[str, tuple[str, str, str] | None] = {}
        self._before: dict[str, str | None] = {}  # known predecessors (``"next_context"``)
        self._held: list[tuple[str, str, str]] | None = None  # writes sent together, in order

    def neighbour(self, node_id: str, column: str) -> str | None:
        if column == "next_context" and node_id in self._before:
            return self._before[node_id]
        ph = self.ph
        mine, theirs = (
            ("source_id", "target_id") if column == "context" else ("target_id", "source_id")
        )
        found = self.c.execute(
            f"SELECT {theirs} FROM edges WHERE namespace = {ph} AND {mine} = {ph}"
            " AND relation = 'temporal' LIMIT 1",
            (self.namespace, node_id),
        ).fetchone()
        return None if found is None else str(found[0])

    def row(self, node_id: str) -> tuple[str, str, str] | None:
        if node_id not in self._rows:
            found = self.c.execute(
                "SELECT speaker, content, context, next_context FROM nodes"
                f" WHERE id = {self.ph} AND namespace = {self.ph}",
                (node_id, self.namespace),
            ).fetchone()
            self._rows[node_id] = (
                None if found is None else (said(found[0], found[1]), found[2], found[3])
            )
        return self._rows[node_id]

    def follow(
        self, prev_id: str, node_id: str, at: float, row: tuple[str, str, str] | None = None
    ) -> None:
        """``node_id`` (just inserted with the window of ``prev_id`` as its context;
        ``row``: its :meth:`row`, if the caller knows it) is the turn after ``prev_id``:
        the temporal edge between them (``at``: its time), and the windows before it
        carry it (:func:`carry`). The turns before it are read in one query and the
        rows written in one batch (a pipeline on PostgreSQL): a few round trips an add,
        not three per turn carried."""
        ph = self.ph
        self.c.execute(
            "INSERT INTO edges (id, namespace, source_id, target_id, relation, valid_from,"
            f" created_at) VALUES ({ph}, {ph}, {ph}, {ph}, 'temporal', {ph}, {ph})",
            (short_id() + short_id(), self.namespace, prev_id, node_id, at, at),
        )
        if row is not None:
            self._rows[node_id] = row
        self._before[node_id] = prev_id
        self._behind(prev_id)
        self._held = []
        try:
            carry(self, node_id, "next_context")
            held = self._held
        finally:
            self._held = None
        if len(held) > 1:
            self.c.cursor().executemany(self._update("next_context"), held)
        elif held:
            self.c.execute(self._update("next_context"), held[0])

    def _behind(self, node_id: str) -> None:
        """Read ``node_id`` and the turns before it, as far as a change is carried
        without fillers, in one query: their rows, and their predecessors while each
        has one temporal edge in (a chain that forks is left to :meth:`neighbour`)."""
        found = self.c.execute(
            behind_sql(self.ph), (node_id, self.namespace, MAX_STEPS, self.namespace)
        ).fetchall()
        levels: dict[int, list[tuple[Any, ...]]] = {}
        for r in found:
            levels.setdefault(int(r[0]), []).append(r)
        for depth in range(MAX_STEPS + 1):
            here = levels.get(depth, [])
            if len(here) != 1:
                break  # a fork: the walk reads on, step by step
            ident, present, speaker, content, context, next_context = here[0][1:]
            if ident not in self._rows:
                self._rows[ident] = (
                    None if present is None else (said(speaker, content), context, next_context)
                )
            if depth == MAX_STEPS:
                break  # its predecessor was not asked for
            after = levels.get(depth + 1, [])
            if len(after) > 1:
                break
            self._before.setdefault(ident, str(after[0][1]) if after else None)

    def beside(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """The turns next to ``ids`` (about to be removed) that stay, with the side the
        removed turn is on: ``(turn, "context")`` after one, ``(turn, "next_context")``
        before one — a few set-wise reads, however many turns go. Ask before the
        removal; :func:`restart` them after it."""
        gone = list(dict.fromkeys(ids))
        out: list[tuple[str, str]] = []
        for start in range(0, len(gone), _CHUNK):
            chunk = gone[start : start + _CHUNK]
            marks = ", ".join([self.ph] * len(chunk))
            for mine, theirs, column in (
                ("source_id", "target_id", "context"),
                ("target_id", "source_id", "next_context"),
            ):
                out += [
                    (str(r[0]), column)
                    for r in self.c.execute(
                        f"SELECT {theirs} FROM edges WHERE namespace = {self.ph}"
                        f" AND relation = 'temporal' AND {mine} IN ({marks})",
                        (self.namespace, *chunk),
                    ).fetchall()
                ]
        keep = set(gone)
        return [(node_id, column) for node_id, column in out if node_id not in keep]

    def _update(self, column: str) -> str:
        ph = self.ph
        return f"UPDATE nodes SET {column} = {ph} WHERE id = {ph} AND namespace = {ph}"

    def write(self, node_id: str, column: str, value: str) -> None:
        if self._held is not None:
            self._held.append((value, node_id, self.namespace))
        else:
            self.c.execute(self._update(column), (value, node_id, self.namespace))
        old = self._rows.get(node_id)
        if old is not None:
            self._rows[node_id] = (
                (old[0], value, old[2]) if column == "context" else (old[0], old[1], value)
            )


def linked(c: Any, edges: Sequence[Edge], ph: str = "?") -> None:
    """``edges`` were just written in the transaction of ``c`` (the records of an import
    or a migration, whose turns were inserted unlinked): the windows of the turns their
    temporal edges join, on both sides, carried as :func:`carry` carries a change. Each
    chain is walked in order (``context`` from its first turn on, ``next_context`` from
    its last turn back), so every window is written from final ones: the rows come out
    as adding the turns one after another makes them."""
    chains: dict[str, list[tuple[str, str]]] = {}
    for edge in edges:
        if edge.relation is EdgeType.TEMPORAL:
            chains.setdefault(edge.namespace, []).append((edge.source_id, edge.target_id))
    for namespace, pairs in chains.items():
        ordered = _in_chain_order(pairs)
        chain = _Links(c, namespace, ph, ordered)
        for before, _ in ordered:
            carry(chain, before, "context")
        for _, after in reversed(ordered):
            carry(chain, after, "next_context")
        chain.flush()


class _Links(SQLChain):
    """:class:`SQLChain` for many links at once (a batch of a migration): the turns they
    join read in a few queries, their neighbours known from the links, the rows written
    together at the end — a few round trips, not a few per turn."""

    def __init__(self, c: Any, namespace: str, ph: str, pairs: Sequence[tuple[str, str]]) -> None:
        super().__init__(c, namespace, ph)
        self.after: dict[str, str] = {}
        self.before: dict[str, str] = {}
        for source, target in pairs:
            self.after.setdefault(source, target)
            self.before.setdefault(target, source)
        self.writes: dict[tuple[str, str], str] = {}
        ids = list(dict.fromkeys([*self.after, *self.before]))
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            for node_id, speaker, content, context, next_context in c.execute(
                "SELECT id, speaker, content, context, next_context FROM nodes"
                f" WHERE namespace = {ph} AND id IN ({', '.join([ph] * len(chunk))})",
                (namespace, *chunk),
            ).fetchall():
                self._rows[str(node_id)] = (said(speaker, content), context, next_context)

    def neighbour(self, node_id: str, column: str) -> str | None:
        known = (self.after if column == "context" else self.before).get(node_id)
        return known if known is not None else super().neighbour(node_id, column)

    def write(self, node_id: str, column: str, value: str) -> None:
        self.row(node_id)  # cached before it changes
        self.writes[(node_id, column)] = value
        old = self._rows.get(node_id)
        if old is not None:
            self._rows[node_id] = (
                (old[0], value, old[2]) if column == "context" else (old[0], old[1], value)
            )

    def flush(self) -> None:
        for column in ("context", "next_context"):
            rows = [(v, i, self.namespace) for (i, col), v in self.writes.items() if col == column]
            if rows:
                self.c.cursor().executemany(
                    f"UPDATE nodes SET {column} = {self.ph} WHERE id = {self.ph}"
                    f" AND namespace = {self.ph}",
                    rows,
                )
        self.writes.clear()


def _in_chain_order(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(before, after)`` links, each chain from its first link on; links the walk does
    not reach (a cycle, a second link from one turn) follow in their own order."""
    after: dict[str, str] = {}
    for source, target in pairs:
        after.setdefault(source, target)
    targets = {target for _, target in pairs}
    order: list[tuple[str, str]] = []
    seen: set[str] = set()
    for head, _ in pairs:
        node = head
        if node in targets:
            continue
        while node in after and node not in seen:
            seen.add(node)
            order.append((node, after[node]))
            node = after[node]
    walked = set(order)
    return order + [p for p in pairs if p not in walked]


def behind_sql(ph: str) -> str:
    """The query of :meth:`SQLChain._behind` (``ph``: the driver's placeholder): a turn
    and the turns before it, up to a depth, each with its row (NULL when gone)."""
    return (
        "WITH RECURSIVE back(id, depth) AS (SELECT CAST("
        + ph
        + " AS TEXT), 0 UNION ALL SELECT e.source_id, b.depth + 1 FROM back b"
        # CROSS JOIN: SQLite keeps this order, each step one look-up of edges_target
        # (joined the other way round it scanned the namespace's edges every step)
        f" CROSS JOIN edges e WHERE e.target_id = b.id AND e.namespace = {ph}"
        f" AND e.relation = 'temporal' AND b.depth < {ph})"
        " SELECT b.depth, b.id, n.id, n.speaker, n.content, n.context, n.next_context"
        f" FROM back b LEFT JOIN nodes n ON n.id = b.id AND n.namespace = {ph}"
    )
