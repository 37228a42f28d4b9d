-- What `engram import` and `read_graph` need.
--
-- 1. A node's `updated_at` may be set explicitly (an import restoring a recorded time); any
--    other update of the row still moves it to now(). Before, the trigger overwrote every
--    value, so an exported graph could not be imported with its timestamps.
-- 2. Nodes are paged in byte-wise name order (Rust's and SQLite's), whatever the database's
--    collation; this index serves `ORDER BY name COLLATE "C"` and the cursor's comparison.

CREATE OR REPLACE FUNCTION engram_touch_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END $$;

CREATE INDEX nodes_workspace_name_bytes ON nodes (workspace_id, name COLLATE "C");
