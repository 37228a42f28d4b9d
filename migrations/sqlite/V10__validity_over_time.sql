-- Memory over time: a fact or a relation holds from `valid_from` (when it was written unless
-- the client said earlier) until it is ended; a replaced text is kept as an earlier version.
-- Times are microseconds since the Unix epoch, UTC, as everywhere in this schema.
--
-- observations: `valid_to` is when the fact stops being current (it was ended, or it expires
-- then); a fact is current while `valid_to IS NULL OR valid_to > engram_now()`, the one
-- predicate every default read and search applies. `expires_at` marks the facts the purge
-- deletes for good once it has passed (an ended fact is kept, an expired one is not). Every
-- insert sets `valid_from` (SQLite takes only a constant default for an added column).
ALTER TABLE observations ADD COLUMN valid_from INTEGER NOT NULL DEFAULT 0;
ALTER TABLE observations ADD COLUMN valid_to INTEGER;
ALTER TABLE observations ADD COLUMN expires_at INTEGER;
UPDATE observations SET valid_from = created_at;
CREATE INDEX observations_ending ON observations (workspace_id, valid_to) WHERE valid_to IS NOT NULL;
CREATE INDEX observations_expiring ON observations (expires_at) WHERE expires_at IS NOT NULL;

-- The texts `replace_observation` replaced: each valid until `replaced_at`, from the previous
-- version's `replaced_at` (or the observation's `valid_from`).
CREATE TABLE observation_versions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    observation_id  INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    content         TEXT NOT NULL,
    replaced_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX observation_versions_observation ON observation_versions (observation_id, replaced_at);

-- relations: the table holds the current ones; `end_relations` moves a relation to
-- `ended_relations` with the end of its period, so every default read stays as it was and the
-- same relation created again starts a new period.
ALTER TABLE relations ADD COLUMN valid_from INTEGER NOT NULL DEFAULT 0;
UPDATE relations SET valid_from = created_at;

CREATE TABLE ended_relations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id   INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    from_node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    valid_from     INTEGER NOT NULL,
    valid_to       INTEGER NOT NULL CHECK (valid_to >= valid_from),
    -- When the end was recorded: its `relation delete` event (the move deletes the current
    -- row) is the end, not a deletion, in the history.
    recorded_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX ended_relations_from ON ended_relations (from_node_id);
CREATE INDEX ended_relations_to ON ended_relations (to_node_id);

-- History (`get_history`) is read from the rows above (creations, versions, ends) and from
-- the events of what leaves no row (deletions, a node's own changes). A node's update event
-- now says what changed: `detail` lists `name`, `entity_type`, `summary`, `tags`.
ALTER TABLE events ADD COLUMN detail TEXT;

DROP TRIGGER nodes_update_events;
CREATE TRIGGER nodes_update_events AFTER UPDATE ON nodes
WHEN NEW.name IS NOT OLD.name OR NEW.entity_type IS NOT OLD.entity_type
     OR NEW.summary IS NOT OLD.summary OR NEW.tags IS NOT OLD.tags
BEGIN
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at, detail)
    VALUES (NEW.workspace_id, NEW.id, NEW.name, 'node', 'update', engram_now(),
            concat_ws(',',
                CASE WHEN NEW.name IS NOT OLD.name THEN 'name' END,
                CASE WHEN NEW.entity_type IS NOT OLD.entity_type THEN 'entity_type' END,
                CASE WHEN NEW.summary IS NOT OLD.summary THEN 'summary' END,
                CASE WHEN NEW.tags IS NOT OLD.tags THEN 'tags' END));
END;

-- Aliases: other names a node answers to (a merged duplicate's name, or set by hand). An alias
-- is no node's name (checked when set) and one node's only (the key).
CREATE TABLE node_aliases (
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    alias         TEXT NOT NULL CHECK (length(CAST(alias AS BLOB)) BETWEEN 1 AND 256),
    node_id       INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, alias)
) STRICT;
CREATE INDEX node_aliases_node ON node_aliases (node_id);
