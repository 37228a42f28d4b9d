-- get_stats counted a workspace's nodes, observations and relations on every call, which grows
-- with the store (10 ms at 100,000 observations). The counts are now kept, as insert-only
-- deltas: every statement that inserts or deletes rows of those tables adds one row per
-- workspace it touched. No row is ever updated in place, so concurrent writers never wait on
-- one another here (a single counter row per workspace would serialise them). get_stats sums a
-- workspace's rows; the store folds them into one row per workspace now and then.
CREATE TABLE workspace_counts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    nodes         bigint NOT NULL DEFAULT 0,
    observations  bigint NOT NULL DEFAULT 0,
    relations     bigint NOT NULL DEFAULT 0
);
CREATE INDEX workspace_counts_by_workspace ON workspace_counts (workspace_id)
    INCLUDE (nodes, observations, relations);

-- One function for the three tables and both directions: the transition table is called
-- `changed_rows` in every trigger below.
CREATE FUNCTION engram_count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO workspace_counts (workspace_id, nodes, observations, relations)
    SELECT c.workspace_id,
           CASE TG_TABLE_NAME WHEN 'nodes' THEN sign * c.n ELSE 0 END,
           CASE TG_TABLE_NAME WHEN 'observations' THEN sign * c.n ELSE 0 END,
           CASE TG_TABLE_NAME WHEN 'relations' THEN sign * c.n ELSE 0 END
    FROM (SELECT workspace_id, count(*) AS n FROM changed_rows GROUP BY workspace_id) c
    -- Rows deleted with their workspace (a cascade) need no count: its counts go with it.
    WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = c.workspace_id);
    RETURN NULL;
END $$;

CREATE TRIGGER nodes_insert_counts AFTER INSERT ON nodes
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();
CREATE TRIGGER nodes_delete_counts AFTER DELETE ON nodes
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();
CREATE TRIGGER observations_insert_counts AFTER INSERT ON observations
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();
CREATE TRIGGER observations_delete_counts AFTER DELETE ON observations
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();
CREATE TRIGGER relations_insert_counts AFTER INSERT ON relations
    REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();
CREATE TRIGGER relations_delete_counts AFTER DELETE ON relations
    REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_count_rows();

-- What is already there, counted once.
INSERT INTO workspace_counts (workspace_id, nodes, observations, relations)
SELECT w.id,
       (SELECT count(*) FROM nodes WHERE workspace_id = w.id),
       (SELECT count(*) FROM observations WHERE workspace_id = w.id),
       (SELECT count(*) FROM relations WHERE workspace_id = w.id)
FROM workspaces w;
