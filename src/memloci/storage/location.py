"""Where a store lives (layer: storage): a SQLite file path or a database URL.

One rule everywhere a store is chosen (``Memory(...)``, ``--db``, ``MEMLOCI_PATH``, a
role file's ``store_path``): a location with a ``scheme://`` is a database URL
(``postgresql://`` or ``postgres://``), anything else is a SQLite file (or
``:memory:``). SQLite-only handling (``~`` expansion, relative paths, parent folders)
never touches a URL.

Credentials never leave this process in text: :func:`redact_url` masks the password of
every URL (and every ``password=…`` pair) in a string, and every error and log line that
names a location goes through it.
"""

from __future__ import annotations

import os
import re

from memloci.errors import StorageError

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# scheme://user:password@  — the password is anything up to the last '@' before the host
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*):[^@\s]*@")
# libpq key/value and URL query forms: password=secret, ?password=secret&…
_PASSWORD_KV = re.compile(r"(?P<key>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;]+)", re.I)


def url_scheme(location: str) -> str | None:
    """The scheme of a database URL (lower case), None for a file path."""
    match = _SCHEME.match(location.strip())
    return match.group(1).lower() if match else None


def is_database_url(location: str) -> bool:
    """True for ``scheme://…`` locations (database servers), False for SQLite files."""
    return url_scheme(location) is not None


def is_postgres_url(location: str) -> bool:
    scheme = url_scheme(location)
    return scheme is not None and scheme.split("+")[0] in POSTGRES_SCHEMES


def redact_url(text: str) -> str:
    """``text`` with every URL password (and ``password=…`` pair) replaced by ``***``.

    ``postgresql://user:pw@host/db`` → ``postgresql://user:***@host/db``. Safe on any
    string (an error message, a file path, a log line); text without secrets is
    returned unchanged.
    """
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
    return _PASSWORD_KV.sub(lambda m: f"{m.group('key')}***", text)


def describe(location: str) -> str:
    """The location as it may be shown to a person: a redacted URL or the path."""
    return redact_url(location)


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
