-- The embedding column for queries_vector (run after schema.sql, where pgvector is installed).
-- The dimension must equal the embedder's: 512 is the service's default EMBEDDING_DIM, and the
-- reference orchestrator embeds chunks and queries with the service's embedded hashing embedder.
CREATE EXTENSION IF NOT EXISTS vector;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding vector(512);

-- Approximate nearest neighbours by cosine distance (the `<=>` operator in search_vector.sql).
CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops);
