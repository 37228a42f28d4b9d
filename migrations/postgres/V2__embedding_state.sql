-- What the indexer needs to tell a current vector from a stale one without re-rendering
-- every observation: the node's `updated_at` when the vector's text was rendered. Every
-- write to a node or its children moves `updated_at` (see V1's triggers), so a vector is
-- current exactly when the two still agree; the text hash then spares re-embedding when the
-- rendered text came out the same.

ALTER TABLE embeddings ADD COLUMN source_updated_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE node_embeddings ADD COLUMN source_updated_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX embeddings_model_observation ON embeddings (model, observation_id);
CREATE INDEX node_embeddings_model_node ON node_embeddings (model, node_id);
