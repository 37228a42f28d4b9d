-- $1 workspace id, $2 node names, $3 contents (parallel arrays, in request order).
-- Takes `count` ordinals per node from its counter in one UPDATE, after locking the node rows:
-- concurrent writers queue on it, so ordinals are unique, gap-free and never reused.
WITH input AS (
    SELECT name, content, idx
    FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t (name, content, idx)
), counts AS (
    SELECT name, count(*) AS n FROM input GROUP BY name
), locked AS MATERIALIZED (
    -- Node rows are locked in id order, whatever the request's order, so two calls that
    -- touch the same nodes queue instead of deadlocking.
    SELECT nodes.id
    FROM nodes JOIN counts ON nodes.name = counts.name
    WHERE nodes.workspace_id = $1
    ORDER BY nodes.id
    FOR UPDATE OF nodes
), taken AS (
    UPDATE nodes SET next_ordinal = nodes.next_ordinal + counts.n
    FROM counts
    WHERE nodes.id IN (SELECT id FROM locked) AND nodes.name = counts.name
    RETURNING nodes.id, nodes.name, nodes.next_ordinal - counts.n AS first_ordinal
)
INSERT INTO observations (node_id, workspace_id, ordinal, content)
SELECT t.id, $1,
       t.first_ordinal + row_number() OVER (PARTITION BY i.name ORDER BY i.idx) - 1,
       i.content
FROM input i
JOIN taken t ON t.name = i.name
RETURNING node_id, ordinal, content
