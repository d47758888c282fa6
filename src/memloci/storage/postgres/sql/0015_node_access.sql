-- memloci PostgreSQL schema v15: a memory's reads in a narrow table of their own (as
-- SQLite v11). A search counts an access on each hit and reinforces its confidence
-- (memloci.rules.reinforced); written to `nodes`, each touch wrote a new version of the
-- ~2.1 KB row, and when it did not fit on its page (no HOT update) a new entry in every
-- index, the HNSW graph included. A row here wins over the columns of the same name in
-- `nodes` (which keep the values a memory was written or last edited with); a memory
-- never read has no row. Existing counts stay in `nodes` and are read from there.
CREATE TABLE IF NOT EXISTS node_access (
    node_id       text PRIMARY KEY,
    namespace     text NOT NULL,
    access_count  integer NOT NULL,
    last_accessed double precision,
    confidence    double precision NOT NULL
);
