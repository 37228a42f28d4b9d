-- ?1 start node id, ?2 depth bound (hops), ?3 the time read (microseconds; NULL for every
-- time). neighborhood.sql over the relations that held at ?3: the current ones from their
-- `valid_from` on and the ended ones within their period, or over every relation there ever
-- was for NULL. One recursive arm per table and direction, so each probes its endpoint index.
WITH RECURSIVE walk (node_id, depth) AS (
    SELECT ?1, 0
  UNION
    SELECT r.to_node_id, walk.depth + 1
    FROM walk JOIN relations r ON r.from_node_id = walk.node_id
    WHERE walk.depth < ?2 AND (?3 IS NULL OR r.valid_from <= ?3)
  UNION
    SELECT r.from_node_id, walk.depth + 1
    FROM walk JOIN relations r ON r.to_node_id = walk.node_id
    WHERE walk.depth < ?2 AND (?3 IS NULL OR r.valid_from <= ?3)
  UNION
    SELECT r.to_node_id, walk.depth + 1
    FROM walk JOIN ended_relations r ON r.from_node_id = walk.node_id
    WHERE walk.depth < ?2 AND (?3 IS NULL OR (r.valid_from <= ?3 AND r.valid_to > ?3))
  UNION
    SELECT r.from_node_id, walk.depth + 1
    FROM walk JOIN ended_relations r ON r.to_node_id = walk.node_id
    WHERE walk.depth < ?2 AND (?3 IS NULL OR (r.valid_from <= ?3 AND r.valid_to > ?3))
)
SELECT n.id, n.name, n.entity_type, n.summary, n.tags, min(walk.depth) AS depth
FROM walk
CROSS JOIN nodes n ON n.id = walk.node_id
GROUP BY n.id
ORDER BY depth, n.name
