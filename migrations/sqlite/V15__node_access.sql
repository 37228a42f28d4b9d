-- How often and how lately each node was read or found, and which nodes were found together,
-- as migrations/postgres/V17: written by the access log in batches off the request path, apart
-- from `nodes` (whose triggers would take a read for a change).

CREATE TABLE node_access (
    node_id       INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    reads         INTEGER NOT NULL CHECK (reads >= 0),
    last_read_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX node_access_workspace ON node_access (workspace_id, last_read_at);

CREATE TABLE node_cooccurrence (
    node_a        INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    node_b        INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    workspace_id  INTEGER NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    together      INTEGER NOT NULL CHECK (together >= 0),
    last_at       INTEGER NOT NULL,
    PRIMARY KEY (node_a, node_b),
    CHECK (node_a < node_b)
) STRICT;
CREATE INDEX node_cooccurrence_b ON node_cooccurrence (node_b);
