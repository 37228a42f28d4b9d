-- ?1 node id, ?2 only before this time (NULL: up to now), ?3 page size. A node's history,
-- newest first, read from what the store keeps: the node's creation, each observation's first
-- text, its replaced versions and its end, the relations touching it (current and ended), the
-- reflections about it or its relations, and
-- the events of what leaves no row: deletions (no text) and the node's own changes. The page is
-- ?3 entries and any more at the last one's instant. Times are microseconds.
-- A `relation delete` event recorded with a relation's end is the end, not a deletion; a
-- node's update event names the fields it changed (one entry each), or a node merged into it.
-- `written` is when the entry was written (its transaction's `engram_now()`, which its events
-- share), for its author: the time of an end recorded later is not; an expiry was written by
-- no one.
WITH entries (at, operation, ordinal, content, old_content, from_name, to_name, relation_type,
              valid_from, valid_to, written) AS (
    SELECT n.created_at, 'created', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, n.created_at
    FROM nodes n WHERE n.id = ?1
  UNION ALL
    SELECT o.created_at, 'observation_added', o.ordinal,
           coalesce((SELECT v.content FROM observation_versions v WHERE v.observation_id = o.id
                     ORDER BY v.replaced_at, v.id LIMIT 1), o.content),
           NULL, NULL, NULL, NULL, NULL, NULL, o.created_at
    FROM observations o WHERE o.node_id = ?1
  UNION ALL
    SELECT v.replaced_at, 'observation_replaced', o.ordinal,
           coalesce((SELECT w.content FROM observation_versions w
                     WHERE w.observation_id = v.observation_id
                       AND (w.replaced_at, w.id) > (v.replaced_at, v.id)
                     ORDER BY w.replaced_at, w.id LIMIT 1), o.content),
           v.content, NULL, NULL, NULL, NULL, NULL, v.replaced_at
    FROM observations o JOIN observation_versions v ON v.observation_id = o.id
    WHERE o.node_id = ?1
  UNION ALL
    SELECT o.valid_to,
           CASE WHEN o.expires_at IS NULL THEN 'observation_ended' ELSE 'observation_expired' END,
           o.ordinal, o.content, NULL, NULL, NULL, NULL, NULL, NULL,
           CASE WHEN o.expires_at IS NULL THEN o.valid_to END
    FROM observations o WHERE o.node_id = ?1 AND o.valid_to <= engram_now()
  UNION ALL
    SELECT r.created_at, 'relation_created', NULL, NULL, NULL, f.name, t.name, r.relation_type,
           r.valid_from, NULL, r.created_at
    FROM relations r JOIN nodes f ON f.id = r.from_node_id JOIN nodes t ON t.id = r.to_node_id
    WHERE r.from_node_id = ?1 OR r.to_node_id = ?1
  UNION ALL
    SELECT CASE k.operation WHEN 'relation_created' THEN r.created_at ELSE r.valid_to END,
           k.operation, NULL, NULL, NULL, f.name, t.name, r.relation_type, r.valid_from,
           r.valid_to,
           CASE k.operation WHEN 'relation_created' THEN r.created_at ELSE r.recorded_at END
    FROM ended_relations r
    JOIN nodes f ON f.id = r.from_node_id JOIN nodes t ON t.id = r.to_node_id
    CROSS JOIN (SELECT 'relation_created' AS operation UNION ALL SELECT 'relation_ended') k
    WHERE r.from_node_id = ?1 OR r.to_node_id = ?1
  UNION ALL
    SELECT e.at, e.subject || '_deleted', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e.at
    FROM events e
    WHERE e.node_id = ?1 AND e.operation = 'delete' AND e.subject IN ('observation', 'relation')
      AND NOT (e.subject = 'relation' AND EXISTS (
          SELECT 1 FROM ended_relations r WHERE r.from_node_id = ?1 AND r.recorded_at = e.at))
  UNION ALL
    -- `merged:<source>` names a node merged into this one (its name, which may hold commas, in
    -- `content`); other details list the fields an update changed.
    SELECT e.at,
           CASE WHEN e.detail LIKE 'merged:%' THEN 'merged'
                WHEN e.detail LIKE 'split:%' THEN 'split'
                ELSE coalesce(f.value || '_set', 'updated') END,
           NULL,
           CASE WHEN e.detail LIKE 'merged:%' OR e.detail LIKE 'split:%'
                THEN substr(e.detail, instr(e.detail, ':') + 1) END,
           NULL, NULL, NULL, NULL, NULL, NULL, e.at
    FROM events e
    LEFT JOIN json_each(CASE WHEN e.detail IS NULL OR e.detail = ''
                               OR e.detail LIKE 'merged:%' OR e.detail LIKE 'split:%'
                             THEN '[null]'
                             ELSE '["' || replace(e.detail, ',', '","') || '"]' END) AS f
    WHERE e.node_id = ?1 AND e.subject = 'node' AND e.operation = 'update'
  UNION ALL
    -- Reflections about the node or about a relation of it (the relation's ends and type).
    SELECT r.created_at, 'reflection_added', NULL, r.content, NULL, f.name, t.name,
           r.relation_type, NULL, NULL, r.created_at
    FROM reflections r
    LEFT JOIN nodes f ON f.id = r.from_node_id LEFT JOIN nodes t ON t.id = r.to_node_id
    WHERE r.node_id = ?1 OR r.from_node_id = ?1 OR r.to_node_id = ?1
), page AS (
    SELECT at FROM entries
    WHERE ?2 IS NULL OR at < ?2
    ORDER BY at DESC LIMIT ?3
)
-- Each entry's author: that of an event its transaction recorded in the node's workspace
-- (`events.at` is the transaction's `engram_now()`, as is every row's time it wrote).
SELECT x.*, (SELECT e.author FROM events e
             WHERE e.workspace_id = (SELECT n.workspace_id FROM nodes n WHERE n.id = ?1)
               AND e.at = x.written AND e.author IS NOT NULL LIMIT 1) AS author
FROM entries x
WHERE (?2 IS NULL OR at < ?2) AND at >= (SELECT min(at) FROM page)
ORDER BY at DESC, ordinal DESC NULLS LAST, operation
