-- memloci PostgreSQL schema v4: 1-bit codes of the vectors, for one user's vector search.
-- A search for one user in a big namespace walked the HNSW graph past every other user's
-- rows (one user of 50 at 1M turns: ~3,000 tuples for 60 hits, ~80 ms), and an exact scan
-- of that user's rows read them from the wide `nodes` heap (~90 ms for 20,000 rows).
-- `node_bits` holds the sign bits of each stored vector (pgvector's binary_quantize, 48
-- bytes for 384 dimensions) with the columns of the per-user filter, in narrow rows
-- covered by two indexes: a search pre-selects the user's (and the shared) rows closest
-- by Hamming distance from the indexes alone, then ranks those exactly by cosine against
-- `nodes` under the full filter (storage/postgres/search.py).
-- Kept by a trigger on `nodes` (no column of `nodes` is named in the trigger's
-- definition, so binding an embedder can still retype the vector column).
CREATE TABLE node_bits (
    seq       bigint PRIMARY KEY,
    namespace text NOT NULL,
    user_id   text,
    shared    boolean NOT NULL,  -- scope <> 'user': visible beyond its owner
    bits      bit varying NOT NULL
);
CREATE INDEX node_bits_user ON node_bits (namespace, user_id) INCLUDE (seq, bits);
CREATE INDEX node_bits_shared ON node_bits (namespace) INCLUDE (seq, bits) WHERE shared;

CREATE FUNCTION memloci_node_bits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM node_bits WHERE seq = OLD.seq;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF NEW.embedding IS NOT DISTINCT FROM OLD.embedding AND NEW.namespace = OLD.namespace
           AND NEW.user_id IS NOT DISTINCT FROM OLD.user_id AND NEW.scope = OLD.scope THEN
            RETURN NULL;
        END IF;
        IF NEW.embedding IS NULL THEN
            DELETE FROM node_bits WHERE seq = NEW.seq;
            RETURN NULL;
        END IF;
    ELSIF NEW.embedding IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO node_bits (seq, namespace, user_id, shared, bits)
    VALUES (NEW.seq, NEW.namespace, NEW.user_id, NEW.scope <> 'user', binary_quantize(NEW.embedding))
    ON CONFLICT (seq) DO UPDATE SET namespace = excluded.namespace, user_id = excluded.user_id,
        shared = excluded.shared, bits = excluded.bits;
    RETURN NULL;
END
$$;
CREATE TRIGGER nodes_bits AFTER INSERT OR UPDATE OR DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION memloci_node_bits();

INSERT INTO node_bits (seq, namespace, user_id, shared, bits)
SELECT seq, namespace, user_id, scope <> 'user', binary_quantize(embedding)
FROM nodes WHERE embedding IS NOT NULL;
