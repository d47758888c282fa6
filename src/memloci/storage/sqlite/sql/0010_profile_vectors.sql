-- memloci SQLite schema v10: an entity's profile (its summary) as a vector, so a question
-- about what something is can find the entity whose profile says it. ``digest`` is a
-- hash of the summary the vector was made from: a changed summary is embedded again.
-- A row whose entity is gone is dropped by maintenance (drop_orphans) and by a forget.
CREATE TABLE IF NOT EXISTS entity_profile_vectors (
    entity_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    model     TEXT NOT NULL,
    digest    TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entity_profile_vectors_ns ON entity_profile_vectors (namespace, model);
