-- Late interaction (engram_domain::late_interaction): beside each vector, the packed signs of
-- the vectors of the content tokens of the text it was made from, one bit per dimension, token
-- after token; NULL from a model that gives no token vectors (Ollama's).
ALTER TABLE embeddings ADD COLUMN token_signs bytea;

-- The built-in model gives token signs: the vectors it made before they were kept are made
-- again, once, by the indexer (an emptied hash and an unknown source time make them stale);
-- searches use the old vectors until then.
UPDATE embeddings SET text_hash = '\x', source_updated_at = '-infinity' WHERE model LIKE 'local/%';
