-- memloci SQLite schema v9: memories by when they happened, per namespace. A question
-- naming a day ("what did I do yesterday?") whose other words match nothing then lists
-- that day's memories, newest first (retrieval.graph.time_strategy); without this index
-- SQLite read every memory of the user to find them (120 ms at 100k).
CREATE INDEX IF NOT EXISTS nodes_ns_event ON nodes (namespace, event_time);
