-- memloci SQLite schema v3: consolidation, decay bookkeeping, entity name vectors, locks.

-- Who a session belongs to (the hot path records a session the first time it sees it).
ALTER TABLE consolidation_state ADD COLUMN user_id TEXT;
ALTER TABLE consolidation_state ADD COLUMN agent_id TEXT;
CREATE INDEX consolidation_state_pending ON consolidation_state (namespace, consolidated_at);

-- Episodes still waiting for consolidation: a partial index, so it only holds those.
CREATE INDEX nodes_unconsolidated ON nodes (namespace, session_id)
    WHERE type = 'episodic' AND consolidated_at IS NULL AND session_id IS NOT NULL;

-- Decay anchor of a memory: the confidence it had at its last access or update (``base``)
-- and when that was (``anchor``, epoch seconds). Maintenance sets confidence to
-- base · exp(−rate · days_since_anchor^0.8), so nightly runs follow one curve instead
-- of compounding; an access or update moves the anchor.
CREATE TABLE decay_state (
    node_id TEXT PRIMARY KEY,
    base    REAL NOT NULL,
    anchor  REAL NOT NULL
);

-- Vectors of entity names (float32 blobs), for resolving a mention by meaning.
CREATE TABLE entity_vectors (
    entity_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    model     TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX entity_vectors_ns ON entity_vectors (namespace, model);

-- Named locks shared by every process on this file (e.g. maintenance): one owner until
-- it releases the lock or ``expires_at`` (epoch seconds) passes.
CREATE TABLE locks (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at REAL NOT NULL
);
