-- memloci PostgreSQL schema v1 (the SQLite schema v1–v5 in one step). Times are UTC epoch
-- seconds (double precision), as in SQLite, so both backends share the row conversions.
-- Needs the pgvector extension (created on open when missing).

-- Full text: english stemming (snowball) without a stopword list, so "and", "not" or
-- "may" (a month) stay searchable, as with FTS5's porter tokenizer.
CREATE TEXT SEARCH DICTIONARY memloci_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION memloci (COPY = english);
ALTER TEXT SEARCH CONFIGURATION memloci
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH memloci_stem;

CREATE TABLE nodes (
    seq                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                 text NOT NULL UNIQUE,
    namespace          text NOT NULL,
    type               text NOT NULL CHECK (type IN ('episodic','semantic','procedural','opinion')),
    content            text NOT NULL,
    context            text NOT NULL DEFAULT '',
    next_context       text NOT NULL DEFAULT '',
    date_text          text NOT NULL DEFAULT '',
    owner_tokens       text NOT NULL DEFAULT '',
    key                text,
    key_norm           text,
    value              jsonb,
    category           text NOT NULL DEFAULT 'general',
    subject            text,
    fact_type          text,
    scope              text NOT NULL CHECK (scope IN ('session','user','agent','global')),
    user_id            text,
    agent_id           text,
    session_id         text,
    speaker            text,
    event_time         double precision NOT NULL,
    created_at         double precision NOT NULL,
    updated_at         double precision NOT NULL,
    valid_from         double precision NOT NULL,
    valid_until        double precision,
    confidence         double precision NOT NULL DEFAULT 1.0,
    times_confirmed    integer NOT NULL DEFAULT 0,
    times_contradicted integer NOT NULL DEFAULT 0,
    access_count       integer NOT NULL DEFAULT 0,
    last_accessed      double precision,
    decay_rate         double precision NOT NULL DEFAULT 0.1,
    source_type        text NOT NULL DEFAULT 'user',
    source_role        text,
    metadata           jsonb NOT NULL DEFAULT '{}',
    version            integer NOT NULL DEFAULT 1,
    details            jsonb,
    consolidated_at    double precision,
    embedded           integer NOT NULL DEFAULT 0,
    content_hash       text NOT NULL,
    -- the vector; typed vector(dimension) and HNSW-indexed when an embedder is bound
    embedding          vector,
    -- the fields the SQLite FTS5 index holds, weighted like its bm25() columns:
    -- A content, key + subject; B previous turn, date words; C speaker; D next turn
    fts                tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('memloci', content), 'A') ||
        setweight(to_tsvector('memloci', replace(replace(coalesce(key, ''), '_', ' '), '-', ' ')
                                         || ' ' || coalesce(subject, '')), 'A') ||
        setweight(to_tsvector('memloci', context), 'B') ||
        setweight(to_tsvector('memloci', date_text), 'B') ||
        setweight(to_tsvector('memloci', coalesce(speaker, '')), 'C') ||
        setweight(to_tsvector('memloci', next_context), 'D')
    ) STORED
);
CREATE INDEX nodes_ns_type ON nodes (namespace, type, valid_until);
CREATE INDEX nodes_ns_session ON nodes (namespace, session_id, seq);
CREATE INDEX nodes_ns_user ON nodes (namespace, user_id);
CREATE INDEX nodes_ns_key ON nodes (namespace, key_norm) WHERE key_norm IS NOT NULL;
CREATE INDEX nodes_ns_hash ON nodes (namespace, content_hash);
CREATE INDEX nodes_pending ON nodes (seq) WHERE embedded = 0;
CREATE INDEX nodes_fts ON nodes USING gin (fts);
CREATE INDEX nodes_unconsolidated ON nodes (namespace, session_id)
    WHERE type = 'episodic' AND consolidated_at IS NULL AND session_id IS NOT NULL;

CREATE TABLE versions (
    node_id        text NOT NULL,
    version        integer NOT NULL,
    content        text NOT NULL,
    value          jsonb,
    source_session text,
    created_at     double precision NOT NULL,
    PRIMARY KEY (node_id, version)
);

CREATE TABLE edges (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    namespace   text NOT NULL,
    source_id   text NOT NULL,
    target_id   text NOT NULL,
    relation    text NOT NULL CHECK (relation IN ('temporal','causal','entity','derived_from','supersedes')),
    predicate   text,
    weight      double precision NOT NULL DEFAULT 1.0,
    confidence  double precision NOT NULL DEFAULT 1.0,
    valid_from  double precision NOT NULL,
    valid_until double precision,
    evidence    jsonb NOT NULL DEFAULT '[]',
    created_at  double precision NOT NULL
);
CREATE INDEX edges_source ON edges (namespace, source_id, relation);
CREATE INDEX edges_target ON edges (namespace, target_id, relation);
CREATE INDEX edges_seq ON edges (namespace, relation, seq);

CREATE TABLE entities (
    id             text PRIMARY KEY,
    namespace      text NOT NULL,
    canonical_name text NOT NULL,
    type           text NOT NULL,
    aliases        jsonb NOT NULL DEFAULT '[]',
    summary        text,
    first_seen     double precision NOT NULL,
    last_seen      double precision NOT NULL,
    mention_count  integer NOT NULL DEFAULT 1,
    attributes     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX entities_ns_name ON entities (namespace, lower(canonical_name));
CREATE INDEX entities_ns_mentions ON entities (namespace, mention_count);

CREATE TABLE node_entities (
    node_id   text NOT NULL,
    entity_id text NOT NULL,
    PRIMARY KEY (node_id, entity_id)
);
CREATE INDEX node_entities_entity ON node_entities (entity_id);

CREATE TABLE entity_names (
    namespace text NOT NULL,
    name_norm text NOT NULL,
    entity_id text NOT NULL,
    PRIMARY KEY (namespace, name_norm, entity_id)
);
CREATE INDEX entity_names_entity ON entity_names (entity_id);

CREATE TABLE memory_users (
    namespace          text NOT NULL,
    id                 text NOT NULL,
    display_name       text,
    identifiers        jsonb NOT NULL DEFAULT '{}',
    preferences        jsonb NOT NULL DEFAULT '{}',
    conversation_count integer NOT NULL DEFAULT 0,
    last_seen          double precision,
    merged_into        text,
    created_at         double precision NOT NULL,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE user_identifiers (
    namespace  text NOT NULL,
    channel    text NOT NULL,
    identifier text NOT NULL,
    user_id    text NOT NULL,
    PRIMARY KEY (namespace, channel, identifier, user_id)
);
CREATE INDEX user_identifiers_user ON user_identifiers (namespace, user_id);

CREATE TABLE threads (
    namespace  text NOT NULL,
    id         text NOT NULL,
    user_id    text,
    agent_id   text,
    messages   jsonb NOT NULL DEFAULT '[]',
    summary    text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX threads_ns_updated ON threads (namespace, updated_at);
CREATE INDEX threads_ns_user ON threads (namespace, user_id, updated_at);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    key_hash     text NOT NULL,
    namespaces   jsonb NOT NULL DEFAULT '[]',
    can_write    boolean NOT NULL DEFAULT true,
    admin        boolean NOT NULL DEFAULT false,
    created_at   double precision NOT NULL,
    revoked_at   double precision,
    last_used_at double precision
);

CREATE TABLE consolidation_state (
    namespace       text NOT NULL,
    session_id      text NOT NULL,
    first_seen_at   double precision NOT NULL,
    consolidated_at double precision,
    user_id         text,
    agent_id        text,
    PRIMARY KEY (namespace, session_id)
);
CREATE INDEX consolidation_state_pending ON consolidation_state (namespace, consolidated_at);

CREATE TABLE decay_state (
    node_id text PRIMARY KEY,
    base    double precision NOT NULL,
    anchor  double precision NOT NULL
);

CREATE TABLE entity_vectors (
    entity_id text PRIMARY KEY,
    namespace text NOT NULL,
    model     text NOT NULL,
    embedding bytea NOT NULL
);
CREATE INDEX entity_vectors_ns ON entity_vectors (namespace, model);

CREATE TABLE locks (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at double precision NOT NULL
);

CREATE TABLE knowledge_sources (
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    namespace       text NOT NULL,
    id              text NOT NULL,
    collection      text NOT NULL DEFAULT 'default',
    path            text NOT NULL,
    title           text NOT NULL DEFAULT '',
    content_hash    text NOT NULL,
    mtime           double precision,
    size_bytes      bigint NOT NULL DEFAULT 0,
    chunk_count     integer NOT NULL DEFAULT 0,
    embedding_model text,
    added_at        double precision NOT NULL,
    updated_at      double precision NOT NULL,
    PRIMARY KEY (namespace, id),
    UNIQUE (namespace, path)
);
CREATE INDEX knowledge_sources_collection ON knowledge_sources (namespace, collection);

-- chunk vectors of any model and dimension (searched exactly, filtered by model first)
CREATE TABLE knowledge_chunks (
    seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    namespace       text NOT NULL,
    id              text NOT NULL,
    source_id       text NOT NULL,
    collection      text NOT NULL DEFAULT 'default',
    ordinal         integer NOT NULL,
    text            text NOT NULL,
    heading         text NOT NULL DEFAULT '',
    title           text NOT NULL DEFAULT '',
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    embedding       vector,
    embedding_model text,
    fts             tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('memloci', text), 'A') ||
        setweight(to_tsvector('memloci', heading), 'B') ||
        setweight(to_tsvector('memloci', title), 'C')
    ) STORED,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX knowledge_chunks_source ON knowledge_chunks (namespace, source_id, ordinal);
CREATE INDEX knowledge_chunks_model ON knowledge_chunks (namespace, embedding_model);
CREATE INDEX knowledge_chunks_fts ON knowledge_chunks USING gin (fts);
