"""Keys of :meth:`Store.exclusive` for check-then-writes of records (layer: storage).

SQLite serialises every write transaction through its one writer, so a read-decide-write
inside ``batch()`` is atomic there; PostgreSQL runs transactions side by side, and two
servers reading the same user or entity would both write back what they read. These keys
name the advisory locks that serialise them across processes and servers. Taken in this
order when a transaction needs several: ``import`` (one import at a time per store),
``facts:`` (see :func:`memloci.consolidation.dedupe.fact_lock`), then users, then
entities.
"""

from __future__ import annotations


def users_lock(namespace: str) -> str:
    """The lock of a namespace's memory users: save, contact, merge, forget, import."""
    return f"users:{namespace}"


def entities_lock(namespace: str) -> str:
    """The lock of a namespace's entities: resolve a name (find, else create), count a
    mention, write a summary."""
    return f"entities:{namespace}"
