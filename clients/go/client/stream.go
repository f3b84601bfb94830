package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"librarian-svc/clients/go/api"
)

// GraceStepStream is POST /agent/grace/step/stream: the step GraceStep runs, as Server-Sent Events.
// onEvent (may be nil) gets each progress record as the service produces it; the result is the step's
// action, decoded as GraceStep decodes its body (an ERROR action included). Bad input is refused before
// the stream starts, as a *ServiceError like any other call's.
func (c *Client) GraceStepStream(
	ctx context.Context, req *api.GraceRequest, onEvent func(api.GraceEvent),
) (api.GraceResponse, error) {
	const path = "/agent/grace/step/stream"
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("librarian-svc: encode %s request: %w", path, err)
	}
	resp, err := c.open(ctx, http.MethodPost, path, "application/json", payload, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_, err := readBody(resp, http.MethodPost, c.BaseURL+path)
		if err == nil {
			err = &ServiceError{StatusCode: resp.StatusCode, Message: "not an event stream: " + resp.Header.Get("Content-Type")}
		}
		return nil, err
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64<<10), MaxResponseBytes)
	var event string
	var data bytes.Buffer
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case line == "":
			action, done, err := dispatch(path, event, data.Bytes(), onEvent)
			if done || err != nil {
				return action, err
			}
			event = ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := scanner.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &TransportError{Method: http.MethodPost, URL: c.BaseURL + path, Err: fmt.Errorf("reading the stream: %w", err)}
	}
	return nil, &TransportError{
		Method: http.MethodPost, URL: c.BaseURL + path, Err: fmt.Errorf("the stream ended without its action event"),
	}
}

// dispatch handles one event: a progress record goes to onEvent; the action ends the stream (done).
func dispatch(path, event string, data []byte, onEvent func(api.GraceEvent)) (api.GraceResponse, bool, error) {
	switch event {
	case "progress":
		var record api.GraceEvent
		if err := json.Unmarshal(data, &record); err != nil {
			return nil, true, fmt.Errorf("librarian-svc: %s: undecodable progress event: %w", path, err)
		}
		if onEvent != nil {
			onEvent(record)
		}
		return nil, false, nil
	case "action":
		action, err := api.DecodeGraceResponse(data)
		if err != nil {
			return nil, true, fmt.Errorf("librarian-svc: %s: undecodable action event: %w", path, err)
		}
		return action, true, nil
	}
	return nil, false, nil // a comment, a keep-alive or an event this client does not know
}
