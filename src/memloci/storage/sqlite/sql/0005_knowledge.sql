-- memloci SQLite schema v5: the knowledge tier, read-only RAG sources beside the memories.

-- A source is one file, added whole: re-adding it with the same content hash (and the same
-- embedding model) changes nothing; a changed file replaces its chunks in one transaction.
-- ``id`` is stable: derived from ``path`` (absolute), so re-adding keeps it. ``collection``
-- names a knowledge base inside the namespace (a role's ``knowledge.sources``).
CREATE TABLE knowledge_sources (
    rowid           INTEGER PRIMARY KEY,
    namespace       TEXT NOT NULL,
    id              TEXT NOT NULL,
    collection      TEXT NOT NULL DEFAULT 'default',
    path            TEXT NOT NULL,
    title           TEXT NOT NULL DEFAULT '',
    content_hash    TEXT NOT NULL,
    mtime           REAL,
    size_bytes      INTEGER NOT NULL DEFAULT 0,
    chunk_count     INTEGER NOT NULL DEFAULT 0,
    embedding_model TEXT,
    added_at        REAL NOT NULL,
    updated_at      REAL NOT NULL,
    UNIQUE (namespace, id),
    UNIQUE (namespace, path)
);
CREATE INDEX knowledge_sources_collection ON knowledge_sources (namespace, collection);

-- Chunks of a source, in order. ``id`` is ``<source id>-<ordinal>``; ``heading`` is the
-- heading path ("Guide > Install > Linux"); ``start_char`` / ``end_char`` locate the text
-- in the decoded file. ``embedding`` is a float32 little-endian blob (the node_vectors
-- format) from ``embedding_model`` (NULL when added without an embedder).
CREATE TABLE knowledge_chunks (
    rowid           INTEGER PRIMARY KEY,
    namespace       TEXT NOT NULL,
    id              TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    collection      TEXT NOT NULL DEFAULT 'default',
    ordinal         INTEGER NOT NULL,
    text            TEXT NOT NULL,
    heading         TEXT NOT NULL DEFAULT '',
    start_char      INTEGER NOT NULL,
    end_char        INTEGER NOT NULL,
    embedding       BLOB,
    embedding_model TEXT,
    UNIQUE (namespace, id)
);
CREATE INDEX knowledge_chunks_source ON knowledge_chunks (namespace, source_id, ordinal);
CREATE INDEX knowledge_chunks_model ON knowledge_chunks (namespace, embedding_model);

-- Full text over chunk text, heading path and source title (search without an embedder).
CREATE VIRTUAL TABLE knowledge_fts USING fts5 (
    text, heading, title,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts (rowid, text, heading, title)
    VALUES (new.rowid, new.text, new.heading,
            coalesce((SELECT s.title FROM knowledge_sources s
                      WHERE s.namespace = new.namespace AND s.id = new.source_id), ''));
END;
CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    DELETE FROM knowledge_fts WHERE rowid = old.rowid;
END;
