-- memloci PostgreSQL schema v14: an entity's profile (its summary) as a vector (as SQLite
-- v10), so a question about what something is can find the entity whose profile says it.
-- ``digest`` is a hash of the summary the vector was made from.
CREATE TABLE IF NOT EXISTS entity_profile_vectors (
    entity_id text PRIMARY KEY,
    namespace text NOT NULL,
    model     text NOT NULL,
    digest    text NOT NULL,
    embedding bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_profile_vectors_ns ON entity_profile_vectors (namespace, model);
