-- $1 workspace id. Pairs (source, target) where the source's observations mention the
-- target's whole name (case-insensitive, not inside a longer word) and no relation links the
-- two in either direction. Candidates come from the full-text index (the name as a phrase);
-- a regular expression then checks the exact words. Names made only of stop words have an
-- empty phrase and are matched by the regular expression alone.
WITH targets AS (
    SELECT id, name, phraseto_tsquery('english', name) AS phrase,
           '(^|[^[:alnum:]_])'
           || regexp_replace(name, '([][\\.^$*+?(){}|-])', '\\\1', 'g')
           || '($|[^[:alnum:]_])' AS pattern
    FROM nodes
    WHERE workspace_id = $1
), mentions AS (
    SELECT o.node_id AS source_id, t.id AS target_id, t.name AS target_name, o.content, t.pattern
    FROM targets t
    JOIN observations o ON o.workspace_id = $1 AND o.content_tsv @@ t.phrase
    WHERE numnode(t.phrase) > 0 AND (o.valid_to IS NULL OR o.valid_to > now())
  UNION ALL
    SELECT o.node_id, t.id, t.name, o.content, t.pattern
    FROM targets t
    JOIN observations o ON o.workspace_id = $1
    WHERE numnode(t.phrase) = 0 AND (o.valid_to IS NULL OR o.valid_to > now())
)
SELECT s.name AS node, m.target_name AS referenced_name, count(*) AS reference_count
FROM mentions m
JOIN nodes s ON s.id = m.source_id
WHERE m.source_id <> m.target_id
  AND m.content ~* m.pattern
  AND NOT EXISTS (
      SELECT 1 FROM relations r
      WHERE (r.from_node_id = m.source_id AND r.to_node_id = m.target_id)
         OR (r.from_node_id = m.target_id AND r.to_node_id = m.source_id)
  )
GROUP BY s.name, m.target_name
ORDER BY s.name, m.target_name
