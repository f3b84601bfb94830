package client_test

import (
	"context"
	"errors"
	"log"

	"librarian-svc/clients/go/api"
	"librarian-svc/clients/go/client"
	"librarian-svc/clients/go/corpus"
)

// ExampleLoop is the README's "From Go" snippet; it is compiled (not run) by go vet and go test,
// so the README cannot name an API that does not exist.
func ExampleLoop() {
	ctx := context.Background()
	q := "How tall is Tokyo Tower?"
	searcher := &corpus.Memory{Chunks: corpus.Landmarks()}
	use := func(evidence []api.EvidenceItem) { log.Println(len(evidence), "evidence items") }

	loop := client.NewLoop(client.New("http://127.0.0.1:8080"), searcher) // 2 retries per step, 200 ms, doubling
	maxLoops := int64(3)
	res, err := loop.Run(ctx, client.Question{RequestID: "req-1", UserQuery: q, SubjectID: "physics-101",
		Constraints: &api.LibrarianConstraints{MaxLoops: &maxLoops}})
	var svcErr *client.ServiceError
	switch {
	case err == nil:
		use(res.Complete.Evidence) // *api.LibrarianCompleteAction
	case client.IsErrorType(err, api.ErrorTypeLoopLimit):
		// every round ran and nothing usable was found
	case errors.As(err, &svcErr):
		log.Printf("HTTP %d %s: %s %v", svcErr.StatusCode, svcErr.ErrorType, svcErr.Message, svcErr.Details)
	default:
		// *client.TransportError after the retries, your Searcher's error, or ctx.Err()
	}
}

// ExampleClient_Think is one step by hand, as the README describes it.
func ExampleClient_Think() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080")
	req := api.LibrarianRequest{RequestID: "req-1", UserQuery: "How tall is Tokyo Tower?", SubjectID: "landmarks"}
	resp, err := c.Think(ctx, &req)
	if err != nil {
		log.Fatal(err)
	}
	switch a := resp.(type) {
	case *api.LibrarianSearchAction:
		hits := []api.SearchHit{} // run a.QueriesText / a.QueriesVector here
		req.SearchHistory = append(req.SearchHistory, api.SearchRound{QueriesText: a.QueriesText, QueriesVector: a.QueriesVector, Results: hits})
		req.State = a.State // the opaque token, verbatim
	case *api.LibrarianCompleteAction:
		log.Println(a.Evidence)
	case *api.ErrorResponse:
		log.Println(a.ErrorType, a.Message)
	}
}
