-- An inverted file over a perspective's observation vectors once it holds many (sqlite-vec's
-- vec0 tables scan every vector of a perspective: 1.4 s a search at a million). A set of
-- lists is built in the background (src/vector_lists.rs): centroids placed by k-means, then
-- every vector filed under its nearest centroid with an 8-bit code of itself; a search reads
-- the codes of the lists nearest the query and re-scores the best from `embeddings`. A set
-- serves once `ready`; a newer one replaces it as the perspective grows.
-- AUTOINCREMENT: a set's id is never reused, so centroids a process keeps by id stay its.
CREATE TABLE vector_list_sets (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    perspective_id  INTEGER NOT NULL REFERENCES perspectives (id) ON DELETE CASCADE,
    model           TEXT    NOT NULL,
    dims            INTEGER NOT NULL,
    -- Vectors of the perspective and model when the set was built.
    vectors         INTEGER NOT NULL,
    ready           INTEGER NOT NULL DEFAULT 0,
    -- Microseconds since the epoch: a set not ready ten minutes on was left by a builder
    -- that stopped, and is deleted by the next.
    created_at      INTEGER NOT NULL
);
CREATE INDEX vector_list_sets_perspective ON vector_list_sets (perspective_id, model);

-- The unit centroid of each list (little-endian f32s).
CREATE TABLE vector_lists (
    set_id    INTEGER NOT NULL REFERENCES vector_list_sets (id) ON DELETE CASCADE,
    list      INTEGER NOT NULL,
    centroid  BLOB    NOT NULL,
    PRIMARY KEY (set_id, list)
) WITHOUT ROWID;

-- Each vector's list and code: a little-endian f32 scale, then one signed byte a dimension
-- (the unit vector's components ÷ scale). A list's entries are stored together.
CREATE TABLE vector_list_entries (
    set_id        INTEGER NOT NULL,
    list          INTEGER NOT NULL,
    embedding_id  INTEGER NOT NULL,
    code          BLOB    NOT NULL,
    PRIMARY KEY (set_id, list, embedding_id)
) WITHOUT ROWID;
CREATE INDEX vector_list_entries_embedding ON vector_list_entries (embedding_id);

CREATE TRIGGER embeddings_delete_list_entries AFTER DELETE ON embeddings BEGIN
    DELETE FROM vector_list_entries WHERE embedding_id = OLD.id;
END;
CREATE TRIGGER vector_list_sets_delete_entries AFTER DELETE ON vector_list_sets BEGIN
    DELETE FROM vector_list_entries WHERE set_id = OLD.id;
END;
