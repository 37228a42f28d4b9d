-- The indexer reads a workspace's observations in id order from where its last pass stopped
-- (engram_domain::PendingCursor): an index on (workspace_id, id) serves that scan and stops
-- at the batch's end; it also serves everything the index on workspace_id alone did.
CREATE INDEX observations_workspace_id ON observations (workspace_id, id);
DROP INDEX observations_workspace;
