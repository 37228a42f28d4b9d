-- $1 model, $2 observation ids, $3 perspective ids, $4 text hashes, $5 source times,
-- $6 vectors, $7 token signs (parallel arrays; rows whose observation is gone are skipped).
INSERT INTO embeddings (observation_id, perspective_id, workspace_id, model, dims, text_hash,
                        embedding, token_signs, source_updated_at, embedded_at)
SELECT r.observation_id, r.perspective_id, o.workspace_id, $1, vector_dims(r.embedding),
       r.text_hash, r.embedding, r.token_signs, r.source_updated_at, now()
FROM unnest($2::bigint[], $3::bigint[], $4::bytea[], $5::timestamptz[], $6::vector[],
            $7::bytea[])
     AS r (observation_id, perspective_id, text_hash, source_updated_at, embedding, token_signs)
JOIN observations o ON o.id = r.observation_id
ON CONFLICT (observation_id, perspective_id, model) DO UPDATE
SET dims = EXCLUDED.dims, text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding,
    token_signs = EXCLUDED.token_signs, source_updated_at = EXCLUDED.source_updated_at,
    embedded_at = now()
