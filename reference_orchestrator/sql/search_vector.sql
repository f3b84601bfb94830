-- One queries_vector entry -> its nearest chunks.   $1 = the entry's embedding in pgvector's text form
-- ('[0.012,-0.03,...]', 512 numbers, the same embedder as the chunks), $2 = how many rows (integer).
-- score = cosine similarity in [-1, 1]; higher is better. Served by the HNSW index of schema_vector.sql.
SELECT document_id,
       page,
       chunk_id,
       text,
       1 - (embedding <=> $1::vector) AS score
FROM chunks
WHERE embedding IS NOT NULL
ORDER BY embedding <=> $1::vector
LIMIT $2::integer;
