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

import re

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
