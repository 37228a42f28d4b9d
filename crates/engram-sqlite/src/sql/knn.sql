-- {table} the dimension's vec0 table; ?1 workspace id, ?2 model, ?3 perspective id, ?4 query
-- vector (little-endian f32), ?5 k. The k nearest vectors by cosine distance (an exact scan
-- of the (workspace, perspective) partition, filtered on the model), with their observations.
WITH knn AS (
    SELECT rowid, distance
    FROM {table}
    WHERE embedding MATCH ?4 AND k = ?5
      AND workspace_id = ?1 AND model = ?2 AND perspective_id = ?3
)
SELECT n.name, n.entity_type, n.summary, o.ordinal, o.content, 1.0 - knn.distance AS score
FROM knn
JOIN embeddings e ON e.id = knn.rowid
JOIN observations o ON o.id = e.observation_id
JOIN nodes n ON n.id = o.node_id
ORDER BY score DESC, n.name, o.ordinal
