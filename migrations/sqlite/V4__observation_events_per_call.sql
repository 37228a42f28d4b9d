-- Observations created by one call are one event row per node, with their `count`, instead of
-- one row per observation: the event log is the third row (with two indexes) every
-- observation wrote, and bulk writes ran 15–30 % faster without it (BENCHMARKS.md). The
-- store's code writes that row after a node's observations (`nodes::observations_created`);
-- updates and deletes keep one row each (count 1). Event counts sum `count`, so the
-- consolidation report's figures are unchanged. PostgreSQL: V7.

ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;

DROP TRIGGER observations_insert_writes;

CREATE TRIGGER observations_insert_writes AFTER INSERT ON observations
BEGIN
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, NEW.content);
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = NEW.node_id AND updated_at IS NOT engram_now();
END;
