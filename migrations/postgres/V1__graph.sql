-- engram's graph on PostgreSQL: workspaces, nodes, observations, relations, events,
-- and the tables the embedding pipeline fills (perspectives, embeddings, node_embeddings).
-- HNSW indexes are created at runtime, one per (model, dimension), outside this
-- transactional migration (see the embeddings issue).

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE workspaces (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id        bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                text NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 256),
    entity_type         text NOT NULL CHECK (octet_length(entity_type) BETWEEN 1 AND 256),
    summary             text CHECK (octet_length(summary) BETWEEN 1 AND 65536),
    tags                text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 64),
    -- The next ordinal to hand out: bumped in the same statement that inserts observations,
    -- so concurrent writers serialise on the node row and ordinals are never reused.
    next_ordinal        bigint NOT NULL DEFAULT 1 CHECK (next_ordinal >= 1),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    summary_updated_at  timestamptz,
    UNIQUE (workspace_id, name)
);
CREATE INDEX nodes_workspace_type ON nodes (workspace_id, entity_type);
CREATE INDEX nodes_workspace_updated ON nodes (workspace_id, updated_at DESC);
CREATE INDEX nodes_tags ON nodes USING gin (tags);

CREATE TABLE observations (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    node_id       bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    -- Denormalised from the node (which never changes workspace) so searches filter early.
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    ordinal       bigint NOT NULL CHECK (ordinal >= 1),
    content       text NOT NULL CHECK (octet_length(content) BETWEEN 1 AND 65536),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    content_tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (node_id, ordinal)
);
CREATE INDEX observations_workspace ON observations (workspace_id);
CREATE INDEX observations_tsv ON observations USING gin (content_tsv);

CREATE TABLE relations (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    from_node_id   bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  text NOT NULL CHECK (octet_length(relation_type) BETWEEN 1 AND 256),
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, from_node_id, to_node_id, relation_type)
);
CREATE INDEX relations_from ON relations (from_node_id);
CREATE INDEX relations_to ON relations (to_node_id);

-- Every write appends here. A node's own events cascade away with it; the event recording
-- its deletion keeps node_id NULL and the name, so deletions stay countable.
CREATE TABLE events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    node_id       bigint REFERENCES nodes (id) ON DELETE CASCADE,
    node_name     text NOT NULL,
    subject       text NOT NULL CHECK (subject IN ('node', 'observation', 'relation')),
    operation     text NOT NULL CHECK (operation IN ('create', 'update', 'delete')),
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_workspace_at ON events (workspace_id, at);
CREATE INDEX events_node ON events (node_id);

-- Embedding perspectives: per workspace, each a template rendering an observation in its
-- context into the text that is embedded, and a template for queries.
CREATE TABLE perspectives (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id       bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               text NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 64),
    document_template  text NOT NULL,
    query_template     text NOT NULL,
    enabled            boolean NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);

-- One vector per (observation, perspective, model); `dims` lets HNSW expression indexes
-- be built per (model, dimension), and `text_hash` tells the indexer when it is stale.
CREATE TABLE embeddings (
    observation_id  bigint NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    perspective_id  bigint NOT NULL REFERENCES perspectives (id) ON DELETE CASCADE,
    workspace_id    bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    model           text NOT NULL,
    dims            integer NOT NULL CHECK (dims > 0),
    text_hash       bytea NOT NULL,
    embedding       vector NOT NULL CHECK (vector_dims(embedding) = dims),
    embedded_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (observation_id, perspective_id, model)
);
CREATE INDEX embeddings_workspace_model ON embeddings (workspace_id, model, perspective_id);

-- Per-node aggregate (mean of its observation vectors) per perspective and model.
CREATE TABLE node_embeddings (
    node_id            bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    perspective_id     bigint NOT NULL REFERENCES perspectives (id) ON DELETE CASCADE,
    workspace_id       bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    model              text NOT NULL,
    dims               integer NOT NULL CHECK (dims > 0),
    embedding          vector NOT NULL CHECK (vector_dims(embedding) = dims),
    observation_count  integer NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (node_id, perspective_id, model)
);
CREATE INDEX node_embeddings_workspace_model ON node_embeddings (workspace_id, model, perspective_id);

-- Triggers: `updated_at` moves on every write to a node or its children, and every write
-- appends an event. Statement-level with transition tables, so a batch of 1,000 is one
-- UPDATE and one INSERT, not 1,000 of each.

CREATE FUNCTION engram_touch_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END $$;

CREATE TRIGGER nodes_touch BEFORE UPDATE ON nodes
    FOR EACH ROW EXECUTE FUNCTION engram_touch_node();

CREATE FUNCTION engram_node_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'node', 'create' FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'node', 'update'
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (n.name, n.entity_type, n.summary, n.tags)
              IS DISTINCT FROM (o.name, o.entity_type, o.summary, o.tags);
    ELSE
        -- Skipped when the whole workspace is being deleted.
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT o.workspace_id, NULL, o.name, 'node', 'delete'
        FROM old_rows o JOIN workspaces w ON w.id = o.workspace_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER nodes_insert_events AFTER INSERT ON nodes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_node_events();
CREATE TRIGGER nodes_update_events AFTER UPDATE ON nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_node_events();
CREATE TRIGGER nodes_delete_events AFTER DELETE ON nodes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_node_events();

CREATE FUNCTION engram_observation_writes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    operation text := CASE TG_OP WHEN 'INSERT' THEN 'create'
                                 WHEN 'UPDATE' THEN 'update'
                                 ELSE 'delete' END;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Nodes deleted in the same statement (a cascade) are gone from `nodes` and skipped.
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT node_id FROM old_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'observation', operation
        FROM old_rows o JOIN nodes n ON n.id = o.node_id;
    ELSE
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT node_id FROM new_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'observation', operation
        FROM new_rows o JOIN nodes n ON n.id = o.node_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER observations_insert_writes AFTER INSERT ON observations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_observation_writes();
CREATE TRIGGER observations_update_writes AFTER UPDATE ON observations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_observation_writes();
CREATE TRIGGER observations_delete_writes AFTER DELETE ON observations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_observation_writes();

CREATE FUNCTION engram_relation_writes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    operation text := CASE TG_OP WHEN 'INSERT' THEN 'create'
                                 WHEN 'UPDATE' THEN 'update'
                                 ELSE 'delete' END;
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT from_node_id FROM old_rows UNION SELECT to_node_id FROM old_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'relation', operation
        FROM old_rows r JOIN nodes n ON n.id = r.from_node_id;
    ELSE
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT from_node_id FROM new_rows UNION SELECT to_node_id FROM new_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'relation', operation
        FROM new_rows r JOIN nodes n ON n.id = r.from_node_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER relations_insert_writes AFTER INSERT ON relations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_relation_writes();
CREATE TRIGGER relations_update_writes AFTER UPDATE ON relations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_relation_writes();
CREATE TRIGGER relations_delete_writes AFTER DELETE ON relations
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_relation_writes();
