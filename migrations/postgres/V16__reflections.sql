-- Reflections (`add_reflection`, `search_reflections`): free prose about a node, a current
-- relation (its ends and type) or the whole workspace, kept apart from observations. A
-- reflection about a node goes with the node (merged into another, it moves there; deleted,
-- it goes too); one about a relation is kept by its ends' ids and type, so ending the relation
-- keeps it. Neither a node's `updated_at` nor the events move: the indexer's change marker
-- reads the newest reflection id beside the newest event id.

CREATE TABLE reflections (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    node_id        bigint REFERENCES nodes (id) ON DELETE CASCADE,
    from_node_id   bigint REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     bigint REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  text CHECK (octet_length(relation_type) BETWEEN 1 AND 256),
    content        text NOT NULL CHECK (octet_length(content) BETWEEN 1 AND 65536),
    author         text CHECK (octet_length(author) BETWEEN 1 AND 256),
    mood           text CHECK (octet_length(mood) BETWEEN 1 AND 256),
    created_at     timestamptz NOT NULL DEFAULT now(),
    content_tsv    tsvector GENERATED ALWAYS AS (to_tsvector('english', engram_with_cjk(content))) STORED,
    -- A node's, a relation's (all three of its parts) or the workspace's (none).
    CHECK ((from_node_id IS NULL) = (to_node_id IS NULL)
           AND (from_node_id IS NULL) = (relation_type IS NULL)
           AND (node_id IS NULL OR from_node_id IS NULL))
);
CREATE INDEX reflections_workspace ON reflections (workspace_id, id);
CREATE INDEX reflections_node ON reflections (node_id, created_at) WHERE node_id IS NOT NULL;
CREATE INDEX reflections_from ON reflections (from_node_id) WHERE from_node_id IS NOT NULL;
CREATE INDEX reflections_to ON reflections (to_node_id) WHERE to_node_id IS NOT NULL;
CREATE INDEX reflections_tsv ON reflections USING gin (content_tsv);

-- One vector per (reflection, model), of the text alone, with its token signs.
CREATE TABLE reflection_embeddings (
    reflection_id  bigint NOT NULL REFERENCES reflections (id) ON DELETE CASCADE,
    model          text NOT NULL,
    dims           integer NOT NULL CHECK (dims > 0),
    embedding      vector NOT NULL CHECK (vector_dims(embedding) = dims),
    token_signs    bytea,
    embedded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reflection_id, model)
);
CREATE INDEX reflection_embeddings_model ON reflection_embeddings (model, reflection_id);
