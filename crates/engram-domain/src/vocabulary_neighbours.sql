-- $1 a node id, $2 most rows: the other end of each relation of the node, with the relation's
-- type and direction (`out` from the node, `in` to it), by name, type, then direction.
SELECT n.name, n.entity_type, c.relation_type, c.direction
FROM (
    SELECT r.to_node_id AS other, r.relation_type, 'out' AS direction
    FROM relations r WHERE r.from_node_id = $1
    UNION ALL
    SELECT r.from_node_id, r.relation_type, 'in' FROM relations r WHERE r.to_node_id = $1
) c
JOIN nodes n ON n.id = c.other
ORDER BY n.name, c.relation_type, c.direction DESC
LIMIT $2
