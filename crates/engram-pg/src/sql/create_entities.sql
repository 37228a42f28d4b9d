-- $1 workspace id, $2 jsonb array of {name, entity_type, summary, tags, observations}.
-- Inserts the names not taken yet with their observations (ordinals 1..n, counter n+1).
-- Returns one row per input entity, in input order; `created_at` is NULL for names that
-- already existed (looked up by a second statement, which sees concurrent commits).
WITH input AS (
    SELECT e.name, e.entity_type, e.summary, coalesce(e.tags, '{}') AS tags,
           coalesce(e.observations, '{}') AS observations, i.idx
    FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS i (entity, idx),
         jsonb_to_record(i.entity) AS e (name text, entity_type text, summary text,
                                          tags text[], observations text[])
), inserted AS (
    INSERT INTO nodes (workspace_id, name, entity_type, summary, summary_updated_at, tags,
                       next_ordinal)
    SELECT $1, name, entity_type, summary, CASE WHEN summary IS NOT NULL THEN now() END, tags,
           cardinality(observations) + 1
    FROM input
    -- Names in one order for every call, so overlapping batches wait on each other's unique
    -- index entries instead of deadlocking.
    ORDER BY name
    ON CONFLICT (workspace_id, name) DO NOTHING
    RETURNING id, name, entity_type, created_at
), added AS (
    INSERT INTO observations (node_id, workspace_id, ordinal, content)
    SELECT n.id, $1, o.ordinal, o.content
    FROM inserted n
    JOIN input i ON i.name = n.name
    CROSS JOIN LATERAL unnest(i.observations) WITH ORDINALITY AS o (content, ordinal)
)
SELECT i.name, n.entity_type, n.created_at
FROM input i
LEFT JOIN inserted n ON n.name = i.name
ORDER BY i.idx
