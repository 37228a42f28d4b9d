-- $1 workspace id, $2 node names, $3 contents, $4 since when each holds (NULL: now), $5 when
-- each expires (NULL: never; parallel arrays, in request order).
-- The caller has locked the node rows (in id order) in an earlier statement of the same
-- transaction, so this statement's snapshot sees every text committed to them before.
-- A text the node already holds as a current fact is not stored again: it comes back with `duplicate` and the
-- ordinal that holds it. The others take `count` ordinals per node from its counter in one
-- UPDATE, so ordinals are unique, gap-free and never reused.
WITH input AS (
    SELECT name, content, valid_from, expires_at, idx
    FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) WITH ORDINALITY
         AS t (name, content, valid_from, expires_at, idx)
), held AS (
    -- Per given text, an index lookup of its node and of the node's observations (LATERAL:
    -- a join would let the planner scan every observation of the workspace).
    SELECT i.idx, n.id AS node_id, h.ordinal
    FROM input i
    CROSS JOIN LATERAL (
        SELECT id FROM nodes WHERE workspace_id = $1 AND name = i.name
    ) n
    CROSS JOIN LATERAL (
        SELECT min(o.ordinal) AS ordinal FROM observations o
        WHERE o.node_id = n.id AND o.content = i.content
          AND (o.valid_to IS NULL OR o.valid_to > now())
    ) h
    WHERE h.ordinal IS NOT NULL
), fresh AS (
    SELECT * FROM input WHERE idx NOT IN (SELECT idx FROM held)
), counts AS (
    SELECT name, count(*) AS n FROM fresh GROUP BY name
), taken AS (
    UPDATE nodes SET next_ordinal = nodes.next_ordinal + counts.n
    FROM counts
    WHERE nodes.workspace_id = $1 AND nodes.name = counts.name
    RETURNING nodes.id, nodes.name, nodes.next_ordinal - counts.n AS first_ordinal
), inserted AS (
    INSERT INTO observations (node_id, workspace_id, ordinal, content, valid_from, valid_to,
                              expires_at)
    SELECT t.id, $1,
           t.first_ordinal + row_number() OVER (PARTITION BY f.name ORDER BY f.idx) - 1,
           f.content, coalesce(f.valid_from, now()), f.expires_at, f.expires_at
    FROM fresh f
    JOIN taken t ON t.name = f.name
    RETURNING node_id, ordinal, content
)
SELECT node_id, ordinal, content, false AS duplicate FROM inserted
UNION ALL
SELECT h.node_id, h.ordinal, i.content, true FROM held h JOIN input i ON i.idx = h.idx
