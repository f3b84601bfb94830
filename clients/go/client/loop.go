package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"librarian-svc/clients/go/api"
)

// Searcher runs one SEARCH the Librarian asked for: full-text search for search.QueriesText,
// vector search for search.QueriesVector, always restricted to subjectID (the service never
// enforces it; search.FiltersHint only hints). The hits become one round of search_history, as
// Loop fits them to the contract's limits: each snippet cut to MaxSnippetChars (CutSnippet), then
// the hits taken in the order returned while the round (MaxHitsPerRound) and the history
// (MaxHitsTotal, MaxSnippetCharsTotal) have room; a hit too long for the characters left is dropped
// (FitRound). Return the hits you most want kept first: with one ranked list per query,
// FitRound(lists, nil) keeps every query's best hits within the round's cap.
type Searcher interface {
	Search(ctx context.Context, subjectID string, search *api.LibrarianSearchAction) ([]api.SearchHit, error)
}

// SearcherFunc adapts a function to Searcher.
type SearcherFunc func(ctx context.Context, subjectID string, search *api.LibrarianSearchAction) ([]api.SearchHit, error)

// Search calls f.
func (f SearcherFunc) Search(ctx context.Context, subjectID string, search *api.LibrarianSearchAction) ([]api.SearchHit, error) {
	return f(ctx, subjectID, search)
}

// Question is what one Librarian search is about.
type Question struct {
	RequestID    string // the base of every call's request_id ("<RequestID>-<step>", retries "-r<n>"): visible ASCII without spaces, and short enough that the suffixes keep it within 200 characters (the service refuses other ids with 422)
	UserQuery    string
	SubjectID    string
	Conversation []api.ConversationTurn
	// Constraints are sent with every call: the first call pins them in the state, and a later
	// call must not contradict them.
	Constraints *api.LibrarianConstraints
}

// Event is one thing the loop did, for logging or printing progress.
type Event struct {
	Step     int                   // 1 for the first think call
	Attempt  int                   // 0, then 1.. for retries of the same step
	Response api.LibrarianResponse // the decoded answer; nil when Err is set or for a Round event
	Err      error                 // a retryable failure that the loop is about to retry
	Round    *api.SearchRound      // the round sent for the SEARCH of this step: the Searcher's hits as fitted to the limits
}

// Result is the end of a search that reached COMPLETE.
type Result struct {
	Complete *api.LibrarianCompleteAction
	History  []api.SearchRound // every round sent (the Searcher's hits as fitted to the limits), oldest first
	Calls    int               // think calls made, retries included
}

// MaxSteps bounds a loop whatever the service answers: it promises COMPLETE or ERROR after at
// most max_loops (<= 10) SEARCH rounds, so a 12th step means something is wrong.
const MaxSteps = 12

// Loop runs the Librarian's think loop: call, run the SEARCH, call back with the state verbatim
// and the new round appended, until COMPLETE. The state is never looked into: it is copied from
// each answer into the next request as it came. Each round is fitted to the contract's limits
// before it is sent (see Searcher), so that a long history is never refused with 413.
type Loop struct {
	Client   *Client
	Searcher Searcher
	// MaxRetries is how often one step is repeated, unchanged, after a retryable failure
	// (TIMEOUT or MODEL_FAILURE actions, 429, 5xx, transport errors). Zero means no retries.
	MaxRetries int
	// RetryDelay is the wait before the first retry of a step; it doubles for each further one.
	// A failure whose answer carries a longer Retry-After (ServiceError.RetryAfter) is retried after
	// that instead, up to MaxRetryAfter.
	RetryDelay time.Duration
	// MaxRetryAfter caps the Retry-After a retry waits for; zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// OnEvent, when set, sees every answer, every retried failure and every round.
	OnEvent func(Event)
}

// DefaultMaxRetryAfter is the longest Retry-After a Loop waits for unless MaxRetryAfter says otherwise.
const DefaultMaxRetryAfter = 10 * time.Second

// NewLoop returns a loop with two retries per step, 200 ms apart at first (or as Retry-After asks, up to 10 s).
func NewLoop(c *Client, s Searcher) *Loop {
	return &Loop{Client: c, Searcher: s, MaxRetries: 2, RetryDelay: 200 * time.Millisecond}
}

// Run searches until COMPLETE. Errors: *ServiceError for an ERROR answer (LOOP_LIMIT, INVALID_INPUT,
// a 4xx, or a retryable failure that outlasted MaxRetries), *TransportError, the Searcher's error
// (wrapped), or the context's. A retryable failure whose retry would come after ctx's deadline (a
// Retry-After longer than the time left) is returned at once, wrapped: errors.As finds the
// *ServiceError or *TransportError.
func (l *Loop) Run(ctx context.Context, q Question) (*Result, error) {
	result := &Result{}
	req := &api.LibrarianRequest{
		UserQuery:    q.UserQuery,
		SubjectID:    q.SubjectID,
		Conversation: q.Conversation,
		Constraints:  q.Constraints,
	}
	for step := 1; step <= MaxSteps; step++ {
		req.RequestID = fmt.Sprintf("%s-%d", q.RequestID, step)
		resp, err := l.think(ctx, step, req, result)
		if err != nil {
			return result, err
		}
		switch action := resp.(type) {
		case *api.LibrarianCompleteAction:
			result.Complete = action
			return result, nil
		case *api.LibrarianSearchAction:
			hits, err := l.Searcher.Search(ctx, q.SubjectID, action)
			if err != nil {
				return result, fmt.Errorf("librarian-svc: search for step %d: %w", step, err)
			}
			round := api.SearchRound{QueriesText: action.QueriesText, QueriesVector: action.QueriesVector,
				Results: fitHits(hits, result.History)}
			result.History = append(result.History, round)
			l.emit(Event{Step: step, Round: &round})
			req.SearchHistory = result.History
			req.State = action.State // verbatim: an opaque value the next call hands back
		default:
			return result, fmt.Errorf("librarian-svc: step %d: unexpected %T", step, resp)
		}
	}
	return result, fmt.Errorf("librarian-svc: no COMPLETE after %d steps", MaxSteps)
}

// think makes one step, repeating it unchanged (same state, same history) after a retryable failure.
func (l *Loop) think(ctx context.Context, step int, req *api.LibrarianRequest, result *Result) (api.LibrarianResponse, error) {
	base := req.RequestID
	defer func() { req.RequestID = base }()
	delay := l.RetryDelay
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			req.RequestID = fmt.Sprintf("%s-r%d", base, attempt)
		}
		result.Calls++
		resp, err := l.Client.Think(ctx, req)
		if err == nil {
			if e, ok := resp.(*api.ErrorResponse); ok {
				err = ErrorFromAction(e)
			} else {
				l.emit(Event{Step: step, Attempt: attempt, Response: resp})
				return resp, nil
			}
		}
		if !Retryable(err) || attempt >= l.MaxRetries {
			return nil, err
		}
		wait := l.wait(delay, err)
		if deadline, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(deadline) {
			// the retry would come after the deadline: the failure is the answer, not ctx's DeadlineExceeded
			return nil, fmt.Errorf("librarian-svc: not retried: the wait (%v) ends after the context's deadline: %w", wait, err)
		}
		l.emit(Event{Step: step, Attempt: attempt, Err: err})
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
		delay *= 2
	}
}

// wait is how long to wait before retrying after err: delay, or the answer's Retry-After when that is
// longer (capped at MaxRetryAfter).
func (l *Loop) wait(delay time.Duration, err error) time.Duration {
	var service *ServiceError
	if !errors.As(err, &service) {
		return delay
	}
	asked, limit := service.RetryAfter, l.MaxRetryAfter
	if limit <= 0 {
		limit = DefaultMaxRetryAfter
	}
	if asked > limit {
		asked = limit
	}
	if asked > delay {
		return asked
	}
	return delay
}

func (l *Loop) emit(e Event) {
	if l.OnEvent != nil {
		l.OnEvent(e)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// IsErrorType reports whether err is a *ServiceError of the given error_type.
func IsErrorType(err error, t api.ErrorType) bool {
	var service *ServiceError
	return errors.As(err, &service) && service.ErrorType == t
}
