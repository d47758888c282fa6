-- memloci PostgreSQL schema v12: full text folds accents, as SQLite's FTS5 index does
-- (unicode61 remove_diacritics 2): "cafe" finds "Café" and "José" finds "Jose". The
-- unaccent extension (trusted, in PostgreSQL's contrib; created on open when the role
-- may) filters each word before the english stemmer, for the words the parser calls
-- non-ASCII (word, hword, hword_part). The stored tsvectors of rows with non-ASCII text
-- are then computed again (an UPDATE recomputes a stored generated column). Without
-- unaccent the configuration is left as it was: searches match accents exactly.
DO $$
DECLARE
    dict text;
BEGIN
    SELECT quote_ident(n.nspname) || '.unaccent' INTO dict
        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
        WHERE e.extname = 'unaccent';
    IF dict IS NOT NULL THEN
        EXECUTE 'ALTER TEXT SEARCH CONFIGURATION memloci ALTER MAPPING FOR word, hword, '
            || 'hword_part WITH ' || dict || ', memloci_stem';
        UPDATE nodes SET content = content
            WHERE (content || context || next_context || date_text || coalesce(key, '')
                   || coalesce(subject, '') || coalesce(speaker, '')) ~ '[^\x01-\x7f]';
        UPDATE knowledge_chunks SET text = text
            WHERE (text || heading || title) ~ '[^\x01-\x7f]';
    END IF;
END
$$;
