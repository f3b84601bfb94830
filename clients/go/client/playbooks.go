package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"librarian-svc/clients/go/api"
)

// PutPlaybook is PUT /playbooks/{dataset}: text in the official ACE format replaces the dataset's stored
// playbook. A text with no bullets is refused unless allowEmpty (it would empty the stored playbook).
func (c *Client) PutPlaybook(ctx context.Context, dataset, text string, allowEmpty bool) (*api.PlaybookStoredAction, error) {
	path := "/playbooks/" + url.PathEscape(dataset)
	if allowEmpty {
		path += "?allow_empty=true"
	}
	body, err := c.send(ctx, http.MethodPut, path, "text/plain; charset=utf-8", []byte(text), "application/json")
	if err != nil {
		return nil, err
	}
	return decodePlain[api.PlaybookStoredAction](path, body)
}

// GetPlaybook is GET /playbooks/{dataset}: the stored playbook as ACE text. A dataset with nothing
// stored is a *ServiceError with StatusCode 404. A 200 ERROR body (TIMEOUT, an export out of time) is
// a *ServiceError too, with StatusCode 200 and its ErrorType, never returned as text.
func (c *Client) GetPlaybook(ctx context.Context, dataset string) (string, error) {
	path := "/playbooks/" + url.PathEscape(dataset)
	resp, err := c.open(ctx, http.MethodGet, path, "", nil, "text/plain")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := readBody(resp, http.MethodGet, c.BaseURL+path)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return "", errorFromBody(resp.StatusCode, body)
	}
	return string(body), nil
}

// ListPlaybooks is GET /playbooks: the datasets with a stored playbook, sorted.
func (c *Client) ListPlaybooks(ctx context.Context) (*api.PlaybookListAction, error) {
	body, err := c.Get(ctx, "/playbooks")
	if err != nil {
		return nil, err
	}
	return decodePlain[api.PlaybookListAction]("/playbooks", body)
}

// Health is GET /health: the process is up (Ready says whether it takes work).
func (c *Client) Health(ctx context.Context) (*api.HealthResponse, error) {
	body, err := c.Get(ctx, "/health")
	if err != nil {
		return nil, err
	}
	return decodePlain[api.HealthResponse]("/health", body)
}
