"""Errors (layer: models). One root, a few subclasses, one map to HTTP / exit codes.

    MemlociError
    ├── ValidationError        bad input from the caller            (400, exit 2)
    ├── NotFoundError          unknown id / key                     (404, exit 3)
    ├── ConflictError          duplicate or state conflict          (409, exit 4)
    ├── PermissionDeniedError  namespace not allowed                (403, exit 5)
    │   └── UnauthorizedError  missing or invalid API key           (401, exit 5)
    ├── EmbeddingModelError    store built with another embedder    (409, exit 6)
    ├── ProviderError          embedder / LLM failed or unreachable (502, exit 7)
    ├── StorageError           database problem                     (500, exit 8)
    │   ├── StorageFullError   the disk (or the database's size limit) is full (507)
    │   ├── StoreTooNewError   the store was written by a newer memloci
    │   └── ReadOnlyError      a write to a store opened read-only      (403)
    └── MissingExtraError      an optional part is not installed    (501, exit 9)

Every error carries a stable ``code``, a user-safe ``message`` and an optional
``hint`` telling the user what to do next.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from memloci._version import __version__

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` (they cannot be encoded,
    so an error message echoing bad input could not be printed or sent)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class MemlociError(Exception):
    """Root of every error memloci raises on purpose."""

    code: ClassVar[str] = "memloci_error"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, hint: str | None = None, **details: Any) -> None:
        message = printable(message)
        super().__init__(message)
        self.message = message
        self.hint = printable(hint) if hint else hint
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The one JSON error shape used by every interface."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class ValidationError(MemlociError):
    """The caller's input is invalid; nothing was written."""

    code = "invalid_input"
    http_status = 400
    exit_code = 2


class NotFoundError(MemlociError):
    """No memory (or user, entity, …) with that id or key in the namespace."""

    code = "not_found"
    http_status = 404
    exit_code = 3


class ConflictError(MemlociError):
    """The write conflicts with the current state."""

    code = "conflict"
    http_status = 409
    exit_code = 4


class PermissionDeniedError(MemlociError):
    """The caller may not read or write that namespace."""

    code = "forbidden"
    http_status = 403
    exit_code = 5


class UnauthorizedError(PermissionDeniedError):
    """No API key, or one that is unknown or revoked, where the server requires one."""

    code = "unauthorized"
    http_status = 401


class EmbeddingModelError(MemlociError):
    """The store's vectors come from a different embedding model or dimension."""

    code = "embedding_model_mismatch"
    http_status = 409
    exit_code = 6


class ProviderError(MemlociError):
    """An embedding or LLM provider failed or could not be reached."""

    code = "provider_error"
    http_status = 502
    exit_code = 7


class StorageError(MemlociError):
    """The database failed (corrupt file, locked too long, disk full, …)."""

    code = "storage_error"
    http_status = 500
    exit_code = 8


class StorageFullError(StorageError):
    """The disk (or the database's size limit) is full: the write was not stored (its
    transaction rolled back); reads still work. Free space, then retry."""

    code = "storage_full"
    http_status = 507


class StoreTooNewError(StorageError):
    """The store's schema is newer than this memloci knows: a newer memloci wrote it.
    Nothing is written to it (an older version could corrupt what it does not know);
    the hint says to upgrade."""

    code = "store_too_new"


class ReadOnlyError(StorageError):
    """A write to a store opened read-only (``Memory(path, read_only=True)``,
    ``--read-only``, ``MEMLOCI_READ_ONLY=1``): refused before anything is attempted."""

    code = "read_only"
    http_status = 403


def read_only(where: str) -> ReadOnlyError:
    """The error for a write to the read-only store ``where``."""
    return ReadOnlyError(
        f"{where} is open read-only: nothing was written",
        hint="open it without read_only=True / --read-only / MEMLOCI_READ_ONLY to change it",
    )


def store_too_new(where: str, found: int, known: int) -> StoreTooNewError:
    """The error for a store at schema ``found`` opened by a memloci that knows up to
    ``known``."""
    return StoreTooNewError(
        f"{where} was written by a newer memloci (schema version {found}; memloci "
        f"{__version__} knows up to {known}); nothing was written to it",
        hint="upgrade memloci (pip install -U memloci) to open this store",
        schema_version=found,
        supported=known,
    )


class MissingExtraError(MemlociError):
    """An optional part (server, postgres, an integration) is used but its extra is not
    installed; the message names the ``pip install 'memloci[EXTRA]'`` that adds it."""

    code = "missing_extra"
    http_status = 501
    exit_code = 9


__all__ = [
    "ConflictError",
    "EmbeddingModelError",
    "MemlociError",
    "MissingExtraError",
    "NotFoundError",
    "PermissionDeniedError",
    "ProviderError",
    "ReadOnlyError",
    "StorageError",
    "StorageFullError",
    "StoreTooNewError",
    "UnauthorizedError",
    "ValidationError",
]


# A database driver's own error (SQLite's ``OperationalError: database or disk is full``,
# ``DatabaseError: database disk image is malformed``, psycopg's errors) must never reach
# a caller: :func:`storage_error` turns it into a :class:`StorageError` with a hint saying
# what to do (:class:`StorageFullError` for a full disk). It lives here, beside the error
# tree, so that an interface maps an escaped driver error without loading storage.

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
