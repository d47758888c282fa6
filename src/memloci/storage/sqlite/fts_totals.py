"""The full-text index's row count kept true (layer: storage).

FTS5's bm25 divides by the index's row count (``N`` of the IDF) and its average row
length, which it keeps in one record of ``nodes_fts_data`` (id 1: the row count, then
the tokens of each column; ``knowledge_fts`` alike). A *contentless-delete* index does
not know the tokens of a row it deletes, so it never lowers that record: every deleted
or rewritten row stays counted. memloci rewrites a turn's row as the turns after it
arrive (its window holds them), so the count grew with the store's history — 3.6× the
memories on the dev message store — and every word weighed more than it does
(PostgreSQL counts its rows: there a word in half the rows weighs nothing).

:func:`refresh` sets the count to the rows the index holds (``nodes_fts_docsize`` has
one row per indexed row) and scales each column's tokens by the same factor, so the
average row length stays as FTS5 kept it. The store runs it in a transaction of its own
every so many commits (:func:`due`; FTS5 writes the record at the end of any
transaction that changed the index, from the figures it read at its start, so a write
in the same transaction would be lost). FTS5's integrity check passes on the result.
"""

from __future__ import annotations

from typing import Any

EVERY = (16, 256)  # commits between two refreshes: a quarter of the rows, within these
_RECORD = 1  # the id of FTS5's averages record in nodes_fts_data


TABLES = ("nodes_fts", "knowledge_fts")  # the store's contentless-delete indexes


def refresh(conn: Any, table: str = "nodes_fts") -> int:
    """Make the averages record of the FTS5 index ``table`` count its rows (in the
    caller's write transaction, one that has not changed the index); returns the rows
    counted."""
    rows = int(conn.execute(f"SELECT count(*) FROM {table}_docsize").fetchone()[0])
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_RECORD,)).fetchone()
    if row is None or not row[0]:
        return rows
    counted, *tokens = read_varints(bytes(row[0]))
    if counted > rows:
        scale = rows / counted
        block = b"".join(varint(v) for v in [rows, *(round(t * scale) for t in tokens)])
        conn.execute(f"UPDATE {table}_data SET block = ? WHERE id = ?", (block, _RECORD))
    return rows


def due(rows: int) -> int:
    """Commits until the next refresh, for an index of ``rows`` rows."""
    low, high = EVERY
    return max(low, min(high, rows // 4))


def read_varints(blob: bytes) -> list[int]:
    """The varints of ``blob`` (SQLite's: big-endian, 7 bits a byte, the high bit set on
    every byte but the last; the ninth byte holds 8 bits)."""
    out: list[int] = []
    value, size = 0, 0
    for byte in blob:
        size += 1
        if size == 9:
            out.append((value << 8) | byte)
            value, size = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value, size = 0, 0
    return out


def varint(value: int) -> bytes:
    """``value`` (0 ≤ value < 2**56) as SQLite writes a varint."""
    if value < 0 or value >= 1 << 56:
        raise ValueError(f"varint out of range: {value}")
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(value & 0x7F)
        value >>= 7
    groups.reverse()
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])
