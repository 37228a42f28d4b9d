-- How often and how lately each node was read or found (`open_nodes`, the searches), and which
-- nodes were found together, written by the server's access log in batches off the request
-- path (`engram_domain::access`). Kept apart from `nodes`, whose every update moves
-- `updated_at` and writes an event: a read is not a change.

CREATE TABLE node_access (
    node_id       bigint PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    reads         bigint NOT NULL CHECK (reads >= 0),
    last_read_at  timestamptz NOT NULL
);
CREATE INDEX node_access_workspace ON node_access (workspace_id, last_read_at);

-- Pairs of nodes returned together by one read, the lower id first.
CREATE TABLE node_cooccurrence (
    node_a        bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    node_b        bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    workspace_id  bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    together      bigint NOT NULL CHECK (together >= 0),
    last_at       timestamptz NOT NULL,
    PRIMARY KEY (node_a, node_b),
    CHECK (node_a < node_b)
);
CREATE INDEX node_cooccurrence_b ON node_cooccurrence (node_b);
