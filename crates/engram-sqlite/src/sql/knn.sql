-- {table} the dimension's vec0 table; ?1 workspace id, ?2 model, ?3 perspective id, ?4 query
-- vector (little-endian f32), ?5 k. The k nearest vectors by cosine distance (an exact scan
-- of the (workspace, perspective) partition, filtered on the model): (observation id, cosine
-- similarity).
WITH knn AS (
    SELECT rowid, distance
    FROM {table}
    WHERE embedding MATCH ?4 AND k = ?5
      AND workspace_id = ?1 AND model = ?2 AND perspective_id = ?3
)
SELECT e.observation_id, 1.0 - knn.distance AS similarity
FROM knn
JOIN embeddings e ON e.id = knn.rowid
