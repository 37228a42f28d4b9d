-- ?1 source node id, ?2 target node id, ?3 bound (hops). `walk` is a breadth-first search by
-- levels: rows are (node, depth), UNION drops repeats (the cycle guard), and no level goes
-- past the bound or past the target. `distance` keeps each node's first level. Then `back`
-- walks from the target to a neighbour one level nearer the source, and so on to the source,
-- taking the first neighbour and relation by name and id so the answer is deterministic.
WITH RECURSIVE walk (node_id, depth) AS (
    SELECT ?1, 0
  UNION
    SELECT r.to_node_id, walk.depth + 1
    FROM walk JOIN relations r ON r.from_node_id = walk.node_id
    WHERE walk.depth < ?3 AND walk.node_id <> ?2
  UNION
    SELECT r.from_node_id, walk.depth + 1
    FROM walk JOIN relations r ON r.to_node_id = walk.node_id
    WHERE walk.depth < ?3 AND walk.node_id <> ?2
), distance (node_id, depth) AS MATERIALIZED (
    SELECT node_id, min(depth) FROM walk GROUP BY node_id
), back (depth, node_id, relation_id) AS (
    SELECT depth, node_id, NULL FROM distance WHERE node_id = ?2
  UNION ALL
    SELECT back.depth - 1,
           CASE WHEN r.from_node_id = back.node_id THEN r.to_node_id ELSE r.from_node_id END,
           r.id
    FROM back
    JOIN relations r ON r.id = (
        SELECT candidate.relation_id
        FROM (
            SELECT r2.from_node_id AS node_id, r2.id AS relation_id
            FROM relations r2 WHERE r2.to_node_id = back.node_id
            UNION ALL
            SELECT r2.to_node_id, r2.id FROM relations r2 WHERE r2.from_node_id = back.node_id
        ) candidate
        JOIN distance d ON d.node_id = candidate.node_id AND d.depth = back.depth - 1
        JOIN nodes n ON n.id = candidate.node_id
        ORDER BY n.name, candidate.relation_id
        LIMIT 1
    )
    WHERE back.depth > 0
)
SELECT back.depth, n.name, f.name AS from_name, t.name AS to_name, r.relation_type
FROM back
JOIN nodes n ON n.id = back.node_id
LEFT JOIN relations r ON r.id = back.relation_id
LEFT JOIN nodes f ON f.id = r.from_node_id
LEFT JOIN nodes t ON t.id = r.to_node_id
ORDER BY back.depth
