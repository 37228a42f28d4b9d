-- $1 source node id, $2 target node id, $3 bound (hops). A breadth-first search with one row
-- per level: `frontier` is the level's nodes, `seen` every node reached so far (the cycle
-- guard), and the search stops at the level that reaches the target. Then `back` walks from
-- the target to a node of the previous level, and so on to the source, taking the first
-- neighbour and relation by name and id so the answer is deterministic.
WITH RECURSIVE bfs (depth, frontier, seen) AS (
    SELECT 0, ARRAY[$1::bigint], ARRAY[$1::bigint]
  UNION ALL
    SELECT bfs.depth + 1, step.frontier, bfs.seen || step.frontier
    FROM bfs
    CROSS JOIN LATERAL (
        SELECT array_agg(DISTINCT next.node_id) AS frontier
        FROM unnest(bfs.frontier) AS f (node_id)
        CROSS JOIN LATERAL (
            SELECT r.to_node_id AS node_id FROM relations r WHERE r.from_node_id = f.node_id
            UNION ALL
            SELECT r.from_node_id FROM relations r WHERE r.to_node_id = f.node_id
        ) next
        WHERE next.node_id <> ALL (bfs.seen)
    ) step
    WHERE bfs.depth < $3 AND NOT ($2::bigint = ANY (bfs.seen)) AND step.frontier IS NOT NULL
), back (depth, node_id, relation_id) AS (
    SELECT depth, $2::bigint, NULL::bigint FROM bfs WHERE $2::bigint = ANY (frontier)
  UNION ALL
    SELECT back.depth - 1, prev.node_id, prev.relation_id
    FROM back
    CROSS JOIN LATERAL (
        SELECT candidate.node_id, candidate.relation_id
        FROM (
            SELECT r.from_node_id AS node_id, r.id AS relation_id
            FROM relations r WHERE r.to_node_id = back.node_id
            UNION ALL
            SELECT r.to_node_id, r.id FROM relations r WHERE r.from_node_id = back.node_id
        ) candidate
        JOIN bfs ON bfs.depth = back.depth - 1 AND candidate.node_id = ANY (bfs.frontier)
        JOIN nodes n ON n.id = candidate.node_id
        ORDER BY n.name, candidate.relation_id
        LIMIT 1
    ) prev
    WHERE back.depth > 0
)
SELECT back.depth, n.name, f.name AS from_name, t.name AS to_name, r.relation_type
FROM back
JOIN nodes n ON n.id = back.node_id
LEFT JOIN relations r ON r.id = back.relation_id
LEFT JOIN nodes f ON f.id = r.from_node_id
LEFT JOIN nodes t ON t.id = r.to_node_id
ORDER BY back.depth
