-- memloci PostgreSQL schema v2: an index-friendly per-user filter.
-- A search for one user keeps `scope <> 'user' OR user_id = $user` (shared memories plus
-- the user's own). With an index on each side of the OR the planner combines them
-- (BitmapOr, then BitmapAnd with the full-text GIN index) instead of reading every row
-- holding a word, or every vector, and discarding the other users' rows afterwards.
CREATE INDEX nodes_ns_shared ON nodes (namespace) WHERE scope <> 'user';
