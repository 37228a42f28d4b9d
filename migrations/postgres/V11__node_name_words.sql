-- "Did you mean": every word of every node name (lowercased, split at whatever is not a
-- letter or digit), so the names sharing words with a name that was not found, or words
-- that begin alike, are a few index range scans. `word` sorts bytewise (COLLATE "C") so a
-- range is a prefix whatever the database's collation. Kept by the triggers below; node
-- names never change in place today, but a rename would keep them too.
CREATE TABLE node_name_words (
    workspace_id  bigint NOT NULL,
    word          text COLLATE "C" NOT NULL,
    node_id       bigint NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, word, node_id)
);
CREATE INDEX node_name_words_node ON node_name_words (node_id);

CREATE FUNCTION node_name_words_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO node_name_words (workspace_id, word, node_id)
    SELECT DISTINCT n.workspace_id, w.word, n.id
    FROM new_rows n, regexp_split_to_table(lower(n.name), '[^[:alnum:]]+') AS w (word)
    WHERE w.word <> '';
    RETURN NULL;
END $$;

CREATE TRIGGER node_name_words_insert AFTER INSERT ON nodes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION node_name_words_insert();

CREATE FUNCTION node_name_words_rename() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM node_name_words WHERE node_id = NEW.id;
    INSERT INTO node_name_words (workspace_id, word, node_id)
    SELECT DISTINCT NEW.workspace_id, w.word, NEW.id
    FROM regexp_split_to_table(lower(NEW.name), '[^[:alnum:]]+') AS w (word)
    WHERE w.word <> '';
    RETURN NULL;
END $$;

CREATE TRIGGER node_name_words_rename AFTER UPDATE OF name ON nodes
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION node_name_words_rename();

INSERT INTO node_name_words (workspace_id, word, node_id)
SELECT DISTINCT n.workspace_id, w.word, n.id
FROM nodes n, regexp_split_to_table(lower(n.name), '[^[:alnum:]]+') AS w (word)
WHERE w.word <> '';
