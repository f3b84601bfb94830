package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"librarian-svc/clients/go/api"
)

// fitCases are FitRound and CutSnippet cases with what reference_orchestrator/loop.py answers.
// tests/clients/test_go_client.py writes many of them (answered by the Python functions) to a file
// and names it in LIBRARIAN_PARITY_CASES; without it, the few below (answered by Python once) run.
type fitCases struct {
	Fit []struct {
		Lists   [][]string `json:"lists"`   // snippets, one ranked list per query
		History [][2]int   `json:"history"` // rounds sent so far: [hits, characters of each snippet]
		Kept    []string   `json:"kept"`    // "<list>/<rank>" of each hit kept, in the order returned
	} `json:"fit"`
	Cut []struct {
		Text string `json:"text"`
		Want string `json:"want"`
	} `json:"cut"`
}

const builtinFitCases = `{
 "fit": [
  {"lists": [["aaaaa"], [""], [""], ["bbbbb"], [""]], "history": [[1, 299990]], "kept": ["0/0", "1/0", "2/0", "3/0"]},
  {"lists": [["aaaaaaaaaaa", "aa"], ["ccc"]], "history": [[1, 299990]], "kept": ["0/1", "1/0"]},
  {"lists": [["a", "b", "c"], ["d"]], "history": [[998, 1]], "kept": ["0/0", "1/0"]},
  {"lists": [["東京タワー", "x"]], "history": [[1, 299995]], "kept": ["0/0"]},
  {"lists": [["a"]], "history": [[1000, 1]], "kept": []},
  {"lists": [["a"]], "history": [[1, 300001]], "kept": []}
 ],
 "cut": []
}`

func (c *fitCases) check(t *testing.T) {
	t.Helper()
	for n, tc := range c.Fit {
		lists := make([][]api.SearchHit, len(tc.Lists))
		for i, snippets := range tc.Lists {
			for rank, s := range snippets {
				lists[i] = append(lists[i], api.SearchHit{DocumentID: fmt.Sprintf("%d/%d", i, rank), Snippet: s})
			}
		}
		var history []api.SearchRound
		for _, r := range tc.History {
			round := api.SearchRound{Results: make([]api.SearchHit, r[0])}
			for i := range round.Results {
				round.Results[i].Snippet = strings.Repeat("h", r[1])
			}
			history = append(history, round)
		}
		kept := []string{}
		for _, h := range FitRound(lists, history) {
			kept = append(kept, h.DocumentID)
		}
		want := append([]string{}, tc.Kept...)
		if !reflect.DeepEqual(kept, want) {
			t.Errorf("fit case %d (lists %q, history %v): Go kept %v, Python %v", n, tc.Lists, tc.History, kept, want)
		}
	}
	for n, tc := range c.Cut {
		if got := CutSnippet(tc.Text); got != tc.Want {
			t.Errorf("cut case %d: Go kept %d characters ending %q, Python %d ending %q", n,
				utf8.RuneCountInString(got), tail(got), utf8.RuneCountInString(tc.Want), tail(tc.Want))
		}
	}
}

func firstRunes(s string, n int) string {
	return string([]rune(s)[:n])
}

func tail(s string) string {
	r := []rune(s)
	if len(r) > 8 {
		r = r[len(r)-8:]
	}
	return string(r)
}

func TestFitRoundAndCutSnippetMatchPython(t *testing.T) {
	var cases fitCases
	raw, source := []byte(builtinFitCases), "the built-in table"
	if path := os.Getenv("LIBRARIAN_PARITY_CASES"); path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		source = path
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	t.Logf("parity: %d fit cases and %d cut cases from %s", len(cases.Fit), len(cases.Cut), source)
	cases.check(t)
}

func TestCutSnippetCutsAtTheLastSentenceEnd(t *testing.T) {
	body := strings.Repeat("あ", 7000)
	cases := []struct{ text, want string }{
		{"short. text", "short. text"},
		{strings.Repeat("x", MaxSnippetChars), strings.Repeat("x", MaxSnippetChars)},
		{body + "高さは333メートル。" + strings.Repeat("い", 2000), body + "高さは333メートル。"},
		{body + "pi is 3.14 and" + strings.Repeat("い", 2000), firstRunes(body+"pi is 3.14 and"+strings.Repeat("い", 2000), MaxSnippetChars)},
		{body + "see example.com" + strings.Repeat("い", 2000), firstRunes(body+"see example.com"+strings.Repeat("い", 2000), MaxSnippetChars)},
		{body + "end. " + strings.Repeat("い", 2000), body + "end."},
		// a sentence end more than SentenceTailChars before the limit is not looked for
		{strings.Repeat("x", 5000) + "。" + strings.Repeat("y", 5000), strings.Repeat("x", 5000) + "。" + strings.Repeat("y", MaxSnippetChars-5001)},
	}
	for i, tc := range cases {
		got := CutSnippet(tc.text)
		if got != tc.want || utf8.RuneCountInString(got) > MaxSnippetChars {
			t.Errorf("case %d: got %d characters ending %q, want %d ending %q", i,
				utf8.RuneCountInString(got), tail(got), utf8.RuneCountInString(tc.want), tail(tc.want))
		}
	}
}

// repeatingSearcher answers every SEARCH with n hits whose snippets have size characters.
type repeatingSearcher struct{ n, size int }

func (s repeatingSearcher) Search(_ context.Context, _ string, search *api.LibrarianSearchAction) ([]api.SearchHit, error) {
	hits := make([]api.SearchHit, s.n)
	for i := range hits {
		hits[i] = api.SearchHit{DocumentID: fmt.Sprintf("doc-%d", i), Snippet: strings.Repeat("x", s.size)}
	}
	return hits, nil
}

// roundSizes runs a loop of five SEARCHes then COMPLETE and returns, per round of the last request's
// history, how many hits it held and their characters.
func roundSizes(t *testing.T, searcher Searcher) (hits, chars []int) {
	t.Helper()
	var replies []reply
	for i := 1; i <= 5; i++ {
		replies = append(replies, reply{200, searchBody(fmt.Sprintf("q-%d", i), stateJSON(i), "tower")})
	}
	s, c := serve(t, append(replies, reply{200, completeBody("q-6", "null")})...)
	if _, err := fastLoop(c, searcher).Run(context.Background(), question()); err != nil {
		t.Fatal(err)
	}
	var history []api.SearchRound
	if err := json.Unmarshal(s.requests[len(s.requests)-1]["search_history"], &history); err != nil {
		t.Fatal(err)
	}
	for _, r := range history {
		n := 0
		for _, h := range r.Results {
			n += utf8.RuneCountInString(h.Snippet)
			if utf8.RuneCountInString(h.Snippet) > MaxSnippetChars {
				t.Fatalf("a snippet of %d characters was sent", utf8.RuneCountInString(h.Snippet))
			}
		}
		hits, chars = append(hits, len(r.Results)), append(chars, n)
	}
	return hits, chars
}

func TestLoopKeepsEveryRoundWithinTheHitLimits(t *testing.T) {
	hits, _ := roundSizes(t, repeatingSearcher{n: 400, size: 10})
	if want := []int{300, 300, 300, 100, 0}; !reflect.DeepEqual(hits, want) {
		t.Fatalf("hits per round %v, want %v (300 a round, 1,000 in all)", hits, want)
	}
}

func TestLoopKeepsTheHistoryWithinTheSnippetLimits(t *testing.T) {
	// 9,000-character chunks are cut to 8,000: 37 of them (296,000 characters) fit the history, then none
	hits, chars := roundSizes(t, repeatingSearcher{n: 30, size: 9000})
	if want := []int{30, 7, 0, 0, 0}; !reflect.DeepEqual(hits, want) {
		t.Fatalf("hits per round %v, want %v", hits, want)
	}
	if chars[0] != 30*MaxSnippetChars || chars[1] != 7*MaxSnippetChars {
		t.Fatalf("characters per round %v", chars)
	}
}
