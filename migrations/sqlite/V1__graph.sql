-- engram's graph on SQLite: workspaces, nodes, observations, relations, events, the full-text
-- index, and the tables the embedding pipeline fills (perspectives, embeddings,
-- node_embeddings). The same model as migrations/postgres, with these differences:
--
-- * Times are INTEGER microseconds since the Unix epoch (UTC). Writes take them from
--   `engram_now()`, a function every engram connection registers: the transaction's start,
--   strictly increasing from one transaction to the next (PostgreSQL's `now()`, made
--   monotonic), so the triggers below need a connection opened by engram.
-- * Tags are a JSON array of strings.
-- * Vectors are little-endian f32 BLOBs. Observation vectors are also indexed in sqlite-vec
--   `vec0` tables, one per dimension (`vec_obs_384`), created at run time on first use together
--   with the trigger that deletes a vector with its `embeddings` row (see src/vectors.rs);
--   `embeddings.id` is the vector's rowid there.
-- * Triggers are per row (SQLite has no statement-level triggers); they record the same
--   events and move the same `updated_at` as PostgreSQL's.
-- AUTOINCREMENT keeps ids from being reused, as PostgreSQL's identities are not: the newest
-- event id is the store's change marker, and vectors are keyed by observation id.

CREATE TABLE workspaces (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE
                CHECK (length(name) BETWEEN 1 AND 64 AND name NOT GLOB '*[^A-Za-z0-9._-]*'),
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE nodes (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id        INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                TEXT NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 256),
    entity_type         TEXT NOT NULL CHECK (length(CAST(entity_type AS BLOB)) BETWEEN 1 AND 256),
    summary             TEXT CHECK (length(CAST(summary AS BLOB)) BETWEEN 1 AND 65536),
    tags                TEXT NOT NULL DEFAULT '[]'
                        CHECK (json_valid(tags) AND json_array_length(tags) <= 64),
    -- The next ordinal to hand out: bumped in the transaction that inserts observations
    -- (which holds SQLite's one write lock), so ordinals are never reused.
    next_ordinal        INTEGER NOT NULL DEFAULT 1 CHECK (next_ordinal >= 1),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    summary_updated_at  INTEGER,
    UNIQUE (workspace_id, name)
) STRICT;
CREATE INDEX nodes_workspace_type ON nodes (workspace_id, entity_type);
CREATE INDEX nodes_workspace_updated ON nodes (workspace_id, updated_at DESC);

CREATE TABLE observations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id       INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    -- Denormalised from the node (which never changes workspace) so searches filter early.
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    ordinal       INTEGER NOT NULL CHECK (ordinal >= 1),
    content       TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) BETWEEN 1 AND 65536),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (node_id, ordinal)
) STRICT;
CREATE INDEX observations_workspace ON observations (workspace_id);

-- Full text over observations (an external-content FTS5 index kept by triggers below):
-- Unicode words without diacritics, stemmed (Porter), as PostgreSQL's `english` configuration
-- stems them, so "cats" finds "cat".
CREATE VIRTUAL TABLE observations_fts USING fts5 (
    content,
    content = 'observations',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE relations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id   INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    from_node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  TEXT NOT NULL CHECK (length(CAST(relation_type AS BLOB)) BETWEEN 1 AND 256),
    created_at     INTEGER NOT NULL,
    UNIQUE (workspace_id, from_node_id, to_node_id, relation_type)
) STRICT;
CREATE INDEX relations_from ON relations (from_node_id);
CREATE INDEX relations_to ON relations (to_node_id);

-- Every write appends here. A node's own events cascade away with it; the event recording
-- its deletion keeps node_id NULL and the name, so deletions stay countable.
CREATE TABLE events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    node_id       INTEGER REFERENCES nodes (id) ON DELETE CASCADE,
    node_name     TEXT NOT NULL,
    subject       TEXT NOT NULL CHECK (subject IN ('node', 'observation', 'relation')),
    operation     TEXT NOT NULL CHECK (operation IN ('create', 'update', 'delete')),
    at            INTEGER NOT NULL
) STRICT;
CREATE INDEX events_workspace_at ON events (workspace_id, at);
CREATE INDEX events_node ON events (node_id);

-- Embedding perspectives: per workspace, each a template rendering an observation in its
-- context into the text that is embedded, and a template for queries.
CREATE TABLE perspectives (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id       INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    document_template  TEXT NOT NULL,
    query_template     TEXT NOT NULL,
    enabled            INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at         INTEGER NOT NULL,
    UNIQUE (workspace_id, name)
) STRICT;

-- One row per (observation, perspective, model) with its vector (little-endian f32s). The same
-- vector is row `id` of `vec_obs_{dims}`, sqlite-vec's index for nearest-neighbour queries
-- (as pgvector's HNSW index holds a copy of the column); aggregates and searches within one
-- node read this column. `text_hash` tells the indexer whether the rendered text changed,
-- `source_updated_at` (the node's `updated_at` when it was rendered) whether the node changed
-- since.
CREATE TABLE embeddings (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    observation_id     INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    perspective_id     INTEGER NOT NULL REFERENCES perspectives (id) ON DELETE CASCADE,
    workspace_id       INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    model              TEXT NOT NULL,
    dims               INTEGER NOT NULL CHECK (dims > 0),
    text_hash          BLOB NOT NULL,
    embedding          BLOB NOT NULL CHECK (length(embedding) = 4 * dims),
    source_updated_at  INTEGER NOT NULL,
    embedded_at        INTEGER NOT NULL,
    UNIQUE (observation_id, perspective_id, model)
) STRICT;
CREATE INDEX embeddings_workspace_model ON embeddings (workspace_id, model, perspective_id);
CREATE INDEX embeddings_model_observation ON embeddings (model, observation_id);
CREATE INDEX embeddings_perspective ON embeddings (perspective_id);

-- Per-node aggregate (mean of its observation vectors) per perspective and model.
CREATE TABLE node_embeddings (
    node_id            INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    perspective_id     INTEGER NOT NULL REFERENCES perspectives (id) ON DELETE CASCADE,
    workspace_id       INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    model              TEXT NOT NULL,
    dims               INTEGER NOT NULL CHECK (dims > 0),
    embedding          BLOB NOT NULL CHECK (length(embedding) = 4 * dims),
    observation_count  INTEGER NOT NULL,
    source_updated_at  INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (node_id, perspective_id, model)
) STRICT;
CREATE INDEX node_embeddings_workspace_model
    ON node_embeddings (workspace_id, model, perspective_id);
CREATE INDEX node_embeddings_model_node ON node_embeddings (model, node_id);
CREATE INDEX node_embeddings_perspective ON node_embeddings (perspective_id);

-- Triggers: `updated_at` moves on every write to a node or its children, and every write
-- appends an event. A trigger's own UPDATE of `nodes` touches only `updated_at`, which fires
-- none of the node triggers' conditions again.

CREATE TRIGGER nodes_touch AFTER UPDATE OF name, entity_type, summary, tags, next_ordinal,
                                          summary_updated_at ON nodes
BEGIN
    UPDATE nodes SET updated_at = engram_now() WHERE id = NEW.id;
END;

CREATE TRIGGER nodes_insert_events AFTER INSERT ON nodes
BEGIN
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    VALUES (NEW.workspace_id, NEW.id, NEW.name, 'node', 'create', engram_now());
END;

CREATE TRIGGER nodes_update_events AFTER UPDATE ON nodes
WHEN NEW.name IS NOT OLD.name OR NEW.entity_type IS NOT OLD.entity_type
     OR NEW.summary IS NOT OLD.summary OR NEW.tags IS NOT OLD.tags
BEGIN
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    VALUES (NEW.workspace_id, NEW.id, NEW.name, 'node', 'update', engram_now());
END;

-- Skipped when the whole workspace is being deleted.
CREATE TRIGGER nodes_delete_events AFTER DELETE ON nodes
WHEN EXISTS (SELECT 1 FROM workspaces WHERE id = OLD.workspace_id)
BEGIN
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    VALUES (OLD.workspace_id, NULL, OLD.name, 'node', 'delete', engram_now());
END;

-- Observations deleted by a node's cascade find no node, and record and touch nothing.
CREATE TRIGGER observations_insert_writes AFTER INSERT ON observations
BEGIN
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, NEW.content);
    UPDATE nodes SET updated_at = engram_now() WHERE id = NEW.node_id;
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'create', engram_now()
    FROM nodes n WHERE n.id = NEW.node_id;
END;

CREATE TRIGGER observations_update_writes AFTER UPDATE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, OLD.content);
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, NEW.content);
    UPDATE nodes SET updated_at = engram_now() WHERE id = NEW.node_id;
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'update', engram_now()
    FROM nodes n WHERE n.id = NEW.node_id;
END;

CREATE TRIGGER observations_delete_writes AFTER DELETE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, OLD.content);
    UPDATE nodes SET updated_at = engram_now() WHERE id = OLD.node_id;
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'delete', engram_now()
    FROM nodes n WHERE n.id = OLD.node_id;
END;

-- A relation's events are filed under its source node.
CREATE TRIGGER relations_insert_writes AFTER INSERT ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now() WHERE id IN (NEW.from_node_id, NEW.to_node_id);
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'create', engram_now()
    FROM nodes n WHERE n.id = NEW.from_node_id;
END;

CREATE TRIGGER relations_update_writes AFTER UPDATE ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now() WHERE id IN (NEW.from_node_id, NEW.to_node_id);
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'update', engram_now()
    FROM nodes n WHERE n.id = NEW.from_node_id;
END;

CREATE TRIGGER relations_delete_writes AFTER DELETE ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now() WHERE id IN (OLD.from_node_id, OLD.to_node_id);
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'delete', engram_now()
    FROM nodes n WHERE n.id = OLD.from_node_id;
END;
