-- memloci PostgreSQL schema v8: a session's turns are chained per owner (user and agent).
-- Before, a new turn was linked to the previous turn of its session id whoever said it:
-- two users sharing a session id ("s1") had their turns chained, so one's words were
-- indexed in the other's full-text row (the neighbour context) and a temporal edge
-- joined them. This unlinks every such pair; the turns themselves are unchanged.
UPDATE nodes SET context = '' WHERE id IN (
    SELECT e.target_id FROM edges e
    JOIN nodes s ON s.id = e.source_id
    JOIN nodes t ON t.id = e.target_id
    WHERE e.relation = 'temporal'
      AND (s.user_id IS DISTINCT FROM t.user_id OR s.agent_id IS DISTINCT FROM t.agent_id)
);
UPDATE nodes SET next_context = '' WHERE id IN (
    SELECT e.source_id FROM edges e
    JOIN nodes s ON s.id = e.source_id
    JOIN nodes t ON t.id = e.target_id
    WHERE e.relation = 'temporal'
      AND (s.user_id IS DISTINCT FROM t.user_id OR s.agent_id IS DISTINCT FROM t.agent_id)
);
DELETE FROM edges WHERE id IN (
    SELECT e.id FROM edges e
    JOIN nodes s ON s.id = e.source_id
    JOIN nodes t ON t.id = e.target_id
    WHERE e.relation = 'temporal'
      AND (s.user_id IS DISTINCT FROM t.user_id OR s.agent_id IS DISTINCT FROM t.agent_id)
);
