-- One queries_text entry -> its best chunks.   $1 = the entry (text), $2 = how many rows (integer).
--
-- An entry is key terms separated by whitespace (a phrase written without spaces is one term). Terms
-- and chunks are compared after NFKC folding and lower-casing, as substrings, so Japanese needs no
-- word segmentation. A chunk is a hit when it contains at least one of the entry's terms of three or
-- more characters: the trigram index finds those. An entry with no such term (東京 大阪) selects on all
-- of its terms with a sequential scan instead, because pg_trgm cannot index one- or two-character
-- strings. Hits rank by how many distinct terms of the entry they contain (short terms count here
-- too), then shorter chunks first: score = matched terms + 100 / (100 + characters), the fraction in
-- (0, 1) only ordering chunks with the same number of matched terms.
WITH terms AS (
  SELECT DISTINCT term
  FROM unnest(regexp_split_to_array(lower(normalize($1::text, NFKC)), '\s+')) AS term
  WHERE term <> ''
), hits AS (
  SELECT c.document_id, c.page, c.chunk_id, c.text, c.search_text
  FROM chunks AS c
  WHERE c.search_text LIKE ANY (ARRAY(
    SELECT '%' || replace(replace(replace(term, '\', '\\'), '%', '\%'), '_', '\_') || '%'
    FROM terms
    WHERE char_length(term) >= 3
  ))
  UNION ALL
  SELECT c.document_id, c.page, c.chunk_id, c.text, c.search_text
  FROM chunks AS c
  WHERE NOT EXISTS (SELECT FROM terms WHERE char_length(term) >= 3)
    AND EXISTS (SELECT FROM terms WHERE strpos(c.search_text, terms.term) > 0)
)
SELECT h.document_id,
       h.page,
       h.chunk_id,
       h.text,
       (matched.terms + 100.0 / (100 + char_length(h.search_text)))::double precision AS score
FROM hits AS h
CROSS JOIN LATERAL (
  SELECT count(*) AS terms FROM terms WHERE strpos(h.search_text, terms.term) > 0
) AS matched
ORDER BY score DESC, h.chunk_id
LIMIT $2::integer;
