-- Observations written by one statement are one event row per node, with their `count`,
-- instead of one row per observation (as SQLite's V4): fewer rows and index entries per
-- bulk write. Event counts sum `count`, so the consolidation report's figures are unchanged.

ALTER TABLE events ADD COLUMN count integer NOT NULL DEFAULT 1;

CREATE OR REPLACE FUNCTION engram_observation_writes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    operation text := CASE TG_OP WHEN 'INSERT' THEN 'create'
                                 WHEN 'UPDATE' THEN 'update'
                                 ELSE 'delete' END;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Nodes deleted in the same statement (a cascade) are gone from `nodes` and skipped.
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT node_id FROM old_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation, count)
        SELECT n.workspace_id, n.id, n.name, 'observation', operation, count(*)
        FROM old_rows o JOIN nodes n ON n.id = o.node_id
        GROUP BY n.workspace_id, n.id, n.name;
    ELSE
        UPDATE nodes SET updated_at = now()
        WHERE id IN (SELECT node_id FROM new_rows);
        INSERT INTO events (workspace_id, node_id, node_name, subject, operation, count)
        SELECT n.workspace_id, n.id, n.name, 'observation', operation, count(*)
        FROM new_rows o JOIN nodes n ON n.id = o.node_id
        GROUP BY n.workspace_id, n.id, n.name;
    END IF;
    RETURN NULL;
END $$;
