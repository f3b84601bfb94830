// Package client calls librarian-svc over HTTP with the generated types of package api, and runs the
// Librarian think loop (Loop) against a Searcher the caller implements.
//
// Every call has one of three outcomes besides success: a *ServiceError (the service answered
// with an ERROR body, or with a status and body that are not the contract's), a *TransportError
// (no HTTP answer at all), or the context's error.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"librarian-svc/clients/go/api"
)

// MaxResponseBytes bounds how much of one response body is read; a COMPLETE with 50 evidence
// items of long snippets stays far below it.
const MaxResponseBytes = 64 << 20

// Client is safe for concurrent use; its zero value is not usable, build it with New.
type Client struct {
	// BaseURL is the service's root, e.g. "http://127.0.0.1:8080" (no trailing slash needed).
	BaseURL string
	// HTTP sends the requests. The default keeps connections alive, which the service expects
	// (its idle timeout is longer than Go's 90 s): reuse one Client rather than one per call.
	HTTP *http.Client
	// Header is added to every request (an Authorization header for Cloud Run, say).
	Header http.Header
}

// New returns a client for the service at baseURL with a per-call timeout of 60 s.
func New(baseURL string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{Timeout: 60 * time.Second}}
}

// ServiceError is an answer that is not a normal action: an ERROR body with a 4xx status
// (INVALID_INPUT: StatusCode 400 malformed JSON or bad state, 404/405 wrong route or method,
// 413 too large, 415 not JSON, 422 schema violation), an ERROR action with 200 that the caller
// cannot continue from (LOOP_LIMIT, OTHER, or TIMEOUT / MODEL_FAILURE after the retries), or a
// status the contract does not promise (5xx, or a body that is no ERROR), kept raw in Body.
type ServiceError struct {
	StatusCode int
	ErrorType  api.ErrorType // empty when the body was not an ERROR body
	Message    string
	Details    []api.ErrorDetail // each with the JSON path of one problem, e.g. "$.constraints.max_loops"
	RequestID  string
	Body       []byte // the raw body when it was not an ERROR body (at most 4 KiB kept)
	// RetryAfter is the answer's Retry-After in its seconds form (the service sends 1 or 2 with its
	// 503s); zero when there was none, or it was an HTTP date. Loop waits at least this long to retry.
	RetryAfter time.Duration
}

func (e *ServiceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "librarian-svc: HTTP %d", e.StatusCode)
	if e.ErrorType != "" {
		fmt.Fprintf(&b, " %s: %s", e.ErrorType, e.Message)
	} else if len(e.Body) > 0 {
		fmt.Fprintf(&b, ": %q", e.Body)
	}
	for _, d := range e.Details {
		fmt.Fprintf(&b, "; %s: %s", deref(d.Path, "$"), deref(d.Message, ""))
	}
	return b.String()
}

// Retryable tells whether the same request may succeed if sent again unchanged: 429 and 5xx
// (overload, a restarting instance), and the 200 ERROR actions TIMEOUT and MODEL_FAILURE,
// which carry the request's state so the step can be repeated.
func (e *ServiceError) Retryable() bool {
	if e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500 {
		return true
	}
	return e.StatusCode == http.StatusOK && (e.ErrorType == api.ErrorTypeTimeout || e.ErrorType == api.ErrorTypeModelFailure)
}

// TransportError is a request that got no HTTP answer (connection refused or reset, client timeout).
type TransportError struct {
	Method, URL string
	Err         error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("librarian-svc: %s %s: %v", e.Method, e.URL, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Retryable reports whether an error from this package may go away when the same request is sent again.
func Retryable(err error) bool {
	var service *ServiceError
	if errors.As(err, &service) {
		return service.Retryable()
	}
	var transport *TransportError
	return errors.As(err, &transport) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ErrorFromAction turns an ERROR action (a 200 answer) into a *ServiceError.
func ErrorFromAction(resp *api.ErrorResponse) *ServiceError {
	return &ServiceError{
		StatusCode: http.StatusOK,
		ErrorType:  resp.ErrorType,
		Message:    resp.Message,
		Details:    resp.Details,
		RequestID:  resp.RequestID,
	}
}

// Post sends body as JSON to path and returns the 200 body; any other status is a *ServiceError.
func (c *Client) Post(ctx context.Context, path string, body any) ([]byte, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("librarian-svc: encode %s request: %w", path, err)
	}
	return c.do(ctx, http.MethodPost, path, payload)
}

// Get fetches path and returns the 200 body; any other status is a *ServiceError.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

func (c *Client) do(ctx context.Context, method, path string, payload []byte) ([]byte, error) {
	contentType := ""
	if payload != nil {
		contentType = "application/json"
	}
	return c.send(ctx, method, path, contentType, payload, "application/json")
}

// send makes one request and returns the 200 body; any other status is a *ServiceError.
func (c *Client) send(ctx context.Context, method, path, contentType string, payload []byte, accept string) ([]byte, error) {
	resp, err := c.open(ctx, method, path, contentType, payload, accept)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readBody(resp, method, c.BaseURL+path)
}

// open sends one request and returns the response with its body unread (the caller closes it).
func (c *Client) open(ctx context.Context, method, path, contentType string, payload []byte, accept string) (*http.Response, error) {
	url := c.BaseURL + path
	var reader io.Reader
	if payload != nil {
		reader = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return nil, fmt.Errorf("librarian-svc: %s %s: %w", method, url, err)
	}
	for name, values := range c.Header {
		req.Header[name] = append([]string(nil), values...)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &TransportError{Method: method, URL: url, Err: err}
	}
	return resp, nil
}

// readBody reads a whole response body (at most MaxResponseBytes) and returns it when the status is 200.
func readBody(resp *http.Response, method, url string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, &TransportError{Method: method, URL: url, Err: fmt.Errorf("reading the body: %w", err)}
	}
	if len(body) > MaxResponseBytes {
		return nil, &ServiceError{StatusCode: resp.StatusCode, Message: "response body larger than MaxResponseBytes"}
	}
	if resp.StatusCode != http.StatusOK {
		err := errorFromBody(resp.StatusCode, body)
		err.RetryAfter = retryAfter(resp.Header)
		return nil, err
	}
	return body, nil
}

// retryAfter reads a Retry-After header in its seconds form ("Retry-After: 1"); anything else is zero.
func retryAfter(h http.Header) time.Duration {
	const longest = 1 << 31 // seconds: far past any cap, and no overflow of a Duration
	seconds, err := strconv.ParseUint(strings.TrimSpace(h.Get("Retry-After")), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return longest * time.Second
	}
	if err != nil {
		return 0
	}
	if seconds > longest {
		seconds = longest
	}
	return time.Duration(seconds) * time.Second
}

// errorFromBody decodes the ERROR body the service sends with every 4xx; anything else is kept raw.
func errorFromBody(status int, body []byte) *ServiceError {
	if action, err := api.DecodeAction(body); err == nil && action == api.ActionError {
		var e api.ErrorResponse
		if json.Unmarshal(body, &e) == nil {
			err := ErrorFromAction(&e)
			err.StatusCode = status
			return err
		}
	}
	return &ServiceError{StatusCode: status, Message: http.StatusText(status), Body: truncate(body)}
}

// call posts req and decodes the 200 body with decode (a generated union decoder).
func call[T any](ctx context.Context, c *Client, path string, req any, decode func([]byte) (T, error)) (T, error) {
	var zero T
	body, err := c.Post(ctx, path, req)
	if err != nil {
		return zero, err
	}
	out, err := decode(body)
	if err != nil {
		return zero, fmt.Errorf("librarian-svc: %s: undecodable 200 body: %w", path, err)
	}
	return out, nil
}

// plain posts req to an endpoint whose 200 answer is one type, where a 200 ERROR body
// (TIMEOUT, MODEL_FAILURE) becomes a *ServiceError.
func plain[T any](ctx context.Context, c *Client, path string, req any) (*T, error) {
	body, err := c.Post(ctx, path, req)
	if err != nil {
		return nil, err
	}
	return decodePlain[T](path, body)
}

func decodePlain[T any](path string, body []byte) (*T, error) {
	if action, err := api.DecodeAction(body); err == nil && action == api.ActionError {
		return nil, errorFromBody(http.StatusOK, body)
	}
	out := new(T)
	if err := json.Unmarshal(body, out); err != nil {
		return nil, fmt.Errorf("librarian-svc: %s: undecodable 200 body: %w", path, err)
	}
	return out, nil
}

// Think runs one Librarian step (POST /agent/librarian/think): *api.LibrarianSearchAction,
// *api.LibrarianCompleteAction or *api.ErrorResponse. Loop runs the whole search.
func (c *Client) Think(ctx context.Context, req *api.LibrarianRequest) (api.LibrarianResponse, error) {
	return call(ctx, c, "/agent/librarian/think", req, api.DecodeLibrarianResponse)
}

// GraceStep runs one GRACE step (POST /agent/grace/step).
func (c *Client) GraceStep(ctx context.Context, req *api.GraceRequest) (api.GraceResponse, error) {
	return call(ctx, c, "/agent/grace/step", req, api.DecodeGraceResponse)
}

// AceSearch is POST /agent/ace/search.
func (c *Client) AceSearch(ctx context.Context, req *api.AceSearchRequest) (api.AceSearchResponse, error) {
	return call(ctx, c, "/agent/ace/search", req, api.DecodeAceSearchResponse)
}

// AceGenerate is POST /agent/ace/generate.
func (c *Client) AceGenerate(ctx context.Context, req *api.AceGenerateRequest) (api.AceGenerateResponse, error) {
	return call(ctx, c, "/agent/ace/generate", req, api.DecodeAceGenerateResponse)
}

// AceReflect is POST /agent/ace/reflect.
func (c *Client) AceReflect(ctx context.Context, req *api.AceReflectRequest) (api.AceReflectResponse, error) {
	return call(ctx, c, "/agent/ace/reflect", req, api.DecodeAceReflectResponse)
}

// AceCurate is POST /agent/ace/curate.
func (c *Client) AceCurate(ctx context.Context, req *api.AceCurateRequest) (api.AceCurateResponse, error) {
	return call(ctx, c, "/agent/ace/curate", req, api.DecodeAceCurateResponse)
}

// WorkflowRun is POST /workflow/run.
func (c *Client) WorkflowRun(ctx context.Context, req *api.WorkflowRequest) (api.WorkflowRunResponse, error) {
	return call(ctx, c, "/workflow/run", req, api.DecodeWorkflowRunResponse)
}

// ProposalValidate is POST /api/proposal-quality/validate. A nil tray of its dashboard is sent as an
// empty one (encoding/json would send null, which the contract refuses).
func (c *Client) ProposalValidate(ctx context.Context, req *api.ProposalValidateRequest) (*api.ProposalValidateResponse, error) {
	sent := *req
	if req.Dashboard != nil {
		dashboard := withEmptyTrays(*req.Dashboard)
		sent.Dashboard = &dashboard
	}
	return plain[api.ProposalValidateResponse](ctx, c, "/api/proposal-quality/validate", &sent)
}

// OrganizerRun is POST /api/organizer/run (a nil tray is sent as an empty one, as by ProposalValidate).
func (c *Client) OrganizerRun(ctx context.Context, req *api.ProposalRunRequest) (*api.ProposalRunResponse, error) {
	sent := *req
	sent.Dashboard = withEmptyTrays(req.Dashboard)
	return plain[api.ProposalRunResponse](ctx, c, "/api/organizer/run", &sent)
}

// AdvisorRun is POST /api/advisor/run (a nil tray is sent as an empty one, as by ProposalValidate).
func (c *Client) AdvisorRun(ctx context.Context, req *api.ProposalRunRequest) (*api.ProposalRunResponse, error) {
	sent := *req
	sent.Dashboard = withEmptyTrays(req.Dashboard)
	return plain[api.ProposalRunResponse](ctx, c, "/api/advisor/run", &sent)
}

// withEmptyTrays is the dashboard with every nil tray made an empty slice, the caller's left as it was:
// a Go slice with no nodes is nil unless made otherwise, and means an empty tray, not a missing one.
func withEmptyTrays(d api.Dashboard) api.Dashboard {
	if d.Trays == nil {
		return d
	}
	trays := *d.Trays
	if trays.DashboardNodeArrayMap != nil {
		named := make(map[string][]api.DashboardNode, len(trays.DashboardNodeArrayMap))
		for name, nodes := range trays.DashboardNodeArrayMap {
			if nodes == nil {
				nodes = []api.DashboardNode{}
			}
			named[name] = nodes
		}
		trays.DashboardNodeArrayMap = named
	}
	if trays.DashboardNodeArrayArray != nil {
		listed := make([][]api.DashboardNode, len(trays.DashboardNodeArrayArray))
		for i, nodes := range trays.DashboardNodeArrayArray {
			if nodes == nil {
				nodes = []api.DashboardNode{}
			}
			listed[i] = nodes
		}
		trays.DashboardNodeArrayArray = listed
	}
	d.Trays = &trays
	return d
}

// Ready is GET /ready; a service that is not ready answers 503, returned as a *ServiceError.
func (c *Client) Ready(ctx context.Context) (*api.ReadyResponse, error) {
	body, err := c.Get(ctx, "/ready")
	if err != nil {
		return nil, err
	}
	return decodePlain[api.ReadyResponse]("/ready", body)
}

func truncate(body []byte) []byte {
	const keep = 4 << 10
	if len(body) > keep {
		return body[:keep]
	}
	return body
}

func deref(s *string, fallback string) string {
	if s == nil {
		return fallback
	}
	return *s
}
