-- $1 node id, $2 only before this time (NULL: up to now), $3 page size. A node's history,
-- newest first, read from what the store keeps: the node's creation, each observation's first
-- text, its replaced versions and its end, the relations touching it (current and ended), the
-- reflections about it or its relations, and
-- the events of what leaves no row: deletions (no text), and the node's own changes (one entry
-- per field an update event names). A `relation delete` event recorded with a relation's end
-- is the end, not a deletion. The page is `$3` entries and any more at the last one's instant.
-- `written` is when the entry was written (its transaction's `now()`, which its events share),
-- for its author: the time of an end recorded later is not; an expiry was written by no one.
WITH entries AS (
    SELECT n.created_at AS at, 'created' AS operation, NULL::bigint AS ordinal,
           NULL::text AS content, NULL::text AS old_content, NULL::text AS from_name,
           NULL::text AS to_name, NULL::text AS relation_type, NULL::timestamptz AS valid_from,
           NULL::timestamptz AS valid_to, n.created_at AS written
    FROM nodes n WHERE n.id = $1
  UNION ALL
    SELECT o.created_at, 'observation_added', o.ordinal,
           coalesce((SELECT v.content FROM observation_versions v WHERE v.observation_id = o.id
                     ORDER BY v.replaced_at, v.id LIMIT 1), o.content),
           NULL, NULL, NULL, NULL, NULL, NULL, o.created_at
    FROM observations o WHERE o.node_id = $1
  UNION ALL
    SELECT v.replaced_at, 'observation_replaced', o.ordinal,
           coalesce((SELECT w.content FROM observation_versions w
                     WHERE w.observation_id = v.observation_id
                       AND (w.replaced_at, w.id) > (v.replaced_at, v.id)
                     ORDER BY w.replaced_at, w.id LIMIT 1), o.content),
           v.content, NULL, NULL, NULL, NULL, NULL, v.replaced_at
    FROM observation_versions v JOIN observations o ON o.id = v.observation_id
    WHERE o.node_id = $1
  UNION ALL
    SELECT o.valid_to,
           CASE WHEN o.expires_at IS NULL THEN 'observation_ended' ELSE 'observation_expired' END,
           o.ordinal, o.content, NULL, NULL, NULL, NULL, NULL, NULL,
           CASE WHEN o.expires_at IS NULL THEN o.valid_to END
    FROM observations o WHERE o.node_id = $1 AND o.valid_to <= now()
  UNION ALL
    SELECT r.created_at, 'relation_created', NULL, NULL, NULL, f.name, t.name, r.relation_type,
           r.valid_from, NULL, r.created_at
    FROM relations r JOIN nodes f ON f.id = r.from_node_id JOIN nodes t ON t.id = r.to_node_id
    WHERE r.from_node_id = $1 OR r.to_node_id = $1
  UNION ALL
    SELECT e.at, e.operation, NULL, NULL, NULL, f.name, t.name, r.relation_type, r.valid_from,
           r.valid_to, e.written
    FROM ended_relations r
    JOIN nodes f ON f.id = r.from_node_id JOIN nodes t ON t.id = r.to_node_id
    CROSS JOIN LATERAL (VALUES (r.created_at, 'relation_created', r.created_at),
                               (r.valid_to, 'relation_ended', r.recorded_at))
         AS e (at, operation, written)
    WHERE r.from_node_id = $1 OR r.to_node_id = $1
  UNION ALL
    SELECT e.at, e.subject || '_deleted', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.at
    FROM events e
    WHERE e.node_id = $1 AND e.operation = 'delete' AND e.subject IN ('observation', 'relation')
      AND NOT (e.subject = 'relation' AND EXISTS (
          SELECT 1 FROM ended_relations r WHERE r.from_node_id = $1 AND r.recorded_at = e.at))
  UNION ALL
    -- `merged:<source>` names a node merged into this one, `split:<part>` a part split off
    -- (the name, which may hold commas, in `content`); other details list the fields an update
    -- changed.
    SELECT e.at,
           CASE WHEN e.detail ~ '^(merged|split):' THEN split_part(e.detail, ':', 1)
                ELSE coalesce(f.field || '_set', 'updated') END,
           NULL, CASE WHEN e.detail ~ '^(merged|split):' THEN substr(e.detail, strpos(e.detail, ':') + 1) END,
           NULL, NULL, NULL, NULL, NULL, NULL, e.at
    FROM events e
    LEFT JOIN LATERAL unnest(CASE WHEN e.detail ~ '^(merged|split):' THEN ARRAY[NULL::text]
                                  ELSE string_to_array(nullif(e.detail, ''), ',') END)
         AS f (field) ON true
    WHERE e.node_id = $1 AND e.subject = 'node' AND e.operation = 'update'
  UNION ALL
    -- Reflections about the node or about a relation of it (the relation's ends and type).
    SELECT r.created_at, 'reflection_added', NULL, r.content, NULL, f.name, t.name,
           r.relation_type, NULL, NULL, r.created_at
    FROM reflections r
    LEFT JOIN nodes f ON f.id = r.from_node_id LEFT JOIN nodes t ON t.id = r.to_node_id
    WHERE r.node_id = $1 OR r.from_node_id = $1 OR r.to_node_id = $1
), page AS (
    SELECT at FROM entries
    WHERE $2::timestamptz IS NULL OR at < $2
    ORDER BY at DESC LIMIT $3
)
-- Each entry's author: that of an event its transaction recorded in the node's workspace
-- (`events.at` is the transaction's `now()`, as is every row's time it wrote).
SELECT x.*, (SELECT e.author FROM events e
             WHERE e.workspace_id = (SELECT n.workspace_id FROM nodes n WHERE n.id = $1)
               AND e.at = x.written AND e.author IS NOT NULL LIMIT 1) AS author
FROM entries x
WHERE ($2::timestamptz IS NULL OR at < $2) AND at >= (SELECT min(at) FROM page)
ORDER BY at DESC, ordinal DESC NULLS LAST, operation
