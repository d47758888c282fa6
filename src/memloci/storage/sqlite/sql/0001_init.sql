-- memloci SQLite schema v1. Times are UTC epoch seconds (REAL).
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE nodes (
    rowid              INTEGER PRIMARY KEY,
    id                 TEXT NOT NULL UNIQUE,
    namespace          TEXT NOT NULL,
    type               TEXT NOT NULL CHECK (type IN ('episodic','semantic','procedural','opinion')),
    content            TEXT NOT NULL,
    context            TEXT NOT NULL DEFAULT '',
    next_context       TEXT NOT NULL DEFAULT '',
    date_text          TEXT NOT NULL DEFAULT '',
    owner_tokens       TEXT NOT NULL DEFAULT '',
    key                TEXT,
    key_norm           TEXT,
    value              TEXT,
    category           TEXT NOT NULL DEFAULT 'general',
    subject            TEXT,
    fact_type          TEXT,
    scope              TEXT NOT NULL CHECK (scope IN ('session','user','agent','global')),
    user_id            TEXT,
    agent_id           TEXT,
    session_id         TEXT,
    speaker            TEXT,
    event_time         REAL NOT NULL,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    valid_from         REAL NOT NULL,
    valid_until        REAL,
    confidence         REAL NOT NULL DEFAULT 1.0,
    times_confirmed    INTEGER NOT NULL DEFAULT 0,
    times_contradicted INTEGER NOT NULL DEFAULT 0,
    access_count       INTEGER NOT NULL DEFAULT 0,
    last_accessed      REAL,
    decay_rate         REAL NOT NULL DEFAULT 0.1,
    source_type        TEXT NOT NULL DEFAULT 'user',
    source_role        TEXT,
    metadata           TEXT NOT NULL DEFAULT '{}',
    version            INTEGER NOT NULL DEFAULT 1,
    details            TEXT,
    consolidated_at    REAL,
    embedded           INTEGER NOT NULL DEFAULT 0,
    content_hash       TEXT NOT NULL
);
CREATE INDEX nodes_ns_type ON nodes (namespace, type, valid_until);
CREATE INDEX nodes_ns_session ON nodes (namespace, session_id, rowid);
CREATE INDEX nodes_ns_user ON nodes (namespace, user_id);
CREATE INDEX nodes_ns_key ON nodes (namespace, key_norm) WHERE key_norm IS NOT NULL;
CREATE INDEX nodes_ns_hash ON nodes (namespace, content_hash);
CREATE INDEX nodes_embedded ON nodes (embedded);

CREATE VIRTUAL TABLE nodes_fts USING fts5 (
    content, speaker, context, next_context, date_text, keys, owner_tokens,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER nodes_ai AFTER INSERT ON nodes BEGIN
    INSERT INTO nodes_fts (rowid, content, speaker, context, next_context, date_text, keys,
                           owner_tokens)
    VALUES (new.rowid, new.content, coalesce(new.speaker, ''), new.context, new.next_context,
            new.date_text,
            trim(coalesce(replace(replace(new.key, '_', ' '), '-', ' '), '') || ' ' || coalesce(new.subject, '')),
            new.owner_tokens);
END;
CREATE TRIGGER nodes_ad AFTER DELETE ON nodes BEGIN
    DELETE FROM nodes_fts WHERE rowid = old.rowid;
END;
CREATE TRIGGER nodes_au AFTER UPDATE OF content, speaker, context, next_context, key, subject ON nodes BEGIN
    DELETE FROM nodes_fts WHERE rowid = old.rowid;
    INSERT INTO nodes_fts (rowid, content, speaker, context, next_context, date_text, keys,
                           owner_tokens)
    VALUES (new.rowid, new.content, coalesce(new.speaker, ''), new.context, new.next_context,
            new.date_text,
            trim(coalesce(replace(replace(new.key, '_', ' '), '-', ' '), '') || ' ' || coalesce(new.subject, '')),
            new.owner_tokens);
END;

-- float32 vectors (little-endian blobs, the sqlite-vec format), keyed by nodes.rowid.
-- A plain table: loads into the in-process cache quickly and works with sqlite-vec's
-- vec_distance_cosine() for exact scans; the model and dimension live in meta.
CREATE TABLE node_vectors (
    rowid     INTEGER PRIMARY KEY,
    embedding BLOB NOT NULL
);

CREATE TABLE versions (
    node_id        TEXT NOT NULL,
    version        INTEGER NOT NULL,
    content        TEXT NOT NULL,
    value          TEXT,
    source_session TEXT,
    created_at     REAL NOT NULL,
    PRIMARY KEY (node_id, version)
);

CREATE TABLE edges (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    relation    TEXT NOT NULL CHECK (relation IN ('temporal','causal','entity','derived_from','supersedes')),
    predicate   TEXT,
    weight      REAL NOT NULL DEFAULT 1.0,
    confidence  REAL NOT NULL DEFAULT 1.0,
    valid_from  REAL NOT NULL,
    valid_until REAL,
    evidence    TEXT NOT NULL DEFAULT '[]',
    created_at  REAL NOT NULL
);
CREATE INDEX edges_source ON edges (namespace, source_id, relation);
CREATE INDEX edges_target ON edges (namespace, target_id, relation);

CREATE TABLE entities (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    type           TEXT NOT NULL,
    aliases        TEXT NOT NULL DEFAULT '[]',
    summary        TEXT,
    first_seen     REAL NOT NULL,
    last_seen      REAL NOT NULL,
    mention_count  INTEGER NOT NULL DEFAULT 1,
    attributes     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX entities_ns_name ON entities (namespace, canonical_name COLLATE NOCASE);

CREATE TABLE node_entities (
    node_id   TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (node_id, entity_id)
);
CREATE INDEX node_entities_entity ON node_entities (entity_id);

CREATE TABLE memory_users (
    namespace          TEXT NOT NULL,
    id                 TEXT NOT NULL,
    display_name       TEXT,
    identifiers        TEXT NOT NULL DEFAULT '{}',
    preferences        TEXT NOT NULL DEFAULT '{}',
    conversation_count INTEGER NOT NULL DEFAULT 0,
    last_seen          REAL,
    merged_into        TEXT,
    created_at         REAL NOT NULL,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE threads (
    namespace  TEXT NOT NULL,
    id         TEXT NOT NULL,
    user_id    TEXT,
    agent_id   TEXT,
    messages   TEXT NOT NULL DEFAULT '[]',
    summary    TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE consolidation_state (
    namespace       TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    first_seen_at   REAL NOT NULL,
    consolidated_at REAL,
    PRIMARY KEY (namespace, session_id)
);
