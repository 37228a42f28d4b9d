-- Access tokens (engram_domain::auth): each grants one workspace, read-write or read-only.
-- Only the SHA-256 of a token's secret is kept; the public id finds the row.
CREATE TABLE tokens (
    id            text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    secret_hash   bytea NOT NULL CHECK (octet_length(secret_hash) = 32),
    read_only     boolean NOT NULL,
    label         text CHECK (octet_length(label) BETWEEN 1 AND 256),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz
);
CREATE INDEX tokens_workspace ON tokens (workspace_id);
