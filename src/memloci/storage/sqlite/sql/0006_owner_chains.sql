-- memloci SQLite schema v6: a session's turns are chained per owner (user and agent).
-- Before, a new turn was linked to the previous turn of its session id whoever said it:
-- two users sharing a session id ("s1") had their turns chained, so one's words were
-- indexed in the other's full-text row (the neighbour context) and a temporal edge
-- joined them. This unlinks every such pair; the turns themselves are unchanged.
CREATE TEMP TABLE cross_owner_chains AS
    SELECT e.id, e.source_id, e.target_id FROM edges e
    JOIN nodes s ON s.id = e.source_id
    JOIN nodes t ON t.id = e.target_id
    WHERE e.relation = 'temporal'
      AND (s.user_id IS NOT t.user_id OR s.agent_id IS NOT t.agent_id);
UPDATE nodes SET context = '' WHERE id IN (SELECT target_id FROM cross_owner_chains);
UPDATE nodes SET next_context = '' WHERE id IN (SELECT source_id FROM cross_owner_chains);
DELETE FROM edges WHERE id IN (SELECT id FROM cross_owner_chains);
DROP TABLE cross_owner_chains;
