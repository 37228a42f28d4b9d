-- $1 model, $2 limit, $3 workspace, observations after $4 up to $5 (in id order).
-- (current observation, enabled perspective) pairs (an ended fact keeps the vector it had) whose $1 vector is missing or
-- was rendered from an older state of the node (its `updated_at` moved since), with the
-- context the perspective renders: the node, its tags and summary, and its relations as
-- phrases (`works_on engram` outgoing, `Bob knows` incoming).
SELECT o.id AS observation_id, o.workspace_id, p.id AS perspective_id,
       p.name AS perspective_name, p.document_template,
       o.content, o.ordinal, o.created_at,
       n.name, n.entity_type, n.tags, n.summary, n.updated_at AS source_updated_at,
       e.text_hash,
       ARRAY(
           SELECT r.relation_type || ' ' || t.name
           FROM relations r JOIN nodes t ON t.id = r.to_node_id
           WHERE r.from_node_id = n.id
           UNION ALL
           SELECT f.name || ' ' || r.relation_type
           FROM relations r JOIN nodes f ON f.id = r.from_node_id
           WHERE r.to_node_id = n.id
       ) AS relations
FROM observations o
JOIN nodes n ON n.id = o.node_id
JOIN perspectives p ON p.workspace_id = o.workspace_id AND p.enabled
-- The range again on `e` (implied by `o`): a merge join, which the planner picks once it knows
-- the table is large, then reads the vectors from `$4` on, not from the first.
LEFT JOIN embeddings e
       ON e.observation_id = o.id AND e.perspective_id = p.id AND e.model = $1
      AND e.observation_id > $4 AND e.observation_id <= $5
WHERE o.workspace_id = $3 AND o.id > $4 AND o.id <= $5
  AND (o.valid_to IS NULL OR o.valid_to > now())
  AND (e.observation_id IS NULL OR e.source_updated_at <> n.updated_at)
ORDER BY o.id, p.id
LIMIT $2
