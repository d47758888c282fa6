"""SQLite backend (layer: storage): one file, WAL, FTS5 and float32 vectors."""

from memloci.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
