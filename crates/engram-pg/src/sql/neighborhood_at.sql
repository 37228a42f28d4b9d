-- $1 start node id, $2 depth bound (hops), $3 a time (NULL: every time). As neighborhood.sql,
-- over the relations that held at $3 (current ones from their valid_from, ended ones within
-- their period), or over every relation, current and ended, when $3 is NULL.
WITH RECURSIVE periods AS (
    SELECT from_node_id, to_node_id, valid_from, NULL::timestamptz AS valid_to FROM relations
    UNION ALL
    SELECT from_node_id, to_node_id, valid_from, valid_to FROM ended_relations
), held AS (
    SELECT from_node_id, to_node_id FROM periods
    WHERE $3::timestamptz IS NULL
       OR (valid_from <= $3 AND (valid_to IS NULL OR valid_to > $3))
), walk (node_id, depth) AS (
    SELECT $1::bigint, 0
  UNION
    SELECT next.node_id, walk.depth + 1
    FROM walk
    CROSS JOIN LATERAL (
        SELECT r.to_node_id AS node_id FROM held r WHERE r.from_node_id = walk.node_id
        UNION ALL
        SELECT r.from_node_id FROM held r WHERE r.to_node_id = walk.node_id
    ) next
    WHERE walk.depth < $2
)
SELECT n.id, n.name, n.entity_type, n.summary, n.tags, min(walk.depth) AS depth
FROM walk
JOIN nodes n ON n.id = walk.node_id
GROUP BY n.id
ORDER BY depth, n.name
