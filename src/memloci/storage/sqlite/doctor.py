"""SQLite health check and repair (layer: storage): ``memloci doctor``.

Readers skip a damaged row (:mod:`memloci.storage.faults`); this finds every such row
and, with ``repair``, fixes it in one transaction:

- a vector blob of the wrong size (``node_vectors``, ``entity_vectors``): dropped, and
  its memory marked to be embedded again (the caller embeds what is pending; an entity's
  name is embedded again when entities are next resolved);
- a JSON column that is not readable (not JSON, or not the object / list it must be):
  reset to its empty value, one note per row;
- a damaged full-text index (FTS5's ``integrity-check`` fails): emptied and refilled
  from the memories (or knowledge chunks) it indexes.

``PRAGMA quick_check`` reports damaged pages, which no repair here can fix.
"""

from __future__ import annotations

from typing import Any

from memloci.storage.base import Health
from memloci.storage.sql.core import SQLSlice
from memloci.storage.sqlite.base import DatabaseError, SQLiteDatabase

# (table, what names a row, column, its empty value as SQL, the JSON kind it must be)
_JSON_COLUMNS = (
    ("nodes", "'memory ' || id", "metadata", "'{}'", "object"),
    ("nodes", "'memory ' || id", "value", "NULL", None),
    ("nodes", "'memory ' || id", "details", "NULL", "object"),
    ("versions", "'version ' || version || ' of memory ' || node_id", "value", "NULL", None),
    ("edges", "'edge ' || id", "evidence", "'[]'", "array"),
    ("memory_users", "'user ' || id", "identifiers", "'{}'", "object"),
    ("memory_users", "'user ' || id", "preferences", "'{}'", "object"),
    ("entities", "'entity ' || id", "aliases", "'[]'", "array"),
    ("entities", "'entity ' || id", "attributes", "'{}'", "object"),
)
# refilling a full-text index: the columns its triggers write, from the rows it indexes
_REFILL = {
    "nodes_fts": (
        "INSERT INTO nodes_fts (rowid, content, speaker, context, next_context, date_text,"
        " keys, owner_tokens) SELECT rowid, content, coalesce(speaker, ''), context,"
        " next_context, date_text, trim(coalesce(replace(replace(key, '_', ' '), '-', ' '),"
        " '') || ' ' || coalesce(subject, '')), owner_tokens FROM nodes"
    ),
    "knowledge_fts": (
        "INSERT INTO knowledge_fts (rowid, text, heading, title) SELECT c.rowid, c.text,"
        " c.heading, coalesce((SELECT s.title FROM knowledge_sources s WHERE s.namespace ="
        " c.namespace AND s.id = c.source_id), '') FROM knowledge_chunks c"
    ),
}
_SHOWN = 20  # integrity-check lines kept in a report
# an entity vector that is no whole number of float32 values, or one of the bound model
# that is not of its dimension (another model's vectors may have another size)
_BAD_ENTITY = (
    "(length(embedding) = 0 OR length(embedding) % 4 <> 0 OR (length(embedding) <> ?"
    " AND model = (SELECT value FROM meta WHERE key = 'embedding_model')))"
)


def _unreadable(column: str, kind: str | None) -> str:
    """SQL true for a row whose ``column`` is not readable JSON of ``kind``."""
    valid = f"{column} IS NULL OR json_valid({column})"
    if kind is None:
        return f"NOT ({valid})"
    # CASE: json_type() of text that is not JSON is an error, not false
    return (
        f"CASE WHEN {column} IS NULL THEN 0 WHEN json_valid({column})"
        f" THEN json_type({column}) <> '{kind}' ELSE 1 END"
    )


class SQLiteDoctor(SQLSlice[SQLiteDatabase]):
    """``doctor``: find (and repair) what readers skip."""

    def doctor(self, *, repair: bool = False) -> Health:
        """See :meth:`memloci.storage.base.Store.doctor`."""
        health = Health(backend="sqlite")
        with self.db.reading() as c:
            rows = [str(r[0]) for r in c.execute("PRAGMA quick_check").fetchall()]
        # quick_check runs FTS5's own check too: a damaged index is checked (and
        # rebuilt) below, so only the rest counts as damaged pages
        pages = [r for r in rows if r != "ok" and not any(f'"{t}"' in r for t in _REFILL)]
        health.integrity = pages[:_SHOWN]
        size = (self.db._dim or 0) * 4
        with self.db.tx() as c:
            if size:
                health.vectors = [
                    str(r[0])
                    for r in c.execute(
                        "SELECT n.id FROM node_vectors v JOIN nodes n ON n.rowid = v.rowid"
                        " WHERE length(v.embedding) <> ?",
                        (size,),
                    )
                ]
                health.entity_vectors = [
                    str(r[0])
                    for r in c.execute(
                        f"SELECT entity_id FROM entity_vectors WHERE {_BAD_ENTITY}", (size,)
                    )
                ]
            damaged_json: list[tuple[str, str, str, str]] = []
            for table, name, column, empty, kind in _JSON_COLUMNS:
                for (what,) in c.execute(
                    f"SELECT {name} FROM {table} WHERE {_unreadable(column, kind)}"
                ).fetchall():
                    damaged_json.append((table, column, str(what), empty))
            health.json = [f"{t}.{col} of {what}" for t, col, what, _ in damaged_json]
            health.fulltext = [t for t in _REFILL if self._fts_damaged(c, t)]
            if repair and health.damaged:
                self._repair(c, health, size, damaged_json)
        return health

    @staticmethod
    def _fts_damaged(c: Any, table: str) -> bool:
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is None:
            return False
        try:
            c.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        except DatabaseError:
            return True
        return False

    def _repair(
        self, c: Any, health: Health, size: int, damaged_json: list[tuple[str, str, str, str]]
    ) -> None:
        """Fix what ``doctor`` found, in its transaction (all of it or nothing)."""
        for table in health.fulltext:
            c.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
            c.execute(_REFILL[table])
            health.notes.append(f"rebuilt the full-text index {table}")
        for table, _name, column, empty, kind in _JSON_COLUMNS:
            if any(t == table and col == column for t, col, _, _ in damaged_json):
                # the full-text triggers fire on content columns only: these are not
                c.execute(
                    f"UPDATE {table} SET {column} = {empty} WHERE {_unreadable(column, kind)}"
                )
        shown = {"'{}'": "{}", "'[]'": "[]", "NULL": "null"}
        health.notes += [
            f"{t}.{col} of {what} was not readable JSON: reset to {shown[empty]}"
            for t, col, what, empty in damaged_json
        ]
        if health.vectors:
            c.execute(
                "UPDATE nodes SET embedded = 0 WHERE rowid IN (SELECT rowid FROM node_vectors"
                " WHERE length(embedding) <> ?)",
                (size,),
            )
            c.execute("DELETE FROM node_vectors WHERE length(embedding) <> ?", (size,))
            self.db.bump(c, "vec_epoch")  # every process reloads its vector cache
            health.notes.append(
                f"dropped {len(health.vectors)} damaged vectors; their memories are embedded again"
            )
        if health.entity_vectors:
            c.execute(f"DELETE FROM entity_vectors WHERE {_BAD_ENTITY}", (size,))
            health.notes.append(
                f"dropped {len(health.entity_vectors)} damaged entity vectors (their names are "
                "embedded again when entities are next resolved)"
            )
        if health.integrity:
            health.notes.append(
                "damaged pages cannot be repaired in place: restore the store from a backup, "
                "or let `sqlite3 FILE .recover` save what it can"
            )
        health.repaired = True
