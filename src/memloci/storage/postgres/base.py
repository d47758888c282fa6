"""PostgreSQL plumbing (layer: storage): connection pool, transactions, migrations,
metadata and embedder binding.

A ``psycopg_pool`` pool of autocommit connections. A write transaction
(:meth:`PostgresDatabase._tx`) takes one connection for its whole length and pins it to the
calling thread, so nested writes and reads made inside it join it and see its own writes.
Check-then-write units take a PostgreSQL advisory transaction lock
(:meth:`PostgresDatabase.exclusive`), where SQLite relies on its single writer. Every
psycopg error leaves as a :class:`~memloci.errors.StorageError` whose text never holds
the password of the URL.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from memloci.errors import MemlociError, StorageError, store_too_new
from memloci.storage import cancel
from memloci.storage.base import migration_scripts
from memloci.storage.location import redact_url
from memloci.storage.postgres.ranking import TermStats
from memloci.storage.postgres.settings_check import on_open
from memloci.storage.sql.core import SQLDatabase, columns, refuse_other_embedder
from memloci.storage.sql.dialect import POSTGRES

try:
    import psycopg
    import psycopg_pool
    from pgvector.psycopg import register_vector
except ImportError as exc:  # pragma: no cover - depends on the install
    raise StorageError(
        "the PostgreSQL backend needs psycopg 3, psycopg-pool and pgvector",
        hint="pip install 'memloci[postgres]'",
    ) from exc

# HNSW over cosine distance. Conversation memory repeats itself (short replies, the same
# sentence in many sessions): tight clusters of near-duplicate vectors that a sparse graph
# (pgvector's defaults m=16, ef_construction=64) connects badly, recall@10 ~0.6 at 100k
# turns; m=32, ef_construction=200 with ef_search=800 gives ~1.0 (docs/backends.md, Scale)
VECTOR_INDEX = (
    "CREATE INDEX IF NOT EXISTS nodes_embedding ON nodes"
    " USING hnsw (embedding vector_cosine_ops) WITH (m = 32, ef_construction = 200)"
)
EF_SEARCH = 800  # HNSW candidates per scan (400: recall 0.86-0.96 at 100k turns, 800: 1.0)
DEADLOCK_RETRIES = 3  # runs of a write the server may roll back to break a deadlock
log = logging.getLogger(__name__)
_T = TypeVar("_T")
_OPTIONAL_EXTENSIONS = (
    ("btree_gin", "the full-text index keys words only"),
    ("unaccent", "full text matches accents exactly"),
)
_LOCK_CLASS = 0x6D6C  # first key of memloci's two-key advisory locks ("ml")
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")  # unquoted-identifier form


def _split_url(url: str, schema: str | None) -> tuple[str, str | None]:
    """Take a ``schema=`` query parameter out of the URL (libpq does not know it)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    rest = [(k, v) for k, v in query if k != "schema"]
    found = [v for k, v in query if k == "schema"]
    if found and schema is None:
        schema = found[-1]
    return urlunsplit(parts._replace(query=urlencode(rest))), schema


def _f32(value: object) -> bytes:
    """A loaded pgvector value as float32 bytes."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32).tobytes()


class Deadlock(StorageError):
    """The server broke a deadlock by rolling this transaction back: nothing of it was
    written, and running it again is safe (see :meth:`PostgresDatabase._retrying`)."""


class PostgresDatabase(SQLDatabase):
    """Connections, transactions, migrations and store metadata on PostgreSQL."""

    dialect = POSTGRES
    cols = columns(POSTGRES)

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 8) -> None:
        self.url = redact_url(url)  # the only form ever shown
        self._secret_url, self.schema = _split_url(url, schema)
        if self.schema is not None and not _SCHEMA_NAME.match(self.schema):
            raise StorageError(
                f"bad schema name {self.schema!r}",
                hint="lower-case letters, digits and _ (at most 63)",
            )
        self._local = threading.local()
        self._closed = False
        self._dim: int | None = None
        self._terms = TermStats()  # full-text N and document frequencies (BM25)
        # no parallel workers for memloci's statements: each is small, and starting
        # workers costs more than it saves on a busy server (1M bench: p95 -5 ms)
        options = (
            f"-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={EF_SEARCH}"
            " -c max_parallel_workers_per_gather=0"
        )
        if self.schema is not None:
            options += f" -c search_path={self.schema},public"
        self._kwargs: dict[str, Any] = {"options": options, "connect_timeout": 15}
        with self.errors("cannot open"):
            self._bootstrap()
            self._pool = psycopg_pool.ConnectionPool(
                self._secret_url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True, **self._kwargs},
                configure=self._configure,
                open=True,
                name="memloci",
                timeout=30,
            )
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise
        dim = self.get_meta("dimension")
        if dim:
            self._dim = int(dim)
        self.server_advice = on_open(self.reading, f"{self.url} (schema {self.schema or 'public'})")

    # ------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def errors(self, doing: str = "database error") -> Iterator[None]:
        try:
            yield
        except MemlociError:
            raise
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            text = redact_url(str(exc).strip()).replace(self._secret_url, self.url)
            down = isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout)
            if down and hasattr(self, "_pool"):
                # the server restarted or dropped connections: the pool's idle ones are
                # dead too; replace them now, so only this call fails, not one per each
                with contextlib.suppress(Exception):
                    self._pool.check()
            if isinstance(exc, psycopg.errors.DeadlockDetected):
                raise Deadlock(f"{doing} ({self.url}): {text}") from None
            raise StorageError(
                f"{doing} ({self.url}): {text}",
                hint="check that the PostgreSQL server is up and the URL is right"
                if down
                else None,
            ) from None

    def _bootstrap(self) -> None:
        """Create the schema and the pgvector extension when missing (under a lock)."""
        conn = psycopg.connect(self._secret_url, autocommit=True, **self._kwargs)
        with conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_CLASS,))
            if (
                self.schema is not None
                and not conn.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                ).fetchone()
            ):
                # only when missing: CREATE SCHEMA IF NOT EXISTS needs CREATE on the
                # database even when the schema exists (an administrator's, say)
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            has = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            if has.fetchone() is None:
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                except psycopg.Error as exc:
                    raise StorageError(
                        f"the pgvector extension is missing in {self.url}: {redact_url(str(exc))}",
                        hint="run `CREATE EXTENSION vector` as a superuser first",
                    ) from None
            # optional, both trusted extensions; a role without CREATE on the database
            # still runs without them: btree_gin gives text a GIN operator class, so the
            # full-text index keys each row's owner too (migration 0007; else only slower
            # on big tables); unaccent folds accents in full text (migration 0012; else
            # "cafe" does not find "Café")
            for name, without in _OPTIONAL_EXTENSIONS:
                has = conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,))
                if has.fetchone() is not None:
                    continue
                try:
                    with conn.transaction():
                        conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
                except psycopg.Error as exc:
                    log.info("%s not available (%s): %s", name, redact_url(str(exc)), without)

    def _configure(self, conn: Any) -> None:
        register_vector(conn)

    def _open_transaction(self) -> Any:
        """The connection of this thread's open transaction (None: there is none)."""
        if self._closed:
            raise StorageError("the store is closed")
        return getattr(self._local, "conn", None)

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        """A write transaction on one connection (nested calls join the open one)."""
        conn = self._open_transaction()
        if conn is not None:
            yield conn
            return
        cancel.writing()  # its async caller was cancelled: no new transaction
        with self.errors(), self._pool.connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                yield conn
                cancel.committing()  # or roll back
            finally:
                self._local.conn = None

    def retrying(self, work: Callable[[Any], _T]) -> _T:
        """``work(c)`` in a write transaction, run again (up to :data:`DEADLOCK_RETRIES`
        times) when the server broke a deadlock by rolling it back — a turn's insert
        updates its predecessors' rows while the worker updates a batch of them. Inside
        an open transaction (``batch()``) a deadlock aborts it all and is raised."""
        for attempt in range(DEADLOCK_RETRIES):
            nested = getattr(self._local, "conn", None) is not None
            try:
                with self.tx() as c:
                    return work(c)
            except Deadlock:
                if nested or attempt == DEADLOCK_RETRIES - 1:
                    raise
                log.info("deadlock broken by the server; running the write again")
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A connection for reads: the thread's open transaction, or a pooled one."""
        conn = self._open_transaction()
        if conn is not None:
            yield conn
            return
        with self.errors(), self._pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Run several writes as one transaction: all of them land, or none. Reads made
        inside by the same thread see its own writes."""
        with self.tx():
            yield

    @contextlib.contextmanager
    def exclusive(self, key: str) -> Iterator[None]:
        """A check-then-write unit (see :meth:`Store.exclusive`): a transaction holding
        an advisory lock on ``key`` (per schema) until it commits or rolls back."""
        with self.tx() as c:
            c.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                (_LOCK_CLASS, f"{self.schema or ''}:{key}"),
            )
            yield

    def xlock(self, c: Any, key: str) -> None:
        """Take an advisory lock on ``key`` in the open transaction ``c``."""
        c.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            (_LOCK_CLASS, f"{self.schema or ''}:{key}"),
        )

    def _migrate(self) -> None:
        """Bring the schema up to date; a schema newer than this memloci knows (a newer
        memloci wrote it) is refused before anything is written."""
        scripts = migration_scripts("postgres")
        latest = max((n for n, _ in scripts), default=0)
        with self.tx() as c:
            # one migrator per schema at a time, across processes
            self.xlock(c, "migrate")
            c.execute("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)")
            row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > latest:
                where = f"schema {self.schema or 'public'!r} at {self.url}"
                raise store_too_new(where, current, latest)
            for number, script in scripts:
                if number <= current:
                    continue
                c.execute(script)
                self.put_meta(c, "schema_version", str(number))

    def schema_version(self) -> int:
        return int(self.get_meta("schema_version") or 0)

    @staticmethod
    def vector_bytes(value: object) -> bytes:
        return _f32(value)

    @staticmethod
    def size_bytes(c: Any) -> int:
        size = c.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace s ON s.oid = c.relnamespace"
            " WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()[0]
        return int(size)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._pool.close()

    # ------------------------------------------------------------------ meta
    def bind_embedder(self, model_id: str, dimension: int) -> None:
        """Record the embedding model; refuse a different one (re-embed to switch). The
        first binding types the vector column ``vector(dimension)`` and builds its HNSW
        cosine index."""
        with self.tx() as c:
            self.xlock(c, "embedder")
            rows = dict(
                c.execute(
                    "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'dimension')"
                ).fetchall()
            )
            refuse_other_embedder(rows, model_id, dimension)
            known = rows.get("embedding_model")
            if known is None:
                dim = int(dimension)
                c.execute(f"ALTER TABLE nodes ALTER COLUMN embedding TYPE vector({dim})")
                # inline in the row (see migration 0003): a retyped column takes the type's
                # default storage again
                c.execute("ALTER TABLE nodes ALTER COLUMN embedding SET STORAGE MAIN")
                c.execute(VECTOR_INDEX)
            self.put_meta(c, "embedding_model", model_id)
            self.put_meta(c, "dimension", str(dimension))
        self._dim = dimension

    @contextlib.contextmanager
    def bulk_load(self, *, work_mem: str = "1GB") -> Iterator[None]:
        """Load many vectors with the HNSW index set aside, then build it once.

        Inserting into an HNSW graph row by row costs ~10x a build over the finished
        table, so a bulk copy (``memloci migrate``, the scale bench) drops the index
        first and builds it on exit (``maintenance_work_mem`` = ``work_mem``, also on
        error: the index always comes back), then refreshes the planner statistics,
        merges the full-text index's pending list and vacuums ``node_bits`` (the 1-bit
        codes one user's vector search reads).
        Meanwhile vector searches stay correct (exact scans) but slow, and the build
        blocks writes of other processes to ``nodes`` while it runs: for offline loads,
        not for a serving database.
        """
        with self.tx() as c:
            self.xlock(c, "embedder")
            c.execute("DROP INDEX IF EXISTS nodes_embedding")
        try:
            yield
        finally:
            self.build_vector_index(work_mem=work_mem)

    def build_vector_index(self, *, work_mem: str = "1GB") -> None:
        """(Re)build the HNSW index of a bound store when it is missing."""
        if not re.fullmatch(r"[0-9]+ ?[kMG]B", work_mem):
            raise StorageError(f"bad work_mem {work_mem!r}", hint="e.g. '512MB' or '2GB'")
        with self.tx() as c:
            self.xlock(c, "embedder")
            if c.execute("SELECT 1 FROM meta WHERE key = 'dimension'").fetchone() is None:
                return  # no embedder bound: the column is untyped, nothing to index
            c.execute(f"SET LOCAL maintenance_work_mem = '{work_mem}'")
            c.execute(VECTOR_INDEX)
        with self.reading() as c:  # fresh planner statistics for the loaded rows
            c.execute("ANALYZE nodes")
            # merge the full-text index's pending list: every search would scan it
            c.execute("SELECT gin_clean_pending_list('nodes_fts'::regclass)")
            if getattr(self._local, "conn", None) is None:  # VACUUM needs autocommit
                # marks the 1-bit codes' pages all-visible: a user's vector search reads
                # them from the indexes alone (autovacuum does it later otherwise)
                c.execute("VACUUM (ANALYZE) node_bits")

    def drop_vectors(self, c: Any, rowids: Sequence[int]) -> None:
        """Vectors live in their rows: they go with them."""

    def unbind_vectors(self, c: Any) -> None:
        c.execute("DROP INDEX IF EXISTS nodes_embedding")
        c.execute("UPDATE nodes SET embedding = NULL WHERE embedding IS NOT NULL")
        c.execute("ALTER TABLE nodes ALTER COLUMN embedding TYPE vector")
        c.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'dimension')")

    def bump(self, c: Any, key: str) -> int:
        row = c.execute(
            "INSERT INTO meta (key, value) VALUES (%s, '1') ON CONFLICT (key)"
            " DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value",
            (key,),
        ).fetchone()
        return int(row[0])


def chunks(values: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]
