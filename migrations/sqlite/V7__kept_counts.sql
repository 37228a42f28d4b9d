-- get_stats and read_graph's totals counted a workspace's nodes, observations and relations on
-- every call, which grows with the store (5-8 ms at 100,000 observations). The counts are now
-- kept in one row per workspace, moved by row triggers. SQLite has one writer at a time, so a
-- single row per workspace serialises nothing that was not serialised already (PostgreSQL
-- keeps insert-only deltas instead, its V6). The triggers only update: rows deleted with their
-- workspace find no counts row (it goes with the workspace) and change nothing.
CREATE TABLE workspace_counts (
    workspace_id  INTEGER PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    nodes         INTEGER NOT NULL DEFAULT 0,
    observations  INTEGER NOT NULL DEFAULT 0,
    relations     INTEGER NOT NULL DEFAULT 0
);

CREATE TRIGGER workspaces_insert_counts AFTER INSERT ON workspaces BEGIN
    INSERT INTO workspace_counts (workspace_id) VALUES (NEW.id);
END;
CREATE TRIGGER nodes_insert_counts AFTER INSERT ON nodes BEGIN
    UPDATE workspace_counts SET nodes = nodes + 1 WHERE workspace_id = NEW.workspace_id;
END;
CREATE TRIGGER nodes_delete_counts AFTER DELETE ON nodes BEGIN
    UPDATE workspace_counts SET nodes = nodes - 1 WHERE workspace_id = OLD.workspace_id;
END;
CREATE TRIGGER observations_insert_counts AFTER INSERT ON observations BEGIN
    UPDATE workspace_counts SET observations = observations + 1
    WHERE workspace_id = NEW.workspace_id;
END;
CREATE TRIGGER observations_delete_counts AFTER DELETE ON observations BEGIN
    UPDATE workspace_counts SET observations = observations - 1
    WHERE workspace_id = OLD.workspace_id;
END;
CREATE TRIGGER relations_insert_counts AFTER INSERT ON relations BEGIN
    UPDATE workspace_counts SET relations = relations + 1 WHERE workspace_id = NEW.workspace_id;
END;
CREATE TRIGGER relations_delete_counts AFTER DELETE ON relations BEGIN
    UPDATE workspace_counts SET relations = relations - 1 WHERE workspace_id = OLD.workspace_id;
END;

-- What is already there, counted once.
INSERT INTO workspace_counts (workspace_id, nodes, observations, relations)
SELECT w.id,
       (SELECT count(*) FROM nodes WHERE workspace_id = w.id),
       (SELECT count(*) FROM observations WHERE workspace_id = w.id),
       (SELECT count(*) FROM relations WHERE workspace_id = w.id)
FROM workspaces w;
