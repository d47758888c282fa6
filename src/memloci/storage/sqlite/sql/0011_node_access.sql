-- memloci SQLite schema v11: a memory's reads in a narrow table of their own. A search
-- counts an access on each hit and reinforces its confidence (memloci.rules.reinforced);
-- written to `nodes`, each touch rewrote the whole ~2 KB row (text, details, metadata).
-- A row here wins over the columns of the same name in `nodes` (which keep the values
-- a memory was written or last edited with); a memory never read has no row.
CREATE TABLE IF NOT EXISTS node_access (
    node_id       TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    access_count  INTEGER NOT NULL,
    last_accessed REAL,
    confidence    REAL NOT NULL
) WITHOUT ROWID;
