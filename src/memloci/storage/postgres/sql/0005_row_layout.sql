-- memloci PostgreSQL schema v5: the layout of a memory row on its page.
--
-- The full-text vector stays in the row. A memory with a 384-d vector is ~2.1 KB, past
-- PostgreSQL's 2 KB toast threshold, and with the vector kept inline (migration 0003)
-- the toaster moved the `fts` tsvector out to the TOAST table instead: every BM25
-- candidate then paid a TOAST index lookup to rank and score it (~0.35 ms a row at 600k
-- turns under load, most of the candidate query's time). MAIN keeps it inline
-- (compressed if need be; moved out only for rows too big for a page).
ALTER TABLE nodes ALTER COLUMN fts SET STORAGE MAIN;

-- Room on each page for an updated row. A search counts an access on each hit
-- (access_count, last_accessed, confidence; applied by the background worker). On a
-- full page PostgreSQL writes the new row version elsewhere and adds it to every index,
-- the HNSW graph included: ~2.6 ms of graph insertion per hit on an idle 2-core machine
-- (46 ms per row under load, against 0.6 ms in place), taking a core from the searches
-- running meanwhile. None of those columns is indexed, so with free space on the page
-- the update stays on it (a HOT update) and no index is touched. 75% keeps at least
-- ~2 KB free per page (two ~2.1 KB memories per page instead of three).
--
-- Both apply to rows written from now on: an existing table keeps its layout until
-- rewritten (VACUUM FULL nodes, which also rebuilds the indexes).
ALTER TABLE nodes SET (fillfactor = 75);
