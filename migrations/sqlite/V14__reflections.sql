-- Reflections (`add_reflection`, `search_reflections`), as migrations/postgres/V16: free prose
-- about a node, a current relation (its ends and type) or the whole workspace, kept apart
-- from observations, with a full-text index of their own (as `observations_fts`, CJK pairs
-- included) and one vector per model. No trigger moves a node's `updated_at` or writes an
-- event: the indexer's change marker reads the newest reflection id beside the newest event.

CREATE TABLE reflections (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id   INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    node_id        INTEGER REFERENCES nodes (id) ON DELETE CASCADE,
    from_node_id   INTEGER REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     INTEGER REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  TEXT CHECK (length(CAST(relation_type AS BLOB)) BETWEEN 1 AND 256),
    content        TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) BETWEEN 1 AND 65536),
    author         TEXT CHECK (length(CAST(author AS BLOB)) BETWEEN 1 AND 256),
    mood           TEXT CHECK (length(CAST(mood AS BLOB)) BETWEEN 1 AND 256),
    created_at     INTEGER NOT NULL,
    CHECK ((from_node_id IS NULL) = (to_node_id IS NULL)
           AND (from_node_id IS NULL) = (relation_type IS NULL)
           AND (node_id IS NULL OR from_node_id IS NULL))
) STRICT;
CREATE INDEX reflections_workspace ON reflections (workspace_id, id);
CREATE INDEX reflections_node ON reflections (node_id, created_at) WHERE node_id IS NOT NULL;
CREATE INDEX reflections_from ON reflections (from_node_id) WHERE from_node_id IS NOT NULL;
CREATE INDEX reflections_to ON reflections (to_node_id) WHERE to_node_id IS NOT NULL;

CREATE VIRTUAL TABLE reflections_fts USING fts5 (
    content,
    content = 'reflections',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER reflections_indexed AFTER INSERT ON reflections BEGIN
    INSERT INTO reflections_fts (rowid, content) VALUES (NEW.id, engram_with_cjk(NEW.content));
END;

CREATE TRIGGER reflections_unindexed AFTER DELETE ON reflections BEGIN
    INSERT INTO reflections_fts (reflections_fts, rowid, content)
    VALUES ('delete', OLD.id, engram_with_cjk(OLD.content));
END;

CREATE TABLE reflection_embeddings (
    reflection_id  INTEGER NOT NULL REFERENCES reflections (id) ON DELETE CASCADE,
    model          TEXT NOT NULL,
    dims           INTEGER NOT NULL CHECK (dims > 0),
    embedding      BLOB NOT NULL CHECK (length(embedding) = 4 * dims),
    token_signs    BLOB,
    embedded_at    INTEGER NOT NULL,
    PRIMARY KEY (reflection_id, model)
) STRICT;
CREATE INDEX reflection_embeddings_model ON reflection_embeddings (model, reflection_id);
