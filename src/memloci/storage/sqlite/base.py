"""SQLite plumbing (layer: storage): connections, migrations, metadata, embedder binding.

One serialised writer connection (a lock around ``BEGIN IMMEDIATE`` … ``COMMIT``)
and one reader connection per thread, all in WAL mode. Needs a SQLite binding
that can load extensions: ``pysqlite3-binary`` (the stdlib module of many
Python builds cannot).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from memloci.errors import NotFoundError, StorageError, ValidationError, read_only, store_too_new
from memloci.storage import cancel, faults
from memloci.storage.base import migration_scripts
from memloci.storage.location import check_writable, create_private
from memloci.storage.sql.core import SQLDatabase, columns, refuse_other_embedder
from memloci.storage.sql.dialect import SQLITE
from memloci.storage.sqlite import fts_totals
from memloci.storage.sqlite.checkpoint import WAL_BOUND, Checkpointer
from memloci.storage.sqlite.vecindex import VectorIndex

try:  # pragma: no cover - depends on the platform
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3

DRIVER = "pysqlite3" if sqlite3.__name__.startswith("pysqlite3") else "sqlite3"
IntegrityError = sqlite3.IntegrityError
OperationalError = sqlite3.OperationalError
DatabaseError = sqlite3.DatabaseError


def mapped(exc: BaseException) -> BaseException:
    """What a failure inside a read or write becomes: a driver error about the database
    itself (full, damaged, I/O, read-only, locked; or any ``DatabaseError`` that is not
    an ``OperationalError``) is a :class:`StorageError` with a hint; anything else (a
    statement's own error its caller expects, a constraint, a memloci error) is itself."""
    database = isinstance(exc, DatabaseError) and not isinstance(exc, IntegrityError)
    own = isinstance(exc, OperationalError) and not faults.about_the_database(exc)
    return faults.storage_error(exc) if database and not own else exc


BUSY_TIMEOUT = 30.0  # seconds a write waits for another process's write lock (default)
CLOSE_WAIT = 10.0  # seconds close() waits for reads running in other threads


def _connect(path: str, busy_timeout: float = 30.0, *, ro: str = "") -> Any:
    """A connection to ``path``; ``ro`` opens it read-only: ``"ro"`` (``mode=ro``: SQLite
    refuses every write) or ``"immutable"`` (as well: the file cannot change, for a store
    in a folder this process may not write, where SQLite could not make its -shm file)."""
    target, uri = path, False
    if ro:
        query = "mode=ro&immutable=1" if ro == "immutable" else "mode=ro"
        target, uri = f"{Path(os.path.abspath(path)).as_uri()}?{query}", True
    try:
        conn = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=busy_timeout, uri=uri
        )
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open database {path!r}: {exc}") from exc
    try:
        _prepare(conn, busy_timeout)
    except sqlite3.DatabaseError as exc:  # the first read of the file: is it SQLite?
        conn.close()
        if "not a database" in str(exc):
            raise StorageError(
                f"{path!r} is not a memloci store: it is not a SQLite database",
                hint=NOT_A_STORE_HINT,
            ) from None
        raise StorageError(f"cannot open database {path!r}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


NOT_A_STORE_HINT = (
    "check the path (--db, MEMLOCI_PATH or Memory(path)): give a memloci store, or a new "
    "file to create one"
)


def schema_in(conn: Any) -> int:
    """The schema version a file holds (0: none, a new file or not memloci's)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0
    except (OperationalError, ValueError):  # no meta table (a new file), or not ours
        return 0


def refuse_foreign(conn: Any, path: str) -> None:
    """A file without a schema version is a new store only when it is empty: refuse to
    add memloci's tables to another application's database (or to write to it at all)."""
    if schema_in(conn):
        return
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite%' ORDER BY name"
    ).fetchall()
    if rows:
        names = [str(r[0]) for r in rows]
        shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
        raise StorageError(
            f"{path!r} is not a memloci store: it is a SQLite database of something else "
            f"(it holds {shown}); memloci adds nothing to it",
            hint=NOT_A_STORE_HINT,
        )


def _prepare(conn: Any, busy_timeout: float) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    # deleted rows and freed pages are overwritten with zeros (forgotten text leaves the file)
    conn.execute("PRAGMA secure_delete = ON")
    if not hasattr(conn, "enable_load_extension"):
        raise StorageError(
            "this Python's sqlite3 module cannot load extensions (sqlite-vec)",
            hint="pip install pysqlite3-binary",
        )
    import sqlite_vec

    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    # per-connection (temp) view of the full-text index's terms: document counts for
    # SQLiteSearch.match_weight (memloci.storage.sqlite.terms)
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nodes_fts_vocab"
        " USING fts5vocab(main, nodes_fts, 'row')"
    )


def scratch_connection() -> Any:
    """A private in-memory database on the same SQLite library (FTS5, its tokenizers)."""
    return sqlite3.connect(":memory:", check_same_thread=False)


def _split_sql(script: str) -> list[str]:
    statements, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            code = "\n".join(x for x in buf.splitlines() if not x.lstrip().startswith("--"))
            if code.strip():
                statements.append(code.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


class _Reader:
    """One thread's reader connection: closed when the thread ends (its thread-local
    holder goes), so a server that starts a thread per request keeps no connection of
    a finished one."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        weakref.finalize(self, _close_quietly, conn)


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


class SQLiteDatabase(SQLDatabase):
    """Connections, transactions, migrations and store metadata."""

    dialect = SQLITE
    cols = columns(SQLITE)

    def __init__(
        self,
        path: str | os.PathLike[str] = "memloci.db",
        *,
        busy_timeout: float | None = None,
        read_only: bool = False,
    ) -> None:
        """``busy_timeout``: seconds a write waits for another process's write lock
        (default :data:`BUSY_TIMEOUT`). ``read_only``: open an existing store for reads
        only (see :meth:`_open_read_only`); every write is a ReadOnlyError, refused before
        any statement runs."""
        self.path = str(path)
        self._busy_timeout = float(BUSY_TIMEOUT if busy_timeout is None else busy_timeout)
        self._memory = self.path == ":memory:" or self.path.startswith("file::memory")
        self.read_only = read_only
        self._ro = ""
        if read_only:
            self._open_read_only()
        elif not self._memory:
            check_writable(self.path)
            create_private(self.path)
        self._wlock = threading.RLock()
        self._depth = 0  # open write transactions of the thread holding _wlock
        self._tx_thread: int | None = None  # the thread inside the open write transaction
        self._index_in_tx = False  # the vector cache read this transaction's own rows
        self._index_lock = threading.Lock()
        self._writer = _connect(self.path, self._busy_timeout, ro=self._ro)
        try:  # before WAL mode (kept in the file): another application's file stays as it is
            refuse_foreign(self._writer, self.path)
            if read_only and not schema_in(self._writer):
                raise StorageError(
                    f"{self.path!r} is an empty file, not a memloci store: nothing to read",
                    hint=NOT_A_STORE_HINT,
                )
        except BaseException:
            self._writer.close()
            raise
        self._checkpoints: Checkpointer | None = None
        if not read_only:
            self._writer.execute("PRAGMA journal_mode = WAL")
            self._writer.execute("PRAGMA synchronous = NORMAL")
        if not self._memory and not read_only:  # checkpoints run on a thread
            self._writer.execute(f"PRAGMA wal_autocheckpoint = {WAL_BOUND}")
            self._checkpoints = Checkpointer(lambda: _connect(self.path, self._busy_timeout))
        self._local = threading.local()
        # each thread's reader connection, held by its thread-local ``_Reader`` (closed
        # when the thread ends) and listed here so close() closes those still open;
        # registered under a lock of its own: a thread holding the index lock opens its
        # first reader while another holds the write lock and waits for the index lock
        self._readers: weakref.WeakSet[_Reader] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        self._closed = False
        # the newest schema this memloci knows; set once the file is checked: from then
        # on every write transaction re-checks the file's version (a newer memloci may
        # migrate it while this one has it open)
        self._schema_known: int | None = None
        self._active_reads = 0  # reads running on per-thread connections (see close)
        self._reads_done = threading.Condition()
        self._index: VectorIndex | None = None
        self._index_seq = 0
        self._index_epoch = ""
        self._dim: int | None = None
        self._scrub_pending = False  # a hard delete happened since the last scrub (close() scrubs)
        self._commits = 0  # write transactions since the index's row count was set
        self._totals_due = fts_totals.EVERY[0]  # and how many until it is set again
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise
        dim = self.get_meta("dimension")
        if dim:
            self._dim = int(dim)

    def _open_read_only(self) -> None:
        """Check a store opened read-only exists, and choose how SQLite opens it:
        ``mode=ro``, or also ``immutable`` when its folder cannot take the ``-shm`` file
        SQLite needs to read a WAL store (a read-only folder, a backup mount)."""
        if self._memory:
            raise StorageError(
                "a new in-memory store cannot be opened read-only: it would be empty",
                hint="give the path of an existing store file",
            )
        if not os.path.isfile(self.path):
            raise NotFoundError(
                f"no memory store at {self.path!r} to open read-only",
                hint="check the path (--db, MEMLOCI_PATH or Memory(path))",
            )
        folder = os.path.dirname(os.path.abspath(self.path))
        shm = f"{self.path}-shm"
        writable = os.access(folder, os.W_OK | os.X_OK) or (
            os.path.exists(shm) and os.access(shm, os.R_OK | os.W_OK)
        )
        self._ro = "ro" if writable else "immutable"

    # ------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        if self._closed:
            raise StorageError("the store is closed")
        if self.read_only:
            raise read_only(repr(self.path))
        cancel.writing()  # its async caller was cancelled: no new transaction
        with self._wlock:
            if self._closed:  # closed while this thread waited for the lock
                raise StorageError("the store is closed")
            conn = self._writer
            if self._depth:  # inside batch(): join the open transaction
                yield conn
                return
            cancel.writing()  # cancelled while it waited for the lock
            try:
                conn.execute("BEGIN IMMEDIATE")
            except OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise mapped(exc) from exc
                raise StorageError(
                    f"the database is busy: another process held its write lock for "
                    f"over {self._busy_timeout:g} s",
                    hint="retry when the other writer (a long import or purge?) is done",
                ) from None
            self._depth += 1
            self._tx_thread = threading.get_ident()
            before = conn.total_changes
            try:
                if self._schema_known is not None:
                    self._refuse_newer(conn)
                yield conn
                cancel.committing(conn.total_changes != before)  # or roll back
                conn.execute("COMMIT")  # a full disk may refuse it: rolled back below
            except BaseException as exc:
                # SQLite may have rolled back already (a full disk, an I/O error)
                if conn.in_transaction:
                    with contextlib.suppress(DatabaseError):
                        conn.execute("ROLLBACK")
                if self._index_in_tx:  # the cache may hold rolled-back vectors: rebuild
                    self._index = None
                error = mapped(exc)
                if error is exc:
                    raise
                raise error from exc
            else:
                if self._checkpoints is not None:
                    self._checkpoints.committed()
            finally:
                self._depth -= 1
                self._tx_thread = None
                self._index_in_tx = False
            self._commits += 1
            if self._commits >= self._totals_due:
                self._refresh_fts_totals()

    def _refresh_fts_totals(self) -> None:
        """Keep the full-text index's row count true (:mod:`.fts_totals`), in a
        transaction of its own; it never fails the write that came before."""
        self._commits = 0
        conn = self._writer
        conn.execute("PRAGMA busy_timeout = 0")  # another process writing: the next time
        try:
            conn.execute("BEGIN IMMEDIATE")
        except OperationalError:
            return
        else:
            try:
                rows = [fts_totals.refresh(conn, table) for table in fts_totals.TABLES]
                self._totals_due = fts_totals.due(rows[0])
                conn.execute("COMMIT")
            except OperationalError:  # a read-only file
                conn.execute("ROLLBACK")
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")

    def in_tx(self) -> bool:
        """Whether the calling thread is inside this store's open write transaction."""
        return self._tx_thread == threading.get_ident()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Run several writes as one transaction: all of them land, or none.

        The write lock is taken at the start (``BEGIN IMMEDIATE``: serialised across
        threads and processes), and reads made inside by the same thread go through the
        writer, so a check-then-write inside one batch is atomic."""
        with self.tx():
            yield

    @contextlib.contextmanager
    def exclusive(self, key: str) -> Iterator[None]:
        """A check-then-write unit (see :meth:`Store.exclusive`). SQLite has one writer
        for the whole file, so every key shares that one lock."""
        with self.tx():
            yield

    def xlock(self, c: Any, key: str) -> None:
        """Serialise writers of ``key``: the single writer already does."""

    def _read(self) -> Any:
        if self._closed:
            raise StorageError("the store is closed")
        if self._memory:
            return self._writer
        reader = getattr(self._local, "reader", None)
        if reader is None:
            conn = _connect(self.path, self._busy_timeout, ro=self._ro)
            conn.execute("PRAGMA query_only = ON")
            reader = self._local.reader = _Reader(conn)
            with self._readers_lock:
                self._readers.add(reader)
        return reader.conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A connection for reads (the writer inside this thread's write transaction);
        a driver error about the database itself becomes a :class:`StorageError`."""
        try:
            with self._reading_raw() as conn:
                yield conn
        except DatabaseError as exc:
            error = mapped(exc)
            if error is exc:
                raise
            raise error from exc

    @contextlib.contextmanager
    def _reading_raw(self) -> Iterator[Any]:
        if self.in_tx():  # inside a write transaction: see it, and its own writes
            yield self._writer
        elif self._memory:
            with self._wlock:
                if self._closed:
                    raise StorageError("the store is closed")
                yield self._writer
        else:
            with self._reads_done:  # checked and counted as one step: close() waits for it
                if self._closed:
                    raise StorageError("the store is closed")
                self._active_reads += 1
            try:
                yield self._read()
            finally:
                with self._reads_done:
                    self._active_reads -= 1
                    self._reads_done.notify_all()

    def select_match(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of a full-text ``MATCH`` query: an expression FTS5 cannot read (the
        statement's own OperationalError) is the caller's :class:`ValidationError`."""
        try:
            with self.reading() as c:
                return list(c.execute(sql, params).fetchall())
        except OperationalError as exc:
            raise ValidationError(f"bad full-text query: {exc}") from exc

    def has_table(self, name: str) -> bool:
        with self.reading() as c:
            row = c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    def _stored_schema(self) -> int:
        """The schema version in the file, read without a write lock (0: none yet)."""
        with self.reading() as c:
            return schema_in(c)

    def _refuse_newer(self, conn: Any) -> None:
        """Raise :class:`StoreTooNewError` when the file's schema is newer than this
        memloci knows (inside a write transaction: checked and written atomically)."""
        known = self._schema_known or 0
        found = schema_in(conn)
        if found > known:
            raise store_too_new(repr(self.path), found, known)

    def _migrate(self) -> None:
        """Bring the schema up to date. Opening an up-to-date file takes no write lock
        (another process may hold it for long); a due migration takes it, then re-checks
        the version inside, so concurrent openers migrate once. A file of a newer schema
        (a newer memloci wrote it) is refused: nothing is written to it."""
        scripts = migration_scripts("sqlite")
        latest = max((n for n, _ in scripts), default=0)
        stored = self._stored_schema()
        if stored > latest:
            raise store_too_new(repr(self.path), stored, latest)
        if stored == latest:
            self._schema_known = latest
            return
        if self.read_only:
            raise StorageError(
                f"{self.path!r} was written by an older memloci (schema version {stored}, "
                f"now {latest}) and must be upgraded before it can be read",
                hint="open it once without read_only / --read-only (a copy, for a backup) "
                "to upgrade it",
            )
        with self.tx() as c:
            refuse_foreign(c, self.path)  # another process may have written it meanwhile
            c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = int(row[0]) if row else 0
            if current > latest:  # a newer memloci migrated it meanwhile
                raise store_too_new(repr(self.path), current, latest)
            for number, script in scripts:
                if number <= current:
                    continue
                for statement in _split_sql(script):
                    c.execute(statement)
                c.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(number),),
                )
        self._schema_known = latest

    def schema_version(self) -> int:
        return int(self.get_meta("schema_version") or 0)

    def vector_bytes(self, value: object) -> bytes:
        return bytes(cast("bytes", value))

    def size_bytes(self, c: Any) -> int:
        pages = c.execute("PRAGMA page_count").fetchone()[0]
        return int(pages) * int(c.execute("PRAGMA page_size").fetchone()[0])

    def close(self) -> None:
        """Close every connection. New reads and writes are refused at once; reads
        already running in other threads finish first (closing a connection under a
        running statement would crash the SQLite binding), for up to ``CLOSE_WAIT``."""
        if self._closed:
            return
        with self._reads_done:
            self._closed = True
            self._reads_done.wait_for(lambda: self._active_reads == 0, CLOSE_WAIT)
        if self._checkpoints is not None:  # the last connection to close checkpoints
            self._checkpoints.close()
        with self._wlock:
            with contextlib.suppress(Exception):  # refresh planner statistics (cheap)
                if not self.read_only:
                    self._writer.execute("PRAGMA optimize")
            with self._readers_lock:
                readers = [r.conn for r in self._readers]
                self._readers.clear()
            for conn in [*readers, self._writer]:
                with contextlib.suppress(Exception):
                    conn.close()

    # ------------------------------------------------------------------ meta
    def bind_embedder(self, model_id: str, dimension: int) -> None:
        """Record the embedding model; refuse a different one (re-embed to switch).
        A store already bound to this model is not written (no write lock on open)."""
        with self.reading() as c:
            bound = dict(
                c.execute(
                    "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'dimension')"
                ).fetchall()
            )
        if bound.get("embedding_model") == model_id and bound.get("dimension") == str(dimension):
            self._dim = dimension
            return
        with self.tx() as c:
            rows = dict(
                c.execute(
                    "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'dimension')"
                ).fetchall()
            )
            refuse_other_embedder(rows, model_id, dimension)
            c.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedding_model', ?)",
                (model_id,),
            )
            c.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('dimension', ?)",
                (str(dimension),),
            )
        self._dim = dimension

    def bump(self, c: Any, key: str) -> int:
        row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        value = int(row[0]) + 1 if row else 1
        c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))
        return value

    def drop_vectors(self, c: Any, rowids: Sequence[int]) -> None:
        if self._dim is None or not rowids:
            return
        # no cache reload needed: deleted nodes are filtered out by SQL, and a re-embedded
        # node replaces its old cached vector in place (same rowid)
        for chunk in chunks(list(rowids), 500):
            c.execute(f"DELETE FROM node_vectors WHERE rowid IN ({qs(chunk)})", chunk)


def qs(values: Sequence[Any]) -> str:
    """``?, ?, ?`` for a list of values."""
    return ", ".join("?" * len(values))


def chunks(values: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]
