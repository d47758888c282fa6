-- memloci PostgreSQL schema v6: a short pending list for the full-text GIN indexes.
-- GIN's fast update queues new rows' entries in a pending list (up to 4 MB by default)
-- that every search scans linearly before the index proper. A BM25 search runs one GIN
-- scan per query word, so a full list cost ~4.5 ms per word: 28.9 ms of a 100k-turn
-- candidate query against 3.3 ms once the list was merged. 128 kB keeps inserts batched
-- (the list is merged by the insert that fills it, by VACUUM and by autoanalyze) while
-- bounding what a scan reads.
ALTER INDEX nodes_fts SET (gin_pending_list_limit = 128);
ALTER INDEX knowledge_chunks_fts SET (gin_pending_list_limit = 128);
-- merge what is queued now (the next insert would, past the new limit)
SELECT gin_clean_pending_list('nodes_fts'::regclass);
SELECT gin_clean_pending_list('knowledge_chunks_fts'::regclass);
