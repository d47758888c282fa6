-- memloci SQLite schema v7: turns stored without a session are consolidated too (grouped
-- by owner), so the index of episodes waiting for consolidation holds them as well.
DROP INDEX IF EXISTS nodes_unconsolidated;
CREATE INDEX nodes_unconsolidated ON nodes (namespace, session_id)
    WHERE type = 'episodic' AND consolidated_at IS NULL;
