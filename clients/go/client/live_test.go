package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"librarian-svc/clients/go/api"
	"librarian-svc/clients/go/corpus"
)

// BaseURLEnv names the variable that points the live tests at a running service
// (tests/clients/test_go_client.py starts one and sets it).
const BaseURLEnv = "LIBRARIAN_BASE_URL"

// liveClient is a client for the service under LIBRARIAN_BASE_URL. Without it the live tests
// skip on a developer's machine and fail under CI, where they must run.
func liveClient(t *testing.T) *Client {
	t.Helper()
	url := strings.TrimSpace(os.Getenv(BaseURLEnv))
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set under CI: the live tests must run (tests/clients/test_go_client.py sets it)", BaseURLEnv)
		}
		t.Skipf("%s is not set: start the service (make run) and set it to run the live tests", BaseURLEnv)
	}
	return New(url)
}

// strictDecode decodes body into out refusing fields the generated type does not know, so a
// response the schemas do not describe fails here rather than losing data silently.
func strictDecode(t *testing.T, body []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("the generated %T does not describe the response: %v\n%s", out, err, body)
	}
}

func TestLiveLoopCompletes(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chunks := corpus.Landmarks()
	known := map[string]bool{}
	for _, chunk := range chunks {
		if chunk.SubjectID == "landmarks" {
			known[chunk.DocumentID] = true
		}
	}
	var searches int
	loop := NewLoop(c, &corpus.Memory{Chunks: chunks})
	loop.OnEvent = func(e Event) {
		if search, ok := e.Response.(*api.LibrarianSearchAction); ok {
			searches++
			if len(search.QueriesText)+len(search.QueriesVector) == 0 || search.State == nil {
				t.Errorf("a SEARCH without queries or state: %+v", search)
			}
		}
	}
	loops := int64(3)
	result, err := loop.Run(ctx, Question{
		RequestID:   "go-live",
		UserQuery:   "How tall is Tokyo Tower?",
		SubjectID:   "landmarks",
		Constraints: &api.LibrarianConstraints{MaxLoops: &loops},
	})
	if err != nil {
		t.Fatal(err)
	}
	if result.Complete == nil || searches < 1 || len(result.History) != searches {
		t.Fatalf("%d searches, %d rounds, result %+v", searches, len(result.History), result)
	}
	var height bool
	for _, item := range result.Complete.Evidence {
		if !known[item.DocumentID] {
			t.Fatalf("evidence from a document the searcher never returned for this subject: %+v", item)
		}
		for _, snippet := range item.Snippets {
			height = height || (item.DocumentID == "tokyo-tower" && strings.Contains(snippet, "333 metres"))
		}
	}
	if !height {
		t.Fatalf("the evidence lacks Tokyo Tower's height: %+v", result.Complete.Evidence)
	}
}

func TestLiveInvalidInputNamesThePath(t *testing.T) {
	c := liveClient(t)
	_, err := c.Think(context.Background(), &api.LibrarianRequest{RequestID: "go-bad", UserQuery: "", SubjectID: "landmarks"})
	var service *ServiceError
	if !errors.As(err, &service) {
		t.Fatalf("got %T %v", err, err)
	}
	if service.StatusCode != 422 || service.ErrorType != api.ErrorTypeInvalidInput || service.RequestID != "go-bad" {
		t.Fatalf("got %+v", service)
	}
	if len(service.Details) == 0 || service.Details[0].Path == nil || *service.Details[0].Path != "$.user_query" {
		t.Fatalf("details %+v", service.Details)
	}
}

func TestLiveNotFoundIsAnErrorBody(t *testing.T) {
	c := liveClient(t)
	_, err := c.Post(context.Background(), "/agent/librarian/thinks", map[string]string{})
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 404 || service.ErrorType != api.ErrorTypeInvalidInput {
		t.Fatalf("got %T %v", err, err)
	}
}

// TestLiveGeneratedTypesDescribeTheResponses decodes real answers of several agents into the
// generated variants, refusing unknown fields.
func TestLiveGeneratedTypesDescribeTheResponses(t *testing.T) {
	c := liveClient(t)
	ctx := context.Background()

	ready, err := c.Ready(ctx)
	if err != nil || ready.Status != api.ReadyResponseStatusReady {
		t.Fatalf("ready: %v %+v", err, ready)
	}

	body, err := c.Post(ctx, "/agent/librarian/think", &api.LibrarianRequest{
		RequestID: "go-types-1", UserQuery: "How tall is Tokyo Tower?", SubjectID: "landmarks",
	})
	if err != nil {
		t.Fatal(err)
	}
	var search api.LibrarianSearchAction
	strictDecode(t, body, &search)
	if search.Action != api.ActionSearch || search.Usage.Engine == "" {
		t.Fatalf("got %+v", search)
	}

	collection := "landmarks"
	query := "How tall is Tokyo Tower?"
	graceID := "go-grace-1"
	grace, err := c.GraceStep(ctx, &api.GraceRequest{
		RequestID: &graceID, Query: &query, Collections: []api.SearchCollection{{Name: collection}},
	})
	if err != nil {
		t.Fatal(err)
	}
	step, ok := grace.(*api.GraceSearchAction)
	if !ok || step.Collection != collection || step.State == nil {
		t.Fatalf("GRACE answered %T %+v", grace, grace)
	}

	playbook := api.Playbook{Bullets: []api.Bullet{{
		ID: "shr-00001", Section: "strategies_and_hard_rules", Content: "Check units before comparing heights",
	}}}
	ace, err := c.AceSearch(ctx, &api.AceSearchRequest{Playbook: playbook, Query: api.SearchQuery{QueryText: "heights units"}})
	if err != nil {
		t.Fatal(err)
	}
	results, ok := ace.(*api.AceSearchResultsAction)
	if !ok || len(results.Results) != 1 || results.Results[0].Bullet.ID != "shr-00001" {
		t.Fatalf("ACE answered %T %+v", ace, ace)
	}

	validate := &api.ProposalValidateRequest{
		Kind: api.ReportKindOrganizer, Report: map[string]interface{}{"summary": "x"}, ValidNodeIDS: &[]string{"n1"},
	}
	body, err = c.Post(ctx, "/api/proposal-quality/validate", validate)
	if err != nil {
		t.Fatal(err)
	}
	var validation api.ProposalValidateResponse
	strictDecode(t, body, &validation)
	if validation.Action != api.ActionValidation || validation.Ok || len(validation.Errors) == 0 {
		t.Fatalf("validate answered %+v", validation)
	}
	if _, err := c.ProposalValidate(ctx, validate); err != nil {
		t.Fatal(err)
	}
}

func TestLiveLoopLimitAfterEveryRound(t *testing.T) {
	c := liveClient(t)
	loop := NewLoop(c, &corpus.Memory{Chunks: corpus.Landmarks()})
	loops := int64(2)
	result, err := loop.Run(context.Background(), Question{
		RequestID:   "go-limit",
		UserQuery:   "What is the population of Osaka?",
		SubjectID:   "landmarks",
		Constraints: &api.LibrarianConstraints{MaxLoops: &loops},
	})
	// The pinned max_loops goes with every call, so the service runs both rounds and then stops.
	if !IsErrorType(err, api.ErrorTypeLoopLimit) || len(result.History) != 2 || result.Calls != 3 {
		t.Fatalf("err %v, %d rounds, %d calls", err, len(result.History), result.Calls)
	}
}

func TestLiveMisspelledAndCoercedFieldsAre422WithTheirPaths(t *testing.T) {
	c := liveClient(t)
	_, err := c.Post(context.Background(), "/agent/librarian/think", map[string]any{
		"request_id": "go-typo", "user_query": "q", "subject_id": "s",
		"constraints": map[string]any{"max_loop": 1, "max_loops": "3"},
	})
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 422 || service.ErrorType != api.ErrorTypeInvalidInput {
		t.Fatalf("got %T %v", err, err)
	}
	paths := map[string]bool{}
	for _, d := range service.Details {
		paths[*d.Path] = true
	}
	if !paths["$.constraints.max_loop"] || !paths["$.constraints.max_loops"] {
		t.Fatalf("details %+v do not name both fields", service.Details)
	}
}

func TestLiveEditedStateTokenIsRefused(t *testing.T) {
	c := liveClient(t)
	ctx := context.Background()
	req := &api.LibrarianRequest{RequestID: "go-edit-1", UserQuery: "How tall is Tokyo Tower?", SubjectID: "landmarks"}
	resp, err := c.Think(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	search, ok := resp.(*api.LibrarianSearchAction)
	if !ok || search.State == nil {
		t.Fatalf("got %T %+v", resp, resp)
	}
	parts := strings.Split(*search.State, ".")
	if len(parts) != 3 {
		t.Fatalf("state %q is not a v1 token", *search.State)
	}
	middle := []byte(parts[1])
	i := len(middle) / 2
	if middle[i] == 'A' {
		middle[i] = 'B'
	} else {
		middle[i] = 'A'
	}
	edited := strings.Join([]string{parts[0], string(middle), parts[2]}, ".")
	req.RequestID = "go-edit-2"
	req.State = &edited
	req.SearchHistory = []api.SearchRound{{QueriesText: search.QueriesText, QueriesVector: search.QueriesVector}}
	_, err = c.Think(ctx, req)
	var service *ServiceError
	if !errors.As(err, &service) || service.StatusCode != 400 || service.ErrorType != api.ErrorTypeInvalidInput {
		t.Fatalf("an edited token got %T %v", err, err)
	}
	if len(service.Details) == 0 || *service.Details[0].Path != "$.state" {
		t.Fatalf("details %+v", service.Details)
	}
}

func TestLivePlaybookStoreRoundTrips(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataset := fmt.Sprintf("go-live-%d", time.Now().UnixNano())
	text := "## GENERAL\n[gen-00001] helpful=2 harmful=0 :: Check units before comparing heights.\n"
	stored, err := c.PutPlaybook(ctx, dataset, text, false)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Bullets != 1 || stored.Replaced || stored.Dataset != dataset {
		t.Fatalf("PUT answered %+v", stored)
	}
	exported, err := c.GetPlaybook(ctx, dataset)
	if err != nil || !strings.Contains(exported, "[gen-00001] helpful=2 harmful=0 :: Check units") {
		t.Fatalf("GET answered %q, %v", exported, err)
	}
	listed, err := c.ListPlaybooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, name := range listed.Datasets {
		found = found || name == dataset
	}
	if !found {
		t.Fatalf("%s is not listed: %v", dataset, listed.Datasets)
	}
	var service *ServiceError
	if _, err := c.PutPlaybook(ctx, dataset, "", false); !errors.As(err, &service) || service.StatusCode != 400 {
		t.Fatalf("an empty text without allowEmpty: %v", err)
	}
	if emptied, err := c.PutPlaybook(ctx, dataset, "", true); err != nil || emptied.Bullets != 0 || !emptied.Replaced {
		t.Fatalf("an empty text with allowEmpty: %+v, %v", emptied, err)
	}
	if _, err := c.GetPlaybook(ctx, dataset+"-none"); !errors.As(err, &service) || service.StatusCode != 404 {
		t.Fatalf("GET of nothing stored: %v", err)
	}
	if _, err := c.PutPlaybook(ctx, "AppWorld", text, false); !errors.As(err, &service) || service.StatusCode != 422 {
		t.Fatalf("a dataset spelled with other case: %v", err)
	}
	health, err := c.Health(ctx)
	if err != nil || health.Status == nil || *health.Status != api.HealthResponseStatusOk {
		t.Fatalf("health: %+v, %v", health, err)
	}
}

func TestLiveGraceStepStreamsItsEventsThenTheAction(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	query := "東京タワーの高さは？"
	var events []api.GraceEvent
	streamed, err := c.GraceStepStream(ctx, &api.GraceRequest{Query: &query}, func(e api.GraceEvent) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	search, ok := streamed.(*api.GraceSearchAction)
	if !ok || len(events) == 0 || len(events) != len(search.Events) {
		t.Fatalf("streamed %T %+v after %d events", streamed, streamed, len(events))
	}
	for i, e := range events {
		if !reflect.DeepEqual(e, search.Events[i]) {
			t.Fatalf("event %d streamed as %+v, the action lists %+v", i, e, search.Events[i])
		}
	}
	var service *ServiceError
	if _, err := c.GraceStepStream(ctx, &api.GraceRequest{}, nil); !errors.As(err, &service) || service.StatusCode/100 != 4 {
		t.Fatalf("a step with no query: %v", err)
	}
}

func TestLiveEmptyListsAreSentAsEmpty(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	noNodes := []string{}
	report := map[string]interface{}{
		"target_node_id": "", "target_title": "", "current_status": "", "next_decision": "最初の作業を決める",
		"summary": "まず始め方を決めます",
		"options": []interface{}{
			map[string]interface{}{"label": "案A", "next_action": "a", "necessary_info": "b", "criteria_note": "c", "risks": []string{"d"}},
			map[string]interface{}{"label": "案B", "next_action": "a", "necessary_info": "b", "criteria_note": "c", "risks": []string{"d"}},
		},
	}
	verdict, err := c.ProposalValidate(ctx, &api.ProposalValidateRequest{Kind: api.ReportKindAdvisor, Report: report, ValidNodeIDS: &noNodes})
	if err != nil || !verdict.Ok {
		t.Fatalf("a board of no nodes (validNodeIds: []): %+v, %v", verdict, err)
	}
	title := "会場の予約"
	trays := map[string][]api.DashboardNode{"todo": {{ID: "n1", Title: &title}}, "done": nil}
	run, err := c.AdvisorRun(ctx, &api.ProposalRunRequest{Dashboard: api.Dashboard{Trays: &api.Trays{DashboardNodeArrayMap: trays}}})
	if err != nil || !run.Ok {
		t.Fatalf("a nil tray: %+v, %v", run, err)
	}
	if trays["done"] != nil {
		t.Fatal("the caller's dashboard was changed")
	}
}
