"""SQLite consolidation rows (layer: storage): the shared ones are
:mod:`memloci.storage.sql.consolidation`; here what the single writer decides: claims
over chunks of ids, named locks read and taken under the file's write lock, and entity
vectors checked for damage.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memloci.storage import faults
from memloci.storage.sql.consolidation import SQLConsolidation, Stale
from memloci.storage.sqlfilter import ts
from memloci.storage.sqlite.base import SQLiteDatabase, chunks, qs


class SQLiteConsolidation(SQLConsolidation[SQLiteDatabase]):
    """What consolidation and maintenance need beyond nodes, edges and entities."""

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        claimed = 0
        with self.db.tx() as c:
            for chunk in chunks(list(dict.fromkeys(ids)), 400):
                claimed += c.execute(
                    f"UPDATE nodes SET consolidated_at = ? WHERE +namespace = ? AND id IN"
                    f" ({qs(chunk)}) AND type = 'episodic' AND consolidated_at IS NULL",
                    [ts(now), namespace, *chunk],
                ).rowcount
        return claimed

    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]:
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT entity_id, embedding FROM entity_vectors WHERE namespace = ? AND model = ?",
                (namespace, model),
            ).fetchall()
        # another model's vectors may have another size (its caller checks it); a blob
        # that is no whole number of float32 values is damaged: skipped (resolving
        # entities embeds the name again)
        out = {eid: bytes(blob) for eid, blob in rows if blob and len(blob) % 4 == 0}
        if len(out) < len(rows):
            faults.damaged(self.db.path, "entity vectors", f"{len(rows) - len(out)} of {len(rows)}")
        return out

    def _take_lock(self, name: str, owner: str, now: Any, expires: Any, stale: Stale) -> bool:
        with self.db.tx() as c:  # the file's write lock: read, judge and take as one step
            row = c.execute(
                "SELECT owner, expires_at FROM locks WHERE name = ?", (name,)
            ).fetchone()
            held = row is not None and row[0] != owner and row[1] > now
            if held and not (stale is not None and stale(str(row[0]))):
                return False
            c.execute(
                "INSERT OR REPLACE INTO locks (name, owner, expires_at) VALUES (?, ?, ?)",
                (name, owner, expires),
            )
        return True
