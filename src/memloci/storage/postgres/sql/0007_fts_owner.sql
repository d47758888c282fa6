-- memloci PostgreSQL schema v7: the full-text GIN index also keys each row's owner.
-- A user's search wants the rows holding a word *and* owned by that user. With a GIN
-- index over the words alone, PostgreSQL built a bitmap of every row holding the word
-- (16,000 rows for a word in 1.6 % of a million-row table) and ANDed it with a bitmap
-- of all the user's rows, once per query word: most of a 1M-row BM25 search. With
-- (user_id, fts) in one GIN index (the btree_gin extension gives text a GIN operator
-- class) the index intersects the two posting lists itself and yields only the rows
-- that hold the word and belong to the user; a search without a user reads the fts
-- keys alone, as before. Kept under the old name, so maintenance code still finds it.
-- Without btree_gin (created on open when the role may) the plain index stays: searches
-- are the same, only slower on big tables.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX nodes_fts_owner ON nodes USING gin (user_id, fts)
            WITH (gin_pending_list_limit = 128);
        DROP INDEX nodes_fts;
        ALTER INDEX nodes_fts_owner RENAME TO nodes_fts;
    END IF;
END
$$;

-- One user's newest rows, newest first, from the index alone: the candidates of a
-- full-text query made only of common words on a big table (ranking.RECENT_ROWS).
-- (namespace, user_id) gains seq as a third key; the same lookups still use it.
CREATE INDEX nodes_ns_user_seq ON nodes (namespace, user_id, seq);
DROP INDEX nodes_ns_user;
ALTER INDEX nodes_ns_user_seq RENAME TO nodes_ns_user;
