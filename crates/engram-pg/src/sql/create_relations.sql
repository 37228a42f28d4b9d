-- $1 workspace id, $2 from names, $3 to names, $4 relation types, $5 creation times (NULL:
-- now), $6 since when they hold (NULL: their creation; parallel arrays of distinct
-- relations, in request order). Inserts those whose
-- endpoints exist and that do not exist yet. One row per input: which endpoints are missing
-- and whether it was created now.
WITH input AS (
    SELECT from_name, to_name, relation_type, created_at, valid_from, idx
    FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[])
         WITH ORDINALITY AS t (from_name, to_name, relation_type, created_at, valid_from, idx)
), resolved AS (
    SELECT i.*, f.id AS from_id, t.id AS to_id
    FROM input i
    LEFT JOIN nodes f ON f.workspace_id = $1 AND f.name = i.from_name
    LEFT JOIN nodes t ON t.workspace_id = $1 AND t.name = i.to_name
), inserted AS (
    INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type, created_at,
                           valid_from)
    SELECT $1, from_id, to_id, relation_type, coalesce(created_at, now()),
           coalesce(valid_from, created_at, now())
    FROM resolved
    WHERE from_id IS NOT NULL AND to_id IS NOT NULL
    ORDER BY idx
    ON CONFLICT (workspace_id, from_node_id, to_node_id, relation_type) DO NOTHING
    RETURNING from_node_id, to_node_id, relation_type
)
SELECT r.from_id IS NULL AS from_missing,
       r.to_id IS NULL AS to_missing,
       ins.from_node_id IS NOT NULL AS created
FROM resolved r
LEFT JOIN inserted ins
       ON ins.from_node_id = r.from_id AND ins.to_node_id = r.to_id
      AND ins.relation_type = r.relation_type
ORDER BY r.idx
