"""What differs in the text of one statement between SQLite and PostgreSQL (layer: storage).

See :mod:`memloci.storage.sql` for what a dialect provides. Statements are written with
``?`` placeholders and no other ``?``; :meth:`Dialect.q` gives the driver's form (cached:
the same text each time, so PostgreSQL's prepared statements still apply).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

CHUNK = 400  # values per ``IN (?, …)`` list: under SQLite's bound-parameter limit


@dataclass(frozen=True)
class Dialect:
    name: str
    ph: str  # the driver's placeholder
    rowid: str  # orders rows by insertion
    json_array_length: str
    same: str  # NULL-safe equality: ``a IS b`` / ``a IS NOT DISTINCT FROM b``
    jsonb: str  # a JSON parameter
    arrays: bool  # ``= ANY(?)`` over one array (else ``IN (?, …)`` over chunks)
    rowid_key: bool  # ``rowid`` addresses a row directly (cheaper than its ``id``)
    row_locks: bool  # ``FOR UPDATE`` locks the rows a write reads first
    offset: str  # skip rows without a limit
    like: str  # ``LIKE`` a pattern with ``\\`` escapes
    ilike: str  # the same, case-blind

    def q(self, sql: str) -> str:
        """``sql`` (``?`` placeholders) in the driver's placeholder style."""
        return _pyformat(sql) if self.name == "postgres" else sql

    def json(self, expr: str) -> str:
        """A JSON column read as its text."""
        return f"{expr}::text" if self.name == "postgres" else expr

    def unindexed(self, expr: str) -> str:
        """``expr`` kept out of SQLite's index choice (the unary ``+``)."""
        return expr if self.name == "postgres" else f"+{expr}"

    @property
    def join_first(self) -> str:
        """A join whose left table SQLite must read first (``CROSS JOIN``)."""
        return "JOIN" if self.name == "postgres" else "CROSS JOIN"

    def indexed_by(self, index: str) -> str:
        """SQLite told to read through ``index``."""
        return "" if self.name == "postgres" else f" INDEXED BY {index}"

    def bytes_range(self, expr: str) -> str:
        """``expr`` in ``[?, ?)`` compared bytewise (PostgreSQL's pattern operators match
        its ``text_pattern_ops`` index)."""
        if self.name == "postgres":
            return f"({expr} ~>=~ ? AND {expr} ~<~ ?)"
        return f"({expr} >= ? AND {expr} < ?)"

    def nocase(self, expr: str) -> str:
        """``expr`` as a case-blind sort key."""
        return f"lower({expr})" if self.name == "postgres" else f"{expr} COLLATE NOCASE"

    def bytewise(self, expr: str) -> str:
        """``expr`` as a sort key in byte order (SQLite's default, not PostgreSQL's)."""
        return f'{expr} COLLATE "C"' if self.name == "postgres" else expr

    def flag(self, value: bool) -> bool | int:
        """A boolean parameter."""
        return value if self.name == "postgres" else int(value)

    def chunks(self, values: Sequence[Any], arrays: int = 0) -> Iterator[list[Any]]:
        """``values`` in the parts one :meth:`any` test takes (with arrays: all at once,
        or ``arrays`` at a time)."""
        items = list(values)
        size = (arrays or len(items)) if self.arrays else CHUNK
        for i in range(0, len(items), max(size, 1)):
            yield items[i : i + size]

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the test and its parameters."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def delete_in(
        self, conn: Any, table: str, column: str, namespace: str, values: Sequence[Any]
    ) -> int:
        """Delete the rows of ``table`` in ``namespace`` whose ``column`` is one of
        ``values`` (in the parts :meth:`any` takes); how many."""
        deleted = 0
        for part in self.chunks(values):
            test, params = self.any(column, part)
            sql = f"DELETE FROM {table} WHERE namespace = ? AND {test}"
            deleted += conn.execute(self.q(sql), [namespace, *params]).rowcount
        return int(deleted)

    def by_ids(self, alias: str, ids: Sequence[str], table: str = "nodes") -> tuple[str, list[Any]]:
        """``{table} {alias}`` narrowed to ``ids``, up to a ``WHERE`` that takes one more
        condition; and its parameters. SQLite looks the ids up through the unique index
        whatever its statistics say (a ``CROSS JOIN`` from a JSON array)."""
        if self.name == "postgres":
            return f"{table} {alias} WHERE {alias}.id = ANY(?) AND", [list(ids)]
        return (
            f"json_each(?) j CROSS JOIN {table} {alias} ON {alias}.id = j.value WHERE",
            [json.dumps(list(ids))],
        )

    def upsert(
        self, table: str, columns: Sequence[str], keys: Sequence[str], json: Sequence[str] = ()
    ) -> str:
        """Insert a row of ``columns`` (``json``: those written as JSON), replacing the
        row of the same ``keys``."""
        cols = ", ".join(columns)
        values = ", ".join(self.jsonb if c in json else "?" for c in columns)
        if self.name != "postgres":
            return f"INSERT OR REPLACE INTO {table} ({cols}) VALUES ({values})"
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
        return (
            f"INSERT INTO {table} ({cols}) VALUES ({values})"
            f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"
        )

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        """Insert a row of ``columns`` unless it breaks a unique key."""
        cols = ", ".join(columns)
        values = ", ".join("?" * len(columns))
        if self.name != "postgres":
            return f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({values})"
        return f"INSERT INTO {table} ({cols}) VALUES ({values}) ON CONFLICT DO NOTHING"

    def many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        """Run ``sql`` once per row; the cursor (its ``rowcount`` sums the rows)."""
        if self.name == "postgres":
            cur = conn.cursor()
            cur.executemany(self.q(sql), rows)
            return cur
        return conn.executemany(sql, rows)


@functools.lru_cache(maxsize=4096)
def _pyformat(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


# what differs between the two, field by field: (SQLite, PostgreSQL)
_SPELLINGS: dict[str, tuple[Any, Any]] = {
    "ph": ("?", "%s"),
    "rowid": ("rowid", "seq"),
    "json_array_length": ("json_array_length", "jsonb_array_length"),
    "same": ("IS", "IS NOT DISTINCT FROM"),
    "jsonb": ("?", "?::jsonb"),
    "arrays": (False, True),
    "rowid_key": (True, False),
    "row_locks": (False, True),
    "offset": ("LIMIT -1 OFFSET ?", "OFFSET ?"),
    "like": ("LIKE ? ESCAPE '\\'", "LIKE ?"),
    "ilike": ("LIKE ? ESCAPE '\\'", "ILIKE ?"),
}
SQLITE = Dialect("sqlite", **{field: both[0] for field, both in _SPELLINGS.items()})
POSTGRES = Dialect("postgres", **{field: both[1] for field, both in _SPELLINGS.items()})
