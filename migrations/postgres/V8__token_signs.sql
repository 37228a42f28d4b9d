-- Late interaction (engram_domain::late_interaction): beside each vector, the packed signs of
-- the vectors of the content tokens of the text it was made from, one bit per dimension, token
-- after token; NULL from a model that gives no token vectors (Ollama's).
ALTER TABLE embeddings ADD COLUMN token_signs bytea;

-- A row with its vector (1.5 kB at 384 dimensions) and a short text's signs (about 1 kB)
-- passes the 2 kB at which PostgreSQL moves values out of line by default, and the first it
-- moves is the vector (storage EXTERNAL): reading the candidates' vectors then costs a TOAST
-- lookup each (hybrid p50 14.5 → 19 ms, embedding 2.2 → 5.7 ms on LoCoMo). Rows stay whole up
-- to a page; past it (signs of a text of hundreds of tokens) the signs go out of line first,
-- uncompressed (random bits do not compress).
ALTER TABLE embeddings SET (toast_tuple_target = 8160);
ALTER TABLE embeddings ALTER COLUMN token_signs SET STORAGE EXTERNAL;

-- The built-in model gives token signs: the vectors it made before they were kept are made
-- again, once, by the indexer (an emptied hash and an unknown source time make them stale);
-- searches use the old vectors until then.
UPDATE embeddings SET text_hash = '\x', source_updated_at = '-infinity' WHERE model LIKE 'local/%';
