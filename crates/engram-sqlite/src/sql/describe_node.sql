-- ?1 a workspace, ?2 a node's name: the node's id, name, type and summary, how many current facts it holds, and how many
-- relations leave it and reach it (each count on an index of its own).
SELECT n.id, n.name, n.entity_type, n.summary,
       (SELECT count(*) FROM observations o
        WHERE o.node_id = n.id AND (o.valid_to IS NULL OR o.valid_to > engram_now()))
           AS observation_count,
       (SELECT count(*) FROM relations r WHERE r.from_node_id = n.id) AS outgoing,
       (SELECT count(*) FROM relations r WHERE r.to_node_id = n.id) AS incoming
FROM nodes n WHERE n.workspace_id = ?1 AND n.name = ?2
