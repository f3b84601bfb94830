package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"librarian-svc/clients/go/api"
)

// reply is what the scripted server answers to one request.
type reply struct {
	status int
	body   string
}

// script is a fake service: it records every request body and answers from a list of replies
// (the last one repeats).
type script struct {
	t        *testing.T
	mu       sync.Mutex
	replies  []reply
	requests []map[string]json.RawMessage
	headers  []http.Header
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("reading request: %v", err)
	}
	var fields map[string]json.RawMessage
	if len(raw) == 0 && r.Method == http.MethodGet {
		fields = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(raw, &fields); err != nil {
		s.t.Errorf("request is not a JSON object: %v: %s", err, raw)
	}
	s.requests = append(s.requests, fields)
	s.headers = append(s.headers, r.Header.Clone())
	next := s.replies[0]
	if len(s.replies) > 1 {
		s.replies = s.replies[1:]
	}
	if next.status == -1 { // drop the connection without an answer
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(next.status)
	_, _ = io.WriteString(w, next.body)
}

func serve(t *testing.T, replies ...reply) (*script, *Client) {
	t.Helper()
	s := &script{t: t, replies: replies}
	server := httptest.NewServer(s)
	t.Cleanup(server.Close)
	return s, New(server.URL)
}

// stateJSON is a state token as the service would send it (opaque to the client).
func stateJSON(n int) string {
	return fmt.Sprintf(`"v1.c3RhdGUt%d.sig%d"`, n, n)
}

func searchBody(id, state string, queries ...string) string {
	q, _ := json.Marshal(queries)
	return fmt.Sprintf(`{"action":"SEARCH","request_id":%q,"queries_text":%s,"queries_vector":["what is %s"],
		"filters_hint":{},"rationale":"why","missing":[{"category":"term","description":"x"}],"state":%s,
		"usage":{"engine":"heuristic","llm_calls":0}}`, id, q, queries[0], state)
}

func completeBody(id, state string) string {
	return fmt.Sprintf(`{"action":"COMPLETE","request_id":%q,"evidence":[{"document_id":"doc","pages":[3],
		"snippets":["333 metres"],"score":0.9,"why_relevant":"height"}],"coverage_notes":"all covered","state":%s,
		"usage":{"engine":"heuristic"}}`, id, state)
}

func errorBody(errorType, message, state string, details ...string) string {
	items := make([]string, len(details))
	for i, path := range details {
		items[i] = fmt.Sprintf(`{"path":%q,"message":"wrong"}`, path)
	}
	return fmt.Sprintf(`{"action":"ERROR","request_id":"r","error_type":%q,"message":%q,"details":[%s],"state":%s}`,
		errorType, message, strings.Join(items, ","), state)
}

// fixedSearcher answers every SEARCH with one hit per text query and records what it was asked.
type fixedSearcher struct {
	subjects []string
	err      error
}

func (f *fixedSearcher) Search(_ context.Context, subjectID string, search *api.LibrarianSearchAction) ([]api.SearchHit, error) {
	f.subjects = append(f.subjects, subjectID)
	if f.err != nil {
		return nil, f.err
	}
	hits := []api.SearchHit{}
	for i, q := range search.QueriesText {
		page := int64(i + 1)
		hits = append(hits, api.SearchHit{DocumentID: "doc-" + q, Page: &page, Snippet: "about " + q})
	}
	return hits, nil
}

func question() Question {
	loops := int64(4)
	return Question{RequestID: "q", UserQuery: "How tall is Tokyo Tower?", SubjectID: "landmarks",
		Constraints: &api.LibrarianConstraints{MaxLoops: &loops}}
}

func fastLoop(c *Client, s Searcher) *Loop {
	loop := NewLoop(c, s)
	loop.RetryDelay = time.Millisecond
	return loop
}

// jsonEqual compares two JSON values after decoding (key order and spacing aside).
func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation: %s", want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestLoopSendsStateBackAndAppendsOneRoundPerSearch(t *testing.T) {
	s, c := serve(t,
		reply{200, searchBody("q-1", stateJSON(1), "tokyo tower", "height")},
		reply{200, searchBody("q-2", stateJSON(2), "metres")},
		reply{200, completeBody("q-3", stateJSON(3))},
	)
	searcher := &fixedSearcher{}
	var events []Event
	loop := fastLoop(c, searcher)
	loop.OnEvent = func(e Event) { events = append(events, e) }

	result, err := loop.Run(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	if result.Complete == nil || result.Complete.Evidence[0].DocumentID != "doc" || result.Calls != 3 {
		t.Fatalf("unexpected result %+v", result)
	}
	if len(s.requests) != 3 {
		t.Fatalf("%d requests", len(s.requests))
	}
	first, second, third := s.requests[0], s.requests[1], s.requests[2]
	if _, sent := first["state"]; sent {
		t.Fatalf("first call sent a state: %s", first["state"])
	}
	if _, sent := first["search_history"]; sent {
		t.Fatalf("first call sent history: %s", first["search_history"])
	}
	if string(second["state"]) != stateJSON(1) || string(third["state"]) != stateJSON(2) {
		t.Fatalf("states sent back: %s, %s; want %s, %s byte for byte", second["state"], third["state"], stateJSON(1), stateJSON(2))
	}
	jsonEqual(t, first["request_id"], `"q-1"`)
	jsonEqual(t, third["request_id"], `"q-3"`)
	for _, req := range s.requests {
		jsonEqual(t, req["constraints"], `{"max_loops":4}`)
		jsonEqual(t, req["subject_id"], `"landmarks"`)
	}
	jsonEqual(t, second["search_history"], `[{"queries_text":["tokyo tower","height"],"queries_vector":["what is tokyo tower"],
		"results":[{"document_id":"doc-tokyo tower","page":1,"snippet":"about tokyo tower"},
		           {"document_id":"doc-height","page":2,"snippet":"about height"}]}]`)
	var history []any
	if err := json.Unmarshal(third["search_history"], &history); err != nil || len(history) != 2 {
		t.Fatalf("third call's history: %s", third["search_history"])
	}
	if !reflect.DeepEqual(searcher.subjects, []string{"landmarks", "landmarks"}) {
		t.Fatalf("searcher saw subjects %v", searcher.subjects)
	}
	if len(events) != 5 || events[1].Round == nil || events[4].Response == nil {
		t.Fatalf("events %+v", events)
	}
	if got := s.headers[0].Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type %q", got)
	}
}

func TestStateIsCopiedVerbatimWhenItIsAToken(t *testing.T) {
	token := `"v1.eyJhIjoxLjB9.AAAA-_"`
	s, c := serve(t, reply{200, searchBody("q-1", token, "a")}, reply{200, completeBody("q-2", "null")})
	if _, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question()); err != nil {
		t.Fatal(err)
	}
	if got := string(s.requests[1]["state"]); got != token {
		t.Fatalf("state came back as %s, want the bytes %s", got, token)
	}
}

func TestErrorStatusesBecomeServiceErrorsWithPaths(t *testing.T) {
	for _, status := range []int{400, 404, 405, 413, 415, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s, c := serve(t, reply{status, errorBody("INVALID_INPUT", "bad request", "null", "$.constraints.max_loop", "$.user_query")})
			_, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
			var service *ServiceError
			if !errors.As(err, &service) {
				t.Fatalf("got %T %v", err, err)
			}
			if service.StatusCode != status || service.ErrorType != api.ErrorTypeInvalidInput || service.Message != "bad request" {
				t.Fatalf("got %+v", service)
			}
			if len(service.Details) != 2 || *service.Details[0].Path != "$.constraints.max_loop" || *service.Details[1].Path != "$.user_query" {
				t.Fatalf("details %+v", service.Details)
			}
			if !strings.Contains(err.Error(), "$.constraints.max_loop: wrong") {
				t.Fatalf("message %q does not name the path", err)
			}
			if len(s.requests) != 1 || Retryable(err) {
				t.Fatalf("a %d was retried (%d requests)", status, len(s.requests))
			}
		})
	}
}

func TestServerErrorsAreRetriedThenReported(t *testing.T) {
	s, c := serve(t, reply{502, "<html>bad gateway</html>"})
	loop := fastLoop(c, &fixedSearcher{})
	loop.MaxRetries = 3
	var retried int
	loop.OnEvent = func(e Event) {
		if e.Err != nil {
			retried++
		}
	}
	_, err := loop.Run(context.Background(), question())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 502 || service.ErrorType != "" || string(service.Body) != "<html>bad gateway</html>" {
		t.Fatalf("got %T %v", err, err)
	}
	if len(s.requests) != 4 || retried != 3 {
		t.Fatalf("%d requests, %d retry events; want 4 and 3", len(s.requests), retried)
	}
	jsonEqual(t, s.requests[3]["request_id"], `"q-1-r3"`)
}

func TestOverloadThenSuccess(t *testing.T) {
	s, c := serve(t, reply{429, errorBody("OTHER", "slow down", "null")}, reply{503, ""}, reply{200, completeBody("q-1", "null")})
	result, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	if err != nil || result.Complete == nil || result.Calls != 3 || len(s.requests) != 3 {
		t.Fatalf("err %v result %+v", err, result)
	}
}

// busy answers the first request 503 with the given Retry-After and the service's ERROR body, every later
// one COMPLETE, and records when each request arrived.
func busy(t *testing.T, retryAfter string) (*Client, *[]time.Time) {
	t.Helper()
	var mu sync.Mutex
	var arrived []time.Time
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		arrived = append(arrived, time.Now())
		w.Header().Set("Content-Type", "application/json")
		if len(arrived) == 1 {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, errorBody("OTHER", "every connection has a request in flight", "null"))
			return
		}
		_, _ = io.WriteString(w, completeBody("q-1", "null"))
	}))
	t.Cleanup(server.Close)
	return New(server.URL), &arrived
}

func TestRetryWaitsAsLongAsRetryAfterAsks(t *testing.T) {
	c, arrived := busy(t, "1")
	result, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question()) // RetryDelay 1 ms
	if err != nil || result.Calls != 2 {
		t.Fatalf("err %v result %+v", err, result)
	}
	if waited := (*arrived)[1].Sub((*arrived)[0]); waited < time.Second || waited > 5*time.Second {
		t.Fatalf("retried after %v; the 503 said Retry-After: 1", waited)
	}
}

func TestRetryAfterIsCappedByMaxRetryAfter(t *testing.T) {
	c, arrived := busy(t, "3600")
	loop := fastLoop(c, &fixedSearcher{})
	loop.MaxRetryAfter = 50 * time.Millisecond
	result, err := loop.Run(context.Background(), question())
	if err != nil || result.Calls != 2 {
		t.Fatalf("err %v result %+v", err, result)
	}
	if waited := (*arrived)[1].Sub((*arrived)[0]); waited < 50*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("retried after %v; want MaxRetryAfter, 50 ms", waited)
	}
}

func TestServiceErrorKeepsRetryAfter(t *testing.T) {
	c, _ := busy(t, "2")
	loop := fastLoop(c, &fixedSearcher{})
	loop.MaxRetries = 0
	_, err := loop.Run(context.Background(), question())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 503 || service.RetryAfter != 2*time.Second || !Retryable(err) {
		t.Fatalf("got %T %+v", err, err)
	}
}

func TestRetryAfterHeaderForms(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"1": time.Second, " 2 ": 2 * time.Second, "0": 0, "": 0, "1.5": 0, "-1": 0, "+1": 0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0, // the date form is not read
		"99999999999999999999999":       (1 << 31) * time.Second,
	} {
		if got := retryAfter(http.Header{"Retry-After": {value}}); got != want {
			t.Errorf("Retry-After %q: %v, want %v", value, got, want)
		}
	}
}

func TestRetryWaitIsTheLongerOfTheBackoffAndRetryAfter(t *testing.T) {
	asked := func(d time.Duration) error { return &ServiceError{StatusCode: 503, RetryAfter: d} }
	for _, c := range []struct {
		cap, delay time.Duration
		err        error
		want       time.Duration
	}{
		{0, 200 * time.Millisecond, asked(time.Second), time.Second},
		{0, 800 * time.Millisecond, asked(0), 800 * time.Millisecond},                     // no header: the backoff
		{0, 3 * time.Second, asked(time.Second), 3 * time.Second},                         // the backoff is longer
		{0, 200 * time.Millisecond, asked(time.Hour), DefaultMaxRetryAfter},               // 10 s at most
		{time.Second, 200 * time.Millisecond, asked(time.Hour), time.Second},              // MaxRetryAfter
		{0, 200 * time.Millisecond, &TransportError{Err: io.EOF}, 200 * time.Millisecond}, // no answer, no header
	} {
		l := &Loop{MaxRetryAfter: c.cap}
		if got := l.wait(c.delay, c.err); got != c.want {
			t.Errorf("cap %v, delay %v, %v: waited %v, want %v", c.cap, c.delay, c.err, got, c.want)
		}
	}
}

func TestTimeoutActionRetriesTheSameStepWithTheSameState(t *testing.T) {
	s, c := serve(t,
		reply{200, searchBody("q-1", stateJSON(1), "tower")},
		reply{200, errorBody("TIMEOUT", "deadline", stateJSON(1))},
		reply{200, errorBody("MODEL_FAILURE", "model said nothing", stateJSON(1))},
		reply{200, completeBody("q-2", stateJSON(2))},
	)
	result, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	if err != nil || result.Complete == nil || result.Calls != 4 {
		t.Fatalf("err %v result %+v", err, result)
	}
	for _, retry := range s.requests[2:] {
		for field, value := range s.requests[1] {
			if field != "request_id" && string(retry[field]) != string(value) {
				t.Fatalf("the retry changed %s: %s then %s", field, value, retry[field])
			}
		}
	}
	jsonEqual(t, s.requests[2]["request_id"], `"q-2-r1"`)
	jsonEqual(t, s.requests[3]["request_id"], `"q-2-r2"`)
}

func TestPersistentModelFailureStopsAfterTheRetries(t *testing.T) {
	s, c := serve(t, reply{200, errorBody("MODEL_FAILURE", "model down", "null")})
	_, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 200 || !IsErrorType(err, api.ErrorTypeModelFailure) {
		t.Fatalf("got %T %v", err, err)
	}
	if len(s.requests) != 3 {
		t.Fatalf("%d requests, want 1 + 2 retries", len(s.requests))
	}
}

func TestLoopLimitIsFinal(t *testing.T) {
	s, c := serve(t, reply{200, searchBody("q-1", stateJSON(1), "a")}, reply{200, errorBody("LOOP_LIMIT", "nothing usable", stateJSON(2))})
	result, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	if !IsErrorType(err, api.ErrorTypeLoopLimit) || len(s.requests) != 2 || len(result.History) != 1 {
		t.Fatalf("err %v, %d requests, result %+v", err, len(s.requests), result)
	}
}

func TestTransportErrorsAreRetried(t *testing.T) {
	s, c := serve(t, reply{-1, ""}, reply{200, completeBody("q-1", "null")})
	result, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	if err != nil || result.Calls != 2 || len(s.requests) != 2 {
		t.Fatalf("err %v result %+v", err, result)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	loop := fastLoop(New(dead.URL), &fixedSearcher{})
	loop.MaxRetries = 1
	_, err = loop.Run(context.Background(), question())
	var transport *TransportError
	if !errors.As(err, &transport) || !Retryable(err) {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestUnknownActionIsAnError(t *testing.T) {
	_, c := serve(t, reply{200, `{"action":"DANCE","request_id":"q-1"}`})
	_, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	var unknown *api.UnknownActionError
	if !errors.As(err, &unknown) || unknown.Action != "DANCE" || Retryable(err) {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestSearcherErrorStopsTheLoop(t *testing.T) {
	boom := errors.New("database down")
	s, c := serve(t, reply{200, searchBody("q-1", stateJSON(1), "a")})
	_, err := fastLoop(c, &fixedSearcher{err: boom}).Run(context.Background(), question())
	if !errors.Is(err, boom) || len(s.requests) != 1 {
		t.Fatalf("got %v after %d requests", err, len(s.requests))
	}
}

func TestCancelledContextStopsTheRetries(t *testing.T) {
	_, c := serve(t, reply{503, ""})
	loop := fastLoop(c, &fixedSearcher{})
	loop.RetryDelay = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	started := time.Now()
	_, err := loop.Run(ctx, question())
	if !errors.Is(err, context.Canceled) || time.Since(started) > 5*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(started))
	}
}

func TestRetryAfterPastTheDeadlineReturnsTheServiceErrorAtOnce(t *testing.T) {
	c, arrived := busy(t, "5")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := fastLoop(c, &fixedSearcher{}).Run(ctx, question())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 503 || service.RetryAfter != 5*time.Second {
		t.Fatalf("got %v; want the 503's *ServiceError", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || len(*arrived) != 1 {
		t.Fatalf("got %v after %v and %d requests; want it at once, before the deadline", err, time.Since(started), len(*arrived))
	}
}

func TestBackoffPastTheDeadlineReturnsTheLastFailure(t *testing.T) {
	s, c := serve(t, reply{502, "bad gateway"})
	loop := fastLoop(c, &fixedSearcher{})
	loop.RetryDelay = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := loop.Run(ctx, question())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 502 || ctx.Err() != nil || len(s.requests) != 1 {
		t.Fatalf("got %v after %d requests", err, len(s.requests))
	}
}

func TestRetryAfterWithinTheDeadlineIsWaitedFor(t *testing.T) {
	c, arrived := busy(t, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	result, err := fastLoop(c, &fixedSearcher{}).Run(ctx, question())
	if err != nil || result.Calls != 2 || len(*arrived) != 2 {
		t.Fatalf("err %v result %+v", err, result)
	}
}

func TestEndlessSearchIsBounded(t *testing.T) {
	s, c := serve(t, reply{200, searchBody("q", stateJSON(1), "again")})
	_, err := fastLoop(c, &fixedSearcher{}).Run(context.Background(), question())
	if err == nil || !strings.Contains(err.Error(), "no COMPLETE") || len(s.requests) != MaxSteps {
		t.Fatalf("got %v after %d requests", err, len(s.requests))
	}
}

func TestPlainEndpointsTurnErrorActionsIntoErrors(t *testing.T) {
	_, c := serve(t, reply{200, errorBody("TIMEOUT", "too slow", "null")})
	_, err := c.OrganizerRun(context.Background(), &api.ProposalRunRequest{})
	if !IsErrorType(err, api.ErrorTypeTimeout) || !Retryable(err) {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestReadyNotReadyIsAServiceError(t *testing.T) {
	_, c := serve(t, reply{503, `{"status":"not_ready","engine":"heuristic","model":null,"embedding":"x","graphs":[],"version":"1"}`})
	_, err := c.Ready(context.Background())
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 503 || !strings.Contains(string(service.Body), "not_ready") {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestGraceStepStreamReadsEventsSkipsTheUnknownAndNeedsItsAction(t *testing.T) {
	const action = `{"action":"COMPLETE","request_id":"r","status":"completed","answer":"a","confidence":1,` +
		`"sources":[],"history":[],"events":[],"plan":null,"state":"s","usage":{"engine":"heuristic"}}`
	streams := map[string]string{
		"whole": ": keep-alive\n\nevent: progress\nid: 0\ndata: {\"index\":0,\"type\":\"completed\",\"message\":\"m\"}\n\n" +
			"event: later\ndata: {}\n\nevent: action\ndata: " + action + "\n\n",
		"cut": "event: progress\ndata: {\"index\":0,\"type\":\"completed\",\"message\":\"m\"}\n\n",
	}
	for name, stream := range streams {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			_, _ = io.WriteString(w, stream)
		}))
		var seen []api.GraceEvent
		got, err := New(server.URL).GraceStepStream(context.Background(), &api.GraceRequest{}, func(e api.GraceEvent) {
			seen = append(seen, e)
		})
		server.Close()
		var transport *TransportError
		switch {
		case name == "whole" && (err != nil || len(seen) != 1 || seen[0].Message != "m"):
			t.Fatalf("%s: %T %v after %+v", name, got, err, seen)
		case name == "whole":
			if _, ok := got.(*api.GraceCompleteAction); !ok {
				t.Fatalf("%s: decoded %T", name, got)
			}
		case name == "cut" && !errors.As(err, &transport):
			t.Fatalf("%s: a stream without its action: %v", name, err)
		}
	}
}

func TestGetPlaybookNeverReturnsAnErrorBodyAsText(t *testing.T) {
	const errorBody = `{"action":"ERROR","request_id":"r","error_type":"TIMEOUT","message":"the step timed out"}`
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, errorBody)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "## GENERAL\n[gen-00001] x\n")
	}))
	defer server.Close()
	c := New(server.URL)
	text, err := c.GetPlaybook(context.Background(), "fine")
	if err != nil || !strings.HasPrefix(text, "## GENERAL") {
		t.Fatalf("text %q, err %v", text, err)
	}
	var service *ServiceError
	if text, err := c.GetPlaybook(context.Background(), "slow"); !errors.As(err, &service) || service.ErrorType != api.ErrorTypeTimeout || text != "" {
		t.Fatalf("an ERROR body: text %q, err %v", text, err)
	}
}
