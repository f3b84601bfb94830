// Package corpus is a toy client.Searcher over snippets held in memory, for the example and the
// tests: the real orchestrator runs PostgreSQL full-text search for queries_text and pgvector for
// queries_vector instead.
package corpus

import (
	"context"
	"sort"
	"strings"
	"unicode"

	"librarian-svc/clients/go/api"
)

// Chunk is one searchable snippet of a document, owned by one subject.
type Chunk struct {
	SubjectID  string
	DocumentID string
	Page       int64
	ChunkID    string
	Text       string
}

// Memory matches query terms as case-insensitive substrings: a chunk's score for a query is the
// share of the query's terms it contains. Each query keeps its TopK best chunks (5 when zero);
// a chunk found by several queries is returned once, with its best score and that query.
type Memory struct {
	Chunks []Chunk
	TopK   int
}

// Search runs every query of the SEARCH over the chunks of subjectID. Snippets are the chunks' text
// whole: client.Loop cuts them to the contract's limit and fits the round to the history (client.FitRound).
func (m *Memory) Search(ctx context.Context, subjectID string, search *api.LibrarianSearchAction) ([]api.SearchHit, error) {
	best := map[string]api.SearchHit{}
	run := func(queries []string, retrieval api.Retrieval) {
		for _, query := range queries {
			for _, hit := range m.query(subjectID, query, retrieval) {
				if old, seen := best[*hit.ChunkID]; !seen || *hit.Score > *old.Score {
					best[*hit.ChunkID] = hit
				}
			}
		}
	}
	run(search.QueriesText, api.RetrievalText)
	run(search.QueriesVector, api.RetrievalVector)
	hits := make([]api.SearchHit, 0, len(best))
	for _, hit := range best {
		hits = append(hits, hit)
	}
	sort.Slice(hits, func(i, j int) bool {
		if *hits[i].Score != *hits[j].Score {
			return *hits[i].Score > *hits[j].Score
		}
		return *hits[i].ChunkID < *hits[j].ChunkID
	})
	return hits, ctx.Err()
}

func (m *Memory) query(subjectID, query string, retrieval api.Retrieval) []api.SearchHit {
	terms := Terms(query)
	if len(terms) == 0 {
		return nil
	}
	var hits []api.SearchHit
	for i := range m.Chunks {
		chunk := &m.Chunks[i]
		if chunk.SubjectID != subjectID {
			continue
		}
		text := strings.ToLower(chunk.Text)
		found := 0
		for _, term := range terms {
			if strings.Contains(text, term) {
				found++
			}
		}
		if found == 0 {
			continue
		}
		score := float64(found) / float64(len(terms))
		page, chunkID, r := chunk.Page, chunk.ChunkID, retrieval
		hits = append(hits, api.SearchHit{
			DocumentID: chunk.DocumentID,
			Page:       &page,
			ChunkID:    &chunkID,
			Snippet:    chunk.Text,
			Score:      &score,
			Retrieval:  &r,
			Metadata:   map[string]interface{}{"query": query},
		})
	}
	sort.SliceStable(hits, func(i, j int) bool { return *hits[i].Score > *hits[j].Score })
	topK := m.TopK
	if topK <= 0 {
		topK = 5
	}
	if len(hits) > topK {
		hits = hits[:topK]
	}
	return hits
}

// Terms splits a query into lower-case words, dropping punctuation and words of one or two letters.
func Terms(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	terms := words[:0]
	for _, word := range words {
		if len([]rune(word)) > 2 {
			terms = append(terms, word)
		}
	}
	return terms
}

// Landmarks is a small corpus (subject "landmarks") for the example and the live test.
func Landmarks() []Chunk {
	const subject = "landmarks"
	return []Chunk{
		{subject, "tokyo-tower", 1, "tokyo-tower#1", "Tokyo Tower is a communications and observation tower in the Shiba-koen district of Minato, Tokyo, completed in 1958."},
		{subject, "tokyo-tower", 3, "tokyo-tower#3", "Tokyo Tower is 333 metres tall, which made it the tallest structure in Japan until 2010."},
		{subject, "tokyo-tower", 4, "tokyo-tower#4", "The tower is painted white and international orange to comply with air safety regulations."},
		{subject, "eiffel-tower", 2, "eiffel-tower#2", "The Eiffel Tower in Paris is 330 metres tall including its antennas."},
		{subject, "mount-fuji", 1, "mount-fuji#1", "Mount Fuji is the tallest mountain in Japan at 3,776 metres."},
		{subject, "skytree", 1, "skytree#1", "Tokyo Skytree, 634 metres tall, replaced Tokyo Tower as the tallest structure in Japan in 2010."},
		{"other-subject", "secret", 1, "secret#1", "Tokyo Tower secrets that a search for another subject must never return."},
	}
}
