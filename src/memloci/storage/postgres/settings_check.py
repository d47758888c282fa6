"""The PostgreSQL server's settings, checked for memloci's workload (layer: storage).

On open the store reads the few settings that decide its search latency and the
extensions its indexes use, and says — once per server and schema in a process, as a
``logging`` warning, and in ``memloci doctor`` — which ones are off, with the fix in
words. Nothing is changed on the server: a setting is the operator's to choose.

What is checked (thresholds: docs/backends.md, "Server settings"):

* ``shared_buffers`` below the size of memloci's search indexes (the HNSW graph and the
  full-text index): every search then reads index pages from the OS cache or the disk.
* ``effective_cache_size`` below that size: the planner takes the indexes for
  expensive to read and may scan instead.
* ``work_mem`` below 4 MB (PostgreSQL's default): ranking full-text candidates sorts
  and builds bitmaps in it.
* ``maintenance_work_mem`` below the HNSW graph: rebuilding it (``REINDEX``,
  ``PostgresStore.build_vector_index``) runs many times slower once the graph outgrows
  it.
* pgvector older than 0.8.0 (no iterative index scans: filtered vector searches can
  come back short), and the optional ``btree_gin`` / ``unaccent`` extensions missing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

MB = 2**20
MIN_WORK_MEM = 4 * MB  # PostgreSQL's default; the BM25 ranking's sorts fit in it
MIN_MAINTENANCE_WORK_MEM = 64 * MB  # PostgreSQL's default
MIN_SHARED_BUFFERS = 32 * MB  # below this even a small store's hot pages do not stay
VECTOR_VERSION = (0, 8, 0)  # iterative index scans (hnsw.iterative_scan)
EXTENSIONS = {
    "btree_gin": "one user's full-text search intersects everyone's rows holding a word",
    "unaccent": 'full text matches accents exactly ("cafe" does not find "Café")',
}
_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


@dataclass(frozen=True)
class ServerFacts:
    """What the check reads from the server (sizes in bytes)."""

    shared_buffers: int
    effective_cache_size: int
    work_mem: int
    maintenance_work_mem: int
    vector_version: str | None
    extensions: frozenset[str]
    vector_index: int  # the HNSW graph of this schema's memories
    search_indexes: int  # the HNSW graph and the full-text index together


def read_facts(c: Any) -> ServerFacts:
    """The settings and sizes, in one statement (``search_path`` names the schema)."""
    row = c.execute(
        "SELECT pg_size_bytes(current_setting('shared_buffers')),"
        " pg_size_bytes(current_setting('effective_cache_size')),"
        " pg_size_bytes(current_setting('work_mem')),"
        " pg_size_bytes(current_setting('maintenance_work_mem')),"
        " (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
        " ARRAY(SELECT extname::text FROM pg_extension),"
        " coalesce(pg_relation_size(to_regclass('nodes_embedding')), 0),"
        " coalesce(pg_relation_size(to_regclass('nodes_fts')), 0)"
    ).fetchone()
    return ServerFacts(
        shared_buffers=int(row[0]),
        effective_cache_size=int(row[1]),
        work_mem=int(row[2]),
        maintenance_work_mem=int(row[3]),
        vector_version=row[4],
        extensions=frozenset(row[5]),
        vector_index=int(row[6]),
        search_indexes=int(row[6]) + int(row[7]),
    )


def _size(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GB"
    return f"{n / MB:.0f} MB" if n >= MB else f"{n // 1024} kB"


def _ceil_mb(n: int) -> str:
    """A size to set, rounded up to a whole 64 MB (as PostgreSQL spells it)."""
    step = 64 * MB
    return f"{-(-n // step) * step // MB}MB"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def advice(f: ServerFacts) -> list[tuple[str, str]]:
    """``(setting, sentence)`` per setting that is off for memloci, each with its fix."""
    out: list[tuple[str, str]] = []
    hot = f.search_indexes
    if f.shared_buffers < max(MIN_SHARED_BUFFERS, hot):
        need = max(hot, 128 * MB)
        out.append(
            (
                "shared_buffers",
                f"shared_buffers is {_size(f.shared_buffers)}, "
                + (
                    f"below memloci's search indexes ({_size(hot)})"
                    if hot > f.shared_buffers
                    else "too small to keep even a small store's pages"
                )
                + ": searches read index pages from outside PostgreSQL's cache."
                f" Set it to {_ceil_mb(need)} or more (a quarter of the machine's RAM is usual):"
                f" ALTER SYSTEM SET shared_buffers = '{_ceil_mb(need)}', then restart the server",
            )
        )
    if f.effective_cache_size < max(hot + f.shared_buffers, 128 * MB):
        need = max(2 * (hot + f.shared_buffers), 512 * MB)
        out.append(
            (
                "effective_cache_size",
                f"effective_cache_size is {_size(f.effective_cache_size)}: the planner takes"
                " the vector and full-text indexes for costly to read and may scan tables"
                f" instead. Set it to about the memory the machine has for caching (at least"
                f" {_ceil_mb(need)}): ALTER SYSTEM SET effective_cache_size ="
                f" '{_ceil_mb(need)}'; SELECT pg_reload_conf()",
            )
        )
    if f.work_mem < MIN_WORK_MEM:
        out.append(
            (
                "work_mem",
                f"work_mem is {_size(f.work_mem)}: the full-text ranking sorts its candidates"
                " on disk. Set it to 4MB or more: ALTER SYSTEM SET work_mem = '4MB';"
                " SELECT pg_reload_conf()",
            )
        )
    if f.maintenance_work_mem < max(MIN_MAINTENANCE_WORK_MEM, f.vector_index):
        need = max(f.vector_index, MIN_MAINTENANCE_WORK_MEM)
        out.append(
            (
                "maintenance_work_mem",
                f"maintenance_work_mem is {_size(f.maintenance_work_mem)}, "
                + (
                    f"below the vector index ({_size(f.vector_index)})"
                    if f.vector_index > f.maintenance_work_mem
                    else "below PostgreSQL's default"
                )
                + ": rebuilding the vector index (REINDEX, a bulk load) and vacuuming it run"
                f" many times slower. Set it to {_ceil_mb(need)} or more:"
                f" ALTER SYSTEM SET maintenance_work_mem = '{_ceil_mb(need)}';"
                " SELECT pg_reload_conf()",
            )
        )
    if f.vector_version is not None and _version(f.vector_version) < VECTOR_VERSION:
        out.append(
            (
                "vector",
                f"pgvector is {f.vector_version}: without iterative index scans (0.8.0) a"
                " filtered vector search can return fewer memories than asked. Install"
                " pgvector 0.8 or later, then run ALTER EXTENSION vector UPDATE",
            )
        )
    for name, without in EXTENSIONS.items():
        if name not in f.extensions:
            out.append(
                (
                    name,
                    f"the {name} extension is not installed: {without}. A superuser (or the"
                    f" database's owner) runs CREATE EXTENSION {name} (docs/backends.md,"
                    ' "Server settings", says what else to run for a store made without it)',
                )
            )
    return out


def check_server(c: Any, where: str) -> list[str]:
    """Read the server's settings on ``c`` and log each piece of advice once per
    ``where`` (server and schema) in this process; returns all of it (for ``doctor``)."""
    found = advice(read_facts(c))
    with _lock:
        fresh = [text for name, text in found if (where, name) not in _warned]
        _warned.update((where, name) for name, _ in found)
    for line in fresh:
        log.warning("PostgreSQL at %s: %s", where, line)
    return [text for _, text in found]


def on_open(reading: Callable[[], contextlib.AbstractContextManager[Any]], where: str) -> list[str]:
    """:func:`check_server` on a connection from ``reading``; a check that cannot run
    (a server that refuses a read of its settings) is skipped, never failing the open."""
    try:
        with reading() as c:
            return check_server(c, where)
    except Exception as exc:  # advice only: the store works without it
        log.debug("server settings not checked at %s: %s", where, exc)
        return []
