"""Damaged rows reported once (layer: storage), and the driver-error mapping.

A database driver's own error must never reach a caller:
:func:`~memloci.errors.storage_error` (in :mod:`memloci.errors`, so that the interfaces
map an escaped one without loading storage; importable from here too) turns it into a
:class:`~memloci.errors.StorageError` with a hint. A single damaged row (a vector blob
of the wrong size, metadata that is not JSON) must not fail every query that reads it:
readers skip or blank the damaged part and call :func:`damaged`, which logs one warning
per kind and store naming ``memloci doctor`` (it finds and repairs such rows).
"""

from __future__ import annotations

import logging
import threading

from memloci.errors import DAMAGED_HINT as DAMAGED_HINT
from memloci.errors import FULL_HINT as FULL_HINT
from memloci.errors import about_the_database as about_the_database
from memloci.errors import driver_error as driver_error
from memloci.errors import storage_error as storage_error

log = logging.getLogger("memloci.storage")

DOCTOR_HINT = "run `memloci doctor --db STORE` to find damaged rows, `--repair` to fix them"

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
