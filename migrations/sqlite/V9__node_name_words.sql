-- "Did you mean": every word of every node name (lowercased, split at whatever is not a
-- letter or digit: `engram_name_words()`, the domain's own split, registered on every
-- connection), so the names sharing words with a name that was not found, or words that
-- begin alike, are a few index range scans. Kept by the triggers below; node names never
-- change in place today, but a rename would keep them too.
CREATE TABLE node_name_words (
    workspace_id  INTEGER NOT NULL,
    word          TEXT NOT NULL,
    node_id       INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, word, node_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX node_name_words_node ON node_name_words (node_id);

CREATE TRIGGER node_name_words_insert AFTER INSERT ON nodes BEGIN
    INSERT OR IGNORE INTO node_name_words (workspace_id, word, node_id)
    SELECT NEW.workspace_id, w.value, NEW.id FROM json_each(engram_name_words(NEW.name)) AS w;
END;

CREATE TRIGGER node_name_words_rename AFTER UPDATE OF name ON nodes
WHEN NEW.name IS NOT OLD.name BEGIN
    DELETE FROM node_name_words WHERE node_id = NEW.id;
    INSERT OR IGNORE INTO node_name_words (workspace_id, word, node_id)
    SELECT NEW.workspace_id, w.value, NEW.id FROM json_each(engram_name_words(NEW.name)) AS w;
END;

INSERT OR IGNORE INTO node_name_words (workspace_id, word, node_id)
SELECT n.workspace_id, w.value, n.id FROM nodes n, json_each(engram_name_words(n.name)) AS w;
