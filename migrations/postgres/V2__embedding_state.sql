-- What the indexer needs to tell a current vector from a stale one without re-rendering
-- every observation: the node's `updated_at` when the vector's text was rendered. Every
-- write to a node or its children moves `updated_at` (see V1's triggers), so a vector is
-- current exactly when the two still agree; the text hash then spares re-embedding when the
-- rendered text came out the same.

ALTER TABLE embeddings ADD COLUMN source_updated_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE node_embeddings ADD COLUMN source_updated_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX embeddings_model_observation ON embeddings (model, observation_id);
CREATE INDEX node_embeddings_model_node ON node_embeddings (model, node_id);

-- Workspaces created before perspectives were seeded get the defaults
-- (engram_domain::perspectives::DEFAULT_PERSPECTIVES as of this migration).
INSERT INTO perspectives (workspace_id, name, document_template, query_template)
SELECT w.id, d.name, d.document_template, d.query_template
FROM workspaces w
CROSS JOIN (VALUES
    ('general', '{name}: {observation}', '{query}'),
    ('technical', '{entity_type} {name} [{tags}]: {observation}', '{query}'),
    ('relational', '{name} ({relations}): {observation}', '{query}'),
    ('temporal', 'On {date}, {name} (fact {ordinal}): {observation}', '{query}'),
    ('project', '{name}, {summary} [{tags}]: {observation}', '{query}')
) AS d (name, document_template, query_template)
WHERE NOT EXISTS (SELECT 1 FROM perspectives p WHERE p.workspace_id = w.id);
