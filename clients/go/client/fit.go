package client

import (
	"unicode"
	"unicode/utf8"

	"librarian-svc/clients/go/api"
)

// The Librarian's request limits on search hits: contracts/limits.py (LibrarianLimits), the README's
// "Request limits" table. A request over one of them is 422 (a snippet, a round) or 413 (a total across
// search_history), which ends the loop. A test in tests/clients keeps these equal to contracts/limits.py.
const (
	MaxSnippetChars      = 8000   // characters of one hit's snippet (snippet_chars)
	MaxHitsPerRound      = 300    // hits in one round's results (hits_per_round)
	MaxHitsTotal         = 1000   // hits across every round of search_history (hits_total)
	MaxSnippetCharsTotal = 300000 // characters of every snippet across search_history (snippet_chars_total)
)

// SentenceTailChars is how far before MaxSnippetChars CutSnippet looks for a chunk's last sentence end
// (reference_orchestrator/loop.py's SENTENCE_TAIL_CHARS).
const SentenceTailChars = 2000

// FitRound keeps the hits of one round (a ranked list per query, best first) that the service accepts after
// history (the rounds already sent): at most MaxHitsPerRound, and no more hits or snippet characters than
// history leaves of MaxHitsTotal and MaxSnippetCharsTotal. Hits are taken rank by rank across the lists
// (every list's first hit, then every list's second, ...), so each query keeps its best hits. A hit whose
// snippet does not fit the characters left is dropped, never cut: "…高さは333メートル" cut to "…高さは33" reads
// as a second version of the passage that disagrees. A shorter hit after it that fits is still kept; nothing
// is kept once no hit or no character is left. The hits kept come back in their lists' order, each list's
// together (the service ranks a query's hits by their position in the round), never nil.
// Characters are counted as the service counts them (Unicode code points). Snippets longer than
// MaxSnippetChars are not cut here: see CutSnippet.
// This is reference_orchestrator/loop.py's fit_round.
func FitRound(lists [][]api.SearchHit, history []api.SearchRound) []api.SearchHit {
	hitsLeft, charsLeft := MaxHitsTotal, MaxSnippetCharsTotal
	for _, r := range history {
		hitsLeft -= len(r.Results)
		for _, h := range r.Results {
			charsLeft -= utf8.RuneCountInString(h.Snippet)
		}
	}
	if hitsLeft > MaxHitsPerRound {
		hitsLeft = MaxHitsPerRound
	}
	kept := make([][]api.SearchHit, len(lists))
ranks:
	for rank, more := 0, true; more; rank++ {
		more = false
		for i, hits := range lists {
			if rank >= len(hits) {
				continue
			}
			more = true
			if hitsLeft <= 0 || charsLeft <= 0 {
				break ranks
			}
			if n := utf8.RuneCountInString(hits[rank].Snippet); n <= charsLeft {
				kept[i] = append(kept[i], hits[rank])
				hitsLeft, charsLeft = hitsLeft-1, charsLeft-n
			}
		}
	}
	results := []api.SearchHit{}
	for _, hits := range kept {
		results = append(results, hits...)
	}
	return results
}

// CutSnippet is a chunk's text as one hit's snippet: whole when it has at most MaxSnippetChars characters,
// else cut after its last sentence end in the SentenceTailChars characters before the limit, else at the
// limit. A sentence end is 。！？ or a newline, always; . ． ! ? only when no digit or Latin letter follows
// (3.14, example.com end nothing). A cut inside a sentence can leave a figure's first digits ("高さは33" of
// "333メートル"), which reads as a claim the chunk does not make.
// This is reference_orchestrator/loop.py's cut_snippet.
func CutSnippet(text string) string {
	if utf8.RuneCountInString(text) <= MaxSnippetChars {
		return text
	}
	r := []rune(text)
	for i := MaxSnippetChars - 1; i >= MaxSnippetChars-SentenceTailChars; i-- {
		switch next := r[i+1]; r[i] {
		case '。', '！', '？', '\n':
			return string(r[:i+1])
		case '.', '．', '!', '?':
			if !unicode.IsDigit(next) && !(next < utf8.RuneSelf && unicode.IsLetter(next)) {
				return string(r[:i+1])
			}
		}
	}
	return string(r[:MaxSnippetChars])
}

// fitHits is what Loop sends of the hits a Searcher returned: each snippet cut to MaxSnippetChars
// (CutSnippet), then the hits, as one list in the order given, fitted to what history leaves (FitRound).
func fitHits(hits []api.SearchHit, history []api.SearchRound) []api.SearchHit {
	cut := make([]api.SearchHit, len(hits))
	for i, h := range hits {
		h.Snippet = CutSnippet(h.Snippet)
		cut[i] = h
	}
	return FitRound([][]api.SearchHit{cut}, history)
}
