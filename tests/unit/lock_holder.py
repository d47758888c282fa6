"""Hold a SQLite file's write lock: ``python lock_holder.py DB``.

Opens the file, runs ``BEGIN IMMEDIATE``, prints ``held`` and keeps the lock until a
line arrives on stdin (or stdin closes); then rolls back and exits.
"""

from __future__ import annotations

import sys

try:
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
