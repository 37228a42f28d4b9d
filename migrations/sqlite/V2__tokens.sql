-- Access tokens (engram_domain::auth): each grants one workspace, read-write or read-only.
-- Only the SHA-256 of a token's secret is kept; the public id finds the row. Times are
-- microseconds since the Unix epoch, as in V1.
CREATE TABLE tokens (
    id            TEXT PRIMARY KEY CHECK (length(id) = 16),
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    secret_hash   BLOB NOT NULL CHECK (length(secret_hash) = 32),
    read_only     INTEGER NOT NULL CHECK (read_only IN (0, 1)),
    label         TEXT CHECK (length(CAST(label AS BLOB)) BETWEEN 1 AND 256),
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER
) STRICT;
CREATE INDEX tokens_workspace ON tokens (workspace_id);
