-- memloci SQLite schema v2: API keys, lookup tables for users and entities, listing indexes.

-- API keys map a secret to namespaces; only the sha256 hex of the full secret is stored.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL,
    namespaces   TEXT NOT NULL DEFAULT '[]',
    can_write    INTEGER NOT NULL DEFAULT 1,
    admin        INTEGER NOT NULL DEFAULT 0,
    created_at   REAL NOT NULL,
    revoked_at   REAL,
    last_used_at REAL
);

-- Channel identifiers of memory users (a copy of memory_users.identifiers, kept by the
-- store), so a user is found by a channel id through an index. Merged users keep theirs.
CREATE TABLE user_identifiers (
    namespace  TEXT NOT NULL,
    channel    TEXT NOT NULL,
    identifier TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    PRIMARY KEY (namespace, channel, identifier, user_id)
);
CREATE INDEX user_identifiers_user ON user_identifiers (namespace, user_id);
INSERT OR IGNORE INTO user_identifiers (namespace, channel, identifier, user_id)
    SELECT u.namespace, j.key, CAST(j.value AS TEXT), u.id
    FROM memory_users u, json_each(u.identifiers) j;

-- Case-folded canonical names and aliases of entities (kept by the store).
CREATE TABLE entity_names (
    namespace TEXT NOT NULL,
    name_norm TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (namespace, name_norm, entity_id)
);
CREATE INDEX entity_names_entity ON entity_names (entity_id);
INSERT OR IGNORE INTO entity_names (namespace, name_norm, entity_id)
    SELECT namespace, lower(trim(canonical_name)), id FROM entities;
INSERT OR IGNORE INTO entity_names (namespace, name_norm, entity_id)
    SELECT e.namespace, lower(trim(CAST(j.value AS TEXT))), e.id
    FROM entities e, json_each(e.aliases) j;
CREATE INDEX entities_ns_mentions ON entities (namespace, mention_count);

CREATE INDEX threads_ns_updated ON threads (namespace, updated_at);
CREATE INDEX threads_ns_user ON threads (namespace, user_id, updated_at);

-- Re-index full text when a memory changes owner (owner_tokens), e.g. after a user merge.
DROP TRIGGER nodes_au;
CREATE TRIGGER nodes_au AFTER UPDATE OF content, speaker, context, next_context, key, subject,
                                        owner_tokens ON nodes BEGIN
    DELETE FROM nodes_fts WHERE rowid = old.rowid;
    INSERT INTO nodes_fts (rowid, content, speaker, context, next_context, date_text, keys,
                           owner_tokens)
    VALUES (new.rowid, new.content, coalesce(new.speaker, ''), new.context, new.next_context,
            new.date_text,
            trim(coalesce(replace(replace(new.key, '_', ' '), '-', ' '), '') || ' ' || coalesce(new.subject, '')),
            new.owner_tokens);
END;
