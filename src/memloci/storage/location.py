"""A SQLite store's file (layer: storage): whether this process may write it, and a
new file only its owner may read.

What a location *is* (a file path or a database URL) and how it is shown with its
password masked is :mod:`memloci.config`'s (:func:`~memloci.config.is_database_url`,
:func:`~memloci.config.describe`, :func:`~memloci.config.redact_url`): the interfaces
read it there without loading storage. Those names stay importable from here for the
backends.
"""

from __future__ import annotations

import os

from memloci.config import POSTGRES_SCHEMES as POSTGRES_SCHEMES
from memloci.config import describe as describe
from memloci.config import is_database_url as is_database_url
from memloci.config import is_postgres_url as is_postgres_url
from memloci.config import redact_url as redact_url
from memloci.config import url_scheme as url_scheme
from memloci.errors import StorageError

WRITABLE_HINT = (
    "to read it, open it read-only (--read-only, Memory(path, read_only=True) or "
    "MEMLOCI_READ_ONLY=1); to write, give a path in a folder you may write to (--db, "
    "MEMLOCI_PATH or Memory(path)), or change the permissions"
)


def check_writable(path: str) -> None:
    """Raise a :class:`StorageError` that says why when ``path`` cannot be a store file
    this process writes: a missing folder, a folder given as the file, or a file or
    folder it may not write (SQLite writes the store and its ``-wal`` / ``-shm`` files
    beside it, so even reading a store needs its folder writable). SQLite's own word for
    each is "unable to open database file" or "attempt to write a readonly database"."""
    full = os.path.abspath(path)
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        if os.path.exists(parent):
            raise StorageError(
                f"{parent!r} is a file, not a folder",
                hint="give a file path (--db, MEMLOCI_PATH or Memory(path))",
            )
        raise StorageError(f"folder {parent!r} does not exist", hint="create it first")
    if os.path.isdir(full):
        raise StorageError(
            f"{path!r} is a folder, not a store file",
            hint=f"give a file in it, e.g. {os.path.join(path, 'memloci.db')!r}",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        doing = "open" if os.path.exists(full) else "create"
        raise StorageError(
            f"cannot {doing} the store {path!r}: folder {parent!r} is not writable "
            "(SQLite writes its -wal and -shm files beside the store, even to read it)",
            hint=WRITABLE_HINT,
        )
    if os.path.exists(full) and not os.access(full, os.R_OK | os.W_OK):
        raise StorageError(
            f"cannot write the store {path!r}: permission denied", hint=WRITABLE_HINT
        )


def create_private(path: str) -> None:
    """Create a new store file that only its owner may read or write (0600): a store
    holds what people said. SQLite gives the ``-wal`` and ``-shm`` files the store's
    mode. An existing file keeps its own."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
