-- Node vectors (node_embeddings) are read whole by the consolidation report and paired in
-- memory; no query orders by them, so their HNSW indexes, built per dimension at runtime by
-- earlier versions (`node_embeddings_hnsw_<dims>`), were pure write cost. Drop them.
DO $$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT indexname FROM pg_indexes
        WHERE tablename = 'node_embeddings' AND indexname LIKE 'node\_embeddings\_hnsw\_%'
    LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I', found.indexname);
    END LOOP;
END $$;
