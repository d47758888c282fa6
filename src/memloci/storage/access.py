"""A memory's reads as the SQL backends keep them (layer: storage).

A search counts an access on each hit and reinforces its confidence
(:func:`memloci.rules.reinforced`). Those writes go to the narrow ``node_access`` table,
not to the wide ``nodes`` row (text, full-text vector, inline vector…): rewriting that row
on each hit cost a new row version and, off its page, an entry in every index. A memory's
``node_access`` row, once it has one, wins over the columns of the same name in
``nodes``, which keep the values it was written or last edited with.
"""

from __future__ import annotations

# a memory's reads: kept in the narrow ``node_access`` table, whose row (when the memory
# has been read) wins over the columns of the same name in ``nodes``
ACCESS_COLUMNS = ("access_count", "last_accessed", "confidence")


def live(column: str, alias: str = "n") -> str:
    """The SQL value of a memory's ``column`` as readers see it: for the
    :data:`ACCESS_COLUMNS`, ``node_access``'s when the memory has a row there."""
    if column not in ACCESS_COLUMNS:
        return f"{alias}.{column}"
    return (
        f"coalesce((SELECT na.{column} FROM node_access na WHERE na.node_id = {alias}.id),"
        f" {alias}.{column})"
    )
