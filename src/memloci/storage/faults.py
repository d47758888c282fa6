"""Database failures as memloci errors, and damaged rows reported once (layer: storage).

A database driver's own error (SQLite's ``OperationalError: database or disk is full``,
``DatabaseError: database disk image is malformed``, psycopg's errors) must never reach
a caller: :func:`storage_error` turns it into a :class:`~memloci.errors.StorageError`
with a hint saying what to do (:class:`~memloci.errors.StorageFullError` for a full
disk). A single damaged row (a vector blob of the wrong size, metadata that is not
JSON) must not fail every query that reads it: readers skip or blank the damaged part
and call :func:`damaged`, which logs one warning per kind and store naming
``memloci doctor`` (it finds and repairs such rows).
"""

from __future__ import annotations

import logging
import threading

from memloci.errors import StorageError, StorageFullError

log = logging.getLogger("memloci.storage")

DOCTOR_HINT = "run `memloci doctor --db STORE` to find damaged rows, `--repair` to fix them"
DAMAGED_HINT = (
    "the store file is damaged: run `memloci doctor --db STORE` (it rebuilds the "
    "full-text index and repairs damaged rows); if the file itself is damaged, restore "
    "it from a backup (`memloci memory import BACKUP.jsonl --db NEW.db`) or let "
    "`sqlite3 FILE .recover` save what it can"
)
FULL_HINT = (
    "free disk space where the store lives (or raise its size limit), then retry; "
    "nothing of this write was stored and reads still work"
)
_IO_HINT = "check the disk and the store's folder (permissions, free space, a removed drive)"
_READ_ONLY_HINT = "the store file or its folder is read-only: check its permissions"
_BUSY_HINT = "another process held the database lock too long: retry when it is done"
_OTHER_HINT = "check the store (--db, MEMLOCI_PATH); MEMLOCI_DEBUG=1 shows the traceback"

# what a SQLite message says about the database (not about the statement that failed)
_FULL = ("database or disk is full", "disk is full", "no space left")
_DAMAGED = ("malformed", "corrupt", "not a database")
_IO = ("disk i/o error", "unable to open database")
_READ_ONLY = ("readonly database", "read-only")
_BUSY = ("database is locked", "database is busy")


def driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a database driver's error: a DB-API ``DatabaseError``
    (sqlite3, pysqlite3 and psycopg all name their base class so)."""
    return any(cls.__name__ == "DatabaseError" for cls in type(exc).__mro__)


def about_the_database(exc: BaseException) -> bool:
    """Whether a driver error is about the database itself (full, damaged, I/O,
    read-only, locked), not about one statement (a full-text query's syntax, a missing
    table a caller checks for): those are always mapped; the others are left to the
    code that runs the statement, which may expect them."""
    text = str(exc).lower()
    return any(word in text for word in (*_FULL, *_DAMAGED, *_IO, *_READ_ONLY, *_BUSY))


def storage_error(exc: BaseException) -> StorageError:
    """The :class:`StorageError` (with a hint) for a driver error ``exc``."""
    text = str(exc).strip() or type(exc).__name__
    low = text.lower()
    if any(word in low for word in _FULL):
        return StorageFullError(
            f"the disk (or the database's size limit) is full: {text}", hint=FULL_HINT
        )
    if any(word in low for word in _DAMAGED):
        return StorageError(f"the store is damaged: {text}", hint=DAMAGED_HINT)
    for words, hint in ((_IO, _IO_HINT), (_READ_ONLY, _READ_ONLY_HINT), (_BUSY, _BUSY_HINT)):
        if any(word in low for word in words):
            return StorageError(f"database error: {text}", hint=hint)
    return StorageError(f"database error: {text}", hint=_OTHER_HINT)


_reported: set[tuple[str, str]] = set()
_reported_lock = threading.Lock()


def damaged(store: str, kind: str, detail: str) -> None:
    """Report a damaged row that a read skipped (or read as empty): one warning per
    ``kind`` and ``store`` in this process, naming ``memloci doctor``."""
    with _reported_lock:
        if (store, kind) in _reported:
            return
        _reported.add((store, kind))
    log.warning(
        "damaged %s in %s skipped (%s); later ones are skipped without a warning; %s",
        kind,
        store,
        detail,
        DOCTOR_HINT,
    )
