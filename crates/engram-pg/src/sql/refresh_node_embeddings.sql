-- $1 model, $2 observation ids just indexed. Recomputes the aggregate vector (the mean of the
-- node's current observations' vectors) per perspective for every node those observations belong to.
INSERT INTO node_embeddings (node_id, perspective_id, workspace_id, model, dims, embedding,
                             observation_count, source_updated_at, updated_at)
SELECT o.node_id, e.perspective_id, e.workspace_id, e.model, e.dims, avg(e.embedding),
       count(*), n.updated_at, now()
FROM embeddings e
JOIN observations o ON o.id = e.observation_id
JOIN nodes n ON n.id = o.node_id
WHERE e.model = $1 AND (o.valid_to IS NULL OR o.valid_to > now())
  AND o.node_id IN (SELECT node_id FROM observations WHERE id = ANY ($2::bigint[]))
GROUP BY o.node_id, e.perspective_id, e.workspace_id, e.model, e.dims, n.updated_at
ON CONFLICT (node_id, perspective_id, model) DO UPDATE
SET dims = EXCLUDED.dims, embedding = EXCLUDED.embedding,
    observation_count = EXCLUDED.observation_count,
    source_updated_at = EXCLUDED.source_updated_at, updated_at = now()
