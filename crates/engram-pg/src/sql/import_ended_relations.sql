-- $1 workspace id, $2 from names, $3 to names, $4 relation types, $5 creation times (NULL:
-- their start), $6 since when they held, $7 when they ended (parallel arrays of distinct
-- ended relations, in input order). Inserts into `ended_relations` those whose endpoints
-- exist and that the workspace does not hold ended at the same time already; an end is
-- recorded, as far as anyone can tell, when it took effect. One row per input: which
-- endpoints are missing and whether it was created now.
WITH input AS (
    SELECT from_name, to_name, relation_type, created_at, valid_from, valid_to, idx
    FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                $7::timestamptz[])
         WITH ORDINALITY AS t (from_name, to_name, relation_type, created_at, valid_from,
                               valid_to, idx)
), resolved AS (
    SELECT i.*, f.id AS from_id, t.id AS to_id
    FROM input i
    LEFT JOIN nodes f ON f.workspace_id = $1 AND f.name = i.from_name
    LEFT JOIN nodes t ON t.workspace_id = $1 AND t.name = i.to_name
), inserted AS (
    INSERT INTO ended_relations (workspace_id, from_node_id, to_node_id, relation_type,
                                 created_at, valid_from, valid_to, recorded_at)
    SELECT $1, r.from_id, r.to_id, r.relation_type, coalesce(r.created_at, r.valid_from),
           r.valid_from, r.valid_to, r.valid_to
    FROM resolved r
    WHERE r.from_id IS NOT NULL AND r.to_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ended_relations e
                      WHERE e.from_node_id = r.from_id AND e.to_node_id = r.to_id
                        AND e.relation_type = r.relation_type AND e.valid_to = r.valid_to)
    ORDER BY r.idx
    RETURNING from_node_id, to_node_id, relation_type, valid_to
)
SELECT r.from_id IS NULL AS from_missing,
       r.to_id IS NULL AS to_missing,
       ins.from_node_id IS NOT NULL AS created
FROM resolved r
LEFT JOIN inserted ins
       ON ins.from_node_id = r.from_id AND ins.to_node_id = r.to_id
      AND ins.relation_type = r.relation_type AND ins.valid_to = r.valid_to
ORDER BY r.idx
