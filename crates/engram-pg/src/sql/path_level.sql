-- $1 node ids (a level of the search). Their neighbours, relations followed in either
-- direction, each once.
SELECT r.to_node_id FROM relations r WHERE r.from_node_id = ANY ($1)
UNION
SELECT r.from_node_id FROM relations r WHERE r.to_node_id = ANY ($1)
