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
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz NOT NULL,
    CHECK (valid_to >= valid_from)
);
CREATE INDEX ended_relations_from ON ended_relations (from_node_id);
CREATE INDEX ended_relations_to ON ended_relations (to_node_id);
