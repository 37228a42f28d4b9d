-- A node's `updated_at` is touched once per transaction, not once per observation or relation
-- written: `engram_now()` is the transaction's time, so a second touch in the same transaction
-- (every observation of a node being created, every one of a batch added to it) would rewrite
-- the row and its `nodes_workspace_updated` index entry to the same value. Same behaviour,
-- fewer writes (bulk writes' throughput; BENCHMARKS.md).

DROP TRIGGER observations_insert_writes;
DROP TRIGGER observations_update_writes;
DROP TRIGGER observations_delete_writes;
DROP TRIGGER relations_insert_writes;
DROP TRIGGER relations_update_writes;
DROP TRIGGER relations_delete_writes;

CREATE TRIGGER observations_insert_writes AFTER INSERT ON observations
BEGIN
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, NEW.content);
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = NEW.node_id AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'create', engram_now()
    FROM nodes n WHERE n.id = NEW.node_id;
END;

CREATE TRIGGER observations_update_writes AFTER UPDATE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, OLD.content);
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, NEW.content);
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = NEW.node_id AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'update', engram_now()
    FROM nodes n WHERE n.id = NEW.node_id;
END;

CREATE TRIGGER observations_delete_writes AFTER DELETE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, OLD.content);
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = OLD.node_id AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'delete', engram_now()
    FROM nodes n WHERE n.id = OLD.node_id;
END;

-- A relation's events are filed under its source node.
CREATE TRIGGER relations_insert_writes AFTER INSERT ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now()
    WHERE id IN (NEW.from_node_id, NEW.to_node_id) AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'create', engram_now()
    FROM nodes n WHERE n.id = NEW.from_node_id;
END;

CREATE TRIGGER relations_update_writes AFTER UPDATE ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now()
    WHERE id IN (NEW.from_node_id, NEW.to_node_id) AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'update', engram_now()
    FROM nodes n WHERE n.id = NEW.from_node_id;
END;

CREATE TRIGGER relations_delete_writes AFTER DELETE ON relations
BEGIN
    UPDATE nodes SET updated_at = engram_now()
    WHERE id IN (OLD.from_node_id, OLD.to_node_id) AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'relation', 'delete', engram_now()
    FROM nodes n WHERE n.id = OLD.from_node_id;
END;
