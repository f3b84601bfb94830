-- The chunk table the Librarian's SEARCH actions run against (librarian-svc reference schema).
-- Needs PostgreSQL 13 or later and the pg_trgm extension (Debian: the `postgresql` package's contrib).
-- The database must use the UTF8 encoding and a UTF-8 LC_CTYPE (C.UTF-8, ja_JP.UTF-8, ...): under
-- LC_CTYPE=C pg_trgm treats Japanese characters as non-word characters, extracts no trigram from them and
-- every Japanese query matches nothing. The DO block below refuses such a database.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

DO $$
BEGIN
  IF cardinality(show_trgm('東京タワー')) = 0 THEN
    RAISE EXCEPTION 'pg_trgm extracts no trigrams from Japanese in this database: create it with ENCODING UTF8 and a UTF-8 LC_CTYPE such as C.UTF-8';
  END IF;
END
$$;

CREATE TABLE IF NOT EXISTS chunks (
  id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  document_id text    NOT NULL,            -- search hit `document_id`
  page        integer NOT NULL,            -- search hit `page` (paragraph index; 0 when the source has none)
  chunk_id    text    NOT NULL UNIQUE,     -- search hit `chunk_id`
  text        text    NOT NULL,            -- search hit `snippet`: the chunk as stored (Markdown)
  -- What queries_text terms are compared with: NFKC (full-width ASCII and half-width katakana folded)
  -- and lower case, the same folding the service applies to the terms it writes.
  search_text text    GENERATED ALWAYS AS (lower(normalize(text, NFKC))) STORED
);

-- Trigram index for queries_text: serves `search_text LIKE '%term%'` for terms of 3 or more characters.
CREATE INDEX IF NOT EXISTS chunks_search_text_trgm ON chunks USING gin (search_text gin_trgm_ops);
