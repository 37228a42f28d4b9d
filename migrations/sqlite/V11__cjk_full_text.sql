-- Chinese and Japanese found by full text: FTS5's tokenizer takes a run of such characters
-- (written without spaces) as one token, so a query shared no token with the text it was
-- about. An observation is now indexed as its text followed by the character pairs of each
-- such run (`engram_with_cjk`, the domain's `search::words::with_cjk_bigrams`), and a query
-- searched the same way. Texts without such characters are indexed as before. The triggers
-- write and delete the same expression (an external-content index must be told the text it
-- indexed); every row is indexed again. PostgreSQL: V13.

DROP TRIGGER observations_insert_writes;
DROP TRIGGER observations_update_writes;
DROP TRIGGER observations_delete_writes;

CREATE TRIGGER observations_insert_writes AFTER INSERT ON observations
BEGIN
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, engram_with_cjk(NEW.content));
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = NEW.node_id AND updated_at IS NOT engram_now();
END;

CREATE TRIGGER observations_update_writes AFTER UPDATE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, engram_with_cjk(OLD.content));
    INSERT INTO observations_fts (rowid, content) VALUES (NEW.id, engram_with_cjk(NEW.content));
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = NEW.node_id AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'update', engram_now()
    FROM nodes n WHERE n.id = NEW.node_id;
END;

CREATE TRIGGER observations_delete_writes AFTER DELETE ON observations
BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, content)
    VALUES ('delete', OLD.id, engram_with_cjk(OLD.content));
    UPDATE nodes SET updated_at = engram_now()
    WHERE id = OLD.node_id AND updated_at IS NOT engram_now();
    INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at)
    SELECT n.workspace_id, n.id, n.name, 'observation', 'delete', engram_now()
    FROM nodes n WHERE n.id = OLD.node_id;
END;

INSERT INTO observations_fts (observations_fts) VALUES ('delete-all');
INSERT INTO observations_fts (rowid, content)
SELECT id, engram_with_cjk(content) FROM observations;
