"""What differs in the text of one statement between SQLite and PostgreSQL (layer: storage).

See :mod:`memloci.storage.sql` for what a dialect provides. Statements are written with
``?`` placeholders and no other ``?``; :meth:`Dialect.q` gives the driver's form (cached:
the same text each time, so PostgreSQL's prepared statements still apply).
"""

from __future__ import annotations

import functools
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

    def nocase(self, expr: str) -> str:
        """``expr`` as a case-blind sort key."""
        return f"lower({expr})" if self.name == "postgres" else f"{expr} COLLATE NOCASE"

    def bytewise(self, expr: str) -> str:
        """``expr`` as a sort key in byte order (SQLite's default, not PostgreSQL's)."""
        return f'{expr} COLLATE "C"' if self.name == "postgres" else expr

    def flag(self, value: bool) -> bool | int:
        """A boolean parameter."""
        return value if self.name == "postgres" else int(value)

    def chunks(self, values: Sequence[Any]) -> Iterator[list[Any]]:
        """``values`` in the parts one :meth:`any` test takes (all at once with arrays)."""
        items = list(values)
        size = len(items) if self.arrays else CHUNK
        for i in range(0, len(items), max(size, 1)):
            yield items[i : i + size]

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the test and its parameters."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def upsert(self, table: str, columns: Sequence[str], keys: Sequence[str]) -> str:
        """Insert a row of ``columns``, replacing the row of the same ``keys``."""
        cols = ", ".join(columns)
        values = ", ".join(self.jsonb if c in _JSON_PARAMS else "?" for c in columns)
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


# JSON columns written from Python text (PostgreSQL types them jsonb)
_JSON_PARAMS = frozenset(
    {
        "identifiers",
        "preferences",
        "messages",
        "aliases",
        "attributes",
        "namespaces",
        "value",
        "evidence",
    }
)


@functools.lru_cache(maxsize=4096)
def _pyformat(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


SQLITE = Dialect(
    name="sqlite",
    ph="?",
    rowid="rowid",
    json_array_length="json_array_length",
    same="IS",
    jsonb="?",
    arrays=False,
    row_locks=False,
    offset="LIMIT -1 OFFSET ?",
    like="LIKE ? ESCAPE '\\'",
    ilike="LIKE ? ESCAPE '\\'",
)
POSTGRES = Dialect(
    name="postgres",
    ph="%s",
    rowid="seq",
    json_array_length="jsonb_array_length",
    same="IS NOT DISTINCT FROM",
    jsonb="?::jsonb",
    arrays=True,
    row_locks=True,
    offset="OFFSET ?",
    like="LIKE ?",
    ilike="ILIKE ?",
)
