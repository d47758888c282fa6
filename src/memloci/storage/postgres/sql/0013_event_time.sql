-- memloci PostgreSQL schema v13: memories by when they happened, per namespace (as SQLite
-- v9): a question naming a day whose other words match nothing then lists that day's
-- memories, newest first (retrieval.graph.time_strategy), without reading every memory.
CREATE INDEX IF NOT EXISTS nodes_ns_event ON nodes (namespace, event_time);
