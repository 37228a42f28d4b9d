-- $1 workspace id, $2 jsonb array of {name, entity_type, summary, tags, observations}, each
-- observation {content, valid_from?, expires_at?}.
-- Inserts the names not taken yet with their observations (ordinals 1..n, counter n+1).
-- Returns one row per input entity, in input order; `created_at` is NULL for names that
-- already existed (looked up by a second statement, which sees concurrent commits).
WITH input AS (
    SELECT e.name, e.entity_type, e.summary, coalesce(e.tags, '{}') AS tags,
           coalesce(e.observations, '[]') AS observations, i.idx
    FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS i (entity, idx),
         jsonb_to_record(i.entity) AS e (name text, entity_type text, summary text,
                                          tags text[], observations jsonb)
), inserted AS (
    INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at, tags,
                       next_ordinal)
    SELECT $1, name, entity_type, summary, CASE WHEN summary IS NOT NULL THEN now() END, tags,
           jsonb_array_length(observations) + 1
    FROM input
    -- A node's alias answers for the node: it is not created again.
    WHERE NOT EXISTS (SELECT 1 FROM node_aliases a WHERE a.workspace_id = $1 AND a.alias = input.name)
    -- Names in one order for every call, so overlapping batches wait on each other's unique
    -- index entries instead of deadlocking.
    ORDER BY name
    ON CONFLICT (workspace_id, name) DO NOTHING
    RETURNING id, name, entity_type, created_at
), added AS (
    INSERT INTO observations (node_id, workspace_id, ordinal, content, valid_from, valid_to,
                              expires_at)
    SELECT n.id, $1, o.ordinal, o.fact ->> 'content',
           coalesce((o.fact ->> 'valid_from')::timestamptz, now()),
           (o.fact ->> 'expires_at')::timestamptz, (o.fact ->> 'expires_at')::timestamptz
    FROM inserted n
    JOIN input i ON i.name = n.name
    CROSS JOIN LATERAL jsonb_array_elements(i.observations) WITH ORDINALITY AS o (fact, ordinal)
)
SELECT i.name, n.entity_type, n.created_at
FROM input i
LEFT JOIN inserted n ON n.name = i.name
ORDER BY i.idx
