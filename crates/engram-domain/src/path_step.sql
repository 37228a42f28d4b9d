-- $1 a node id. Its neighbours with the relation linking each (relations in either
-- direction), by the neighbour's name and then the relation's id.
SELECT c.neighbour_id, n.name AS neighbour, f.name AS from_name, t.name AS to_name,
       r.relation_type
FROM (
    SELECT from_node_id AS neighbour_id, id AS relation_id FROM relations WHERE to_node_id = $1
    UNION ALL
    SELECT to_node_id, id FROM relations WHERE from_node_id = $1
) c
JOIN nodes n ON n.id = c.neighbour_id
JOIN relations r ON r.id = c.relation_id
JOIN nodes f ON f.id = r.from_node_id
JOIN nodes t ON t.id = r.to_node_id
ORDER BY n.name, c.relation_id
