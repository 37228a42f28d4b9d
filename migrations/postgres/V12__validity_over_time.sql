-- Memory over time: a fact or a relation holds from `valid_from` (when it was written unless
-- the client said earlier) until it is ended; a replaced text is kept as an earlier version.
--
-- observations: `valid_to` is when the fact stops being current (it was ended, or it expires
-- then); a fact is current while `valid_to IS NULL OR valid_to > now()`, the one predicate
-- every default read and search applies. `expires_at` marks the facts the purge deletes for
-- good once it has passed (an ended fact is kept, an expired one is not).
ALTER TABLE observations
    ADD COLUMN valid_from  timestamptz,
    ADD COLUMN valid_to    timestamptz,
    ADD COLUMN expires_at  timestamptz;
UPDATE observations SET valid_from = created_at;
ALTER TABLE observations
    ALTER COLUMN valid_from SET DEFAULT now(),
    ALTER COLUMN valid_from SET NOT NULL,
    ADD CONSTRAINT observations_valid_period CHECK (valid_to IS NULL OR valid_to >= valid_from);
CREATE INDEX observations_ending ON observations (workspace_id, valid_to) WHERE valid_to IS NOT NULL;
CREATE INDEX observations_expiring ON observations (expires_at) WHERE expires_at IS NOT NULL;

-- The texts `replace_observation` replaced: each valid until `replaced_at`, from the previous
-- version's `replaced_at` (or the observation's `valid_from`). Deleting the observation deletes
-- them (a deletion is for good, history included).
CREATE TABLE observation_versions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    observation_id  bigint NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    content         text NOT NULL,
    replaced_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX observation_versions_observation ON observation_versions (observation_id, replaced_at);

-- relations: the table holds the current ones; `end_relations` moves a relation to
-- `ended_relations` with the end of its period, so every default read stays as it was and the
-- same relation created again starts a new period.
ALTER TABLE relations ADD COLUMN valid_from timestamptz;
UPDATE relations SET valid_from = created_at;
ALTER TABLE relations
    ALTER COLUMN valid_from SET DEFAULT now(),
    ALTER COLUMN valid_from SET NOT NULL;

CREATE TABLE ended_relations (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    from_node_id   bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    to_node_id     bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    relation_type  text NOT NULL,
    created_at     timestamptz NOT NULL,
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz NOT NULL,
    -- When the end was recorded: its `relation delete` event (the move deletes the current
    -- row) is the end, not a deletion, in the history.
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (valid_to >= valid_from)
);
CREATE INDEX ended_relations_from ON ended_relations (from_node_id);
CREATE INDEX ended_relations_to ON ended_relations (to_node_id);

-- History (`get_history`) is read from the rows above (creations, versions, ends) and from
-- the events of what leaves no row (deletions, a node's own changes). A node's update event
-- now says what changed: `detail` lists `name`, `entity_type`, `summary`, `tags`.
ALTER TABLE events ADD COLUMN detail text;

CREATE OR REPLACE FUNCTION engram_node_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation)
        SELECT n.workspace_id, n.id, n.name, 'node', 'create' FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation, detail)
        SELECT n.workspace_id, n.id, n.name, 'node', 'update',
               concat_ws(',',
                   CASE WHEN n.name IS DISTINCT FROM o.name THEN 'name' END,
                   CASE WHEN n.entity_type IS DISTINCT FROM o.entity_type THEN 'entity_type' END,
                   CASE WHEN n.summary IS DISTINCT FROM o.summary THEN 'summary' END,
                   CASE WHEN n.tags IS DISTINCT FROM o.tags THEN 'tags' END)
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

-- Aliases: other names a node answers to (a merged duplicate's name, or set by hand). An alias
-- is no node's name (checked when set) and one node's only (the key).
CREATE TABLE node_aliases (
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    alias         text NOT NULL CHECK (octet_length(alias) BETWEEN 1 AND 256),
    node_id       bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, alias)
);
CREATE INDEX node_aliases_node ON node_aliases (node_id);
