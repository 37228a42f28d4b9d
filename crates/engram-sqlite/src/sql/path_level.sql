-- ?1 a JSON array of node ids (a level of the search). Each one's neighbours as
-- (node, neighbour), relations followed in either direction.
SELECT r.from_node_id, r.to_node_id FROM relations r
WHERE r.from_node_id IN (SELECT value FROM json_each(?1))
UNION
SELECT r.to_node_id, r.from_node_id FROM relations r
WHERE r.to_node_id IN (SELECT value FROM json_each(?1))
