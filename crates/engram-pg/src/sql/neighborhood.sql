-- $1 the start nodes' ids, $2 depth bound (hops). Every node within $2 hops of any, relations followed in
-- either direction, with its distance. The cycle guard: rows are (node, depth) and UNION drops
-- repeats, so each level holds each node at most once and the walk ends at the depth bound.
WITH RECURSIVE walk (node_id, depth) AS (
    SELECT unnest($1::bigint[]), 0
  UNION
    SELECT next.node_id, walk.depth + 1
    FROM walk
    CROSS JOIN LATERAL (
        SELECT r.to_node_id AS node_id FROM relations r WHERE r.from_node_id = walk.node_id
        UNION ALL
        SELECT r.from_node_id FROM relations r WHERE r.to_node_id = walk.node_id
    ) next
    WHERE walk.depth < $2
)
SELECT n.id, n.name, n.entity_type, n.summary, n.tags, min(walk.depth) AS depth
FROM walk
JOIN nodes n ON n.id = walk.node_id
GROUP BY n.id
ORDER BY depth, n.name
