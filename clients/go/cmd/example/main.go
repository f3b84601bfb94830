// Command example answers one question against a running librarian-svc with an in-memory corpus,
// printing each step:
//
//	make run &   # the service on :8080
//	cd clients/go && go run ./cmd/example -question "How tall is Tokyo Tower?"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"librarian-svc/clients/go/api"
	"librarian-svc/clients/go/client"
	"librarian-svc/clients/go/corpus"
)

func main() {
	baseURL := flag.String("base-url", envOr("LIBRARIAN_BASE_URL", "http://127.0.0.1:8080"), "the service's root URL")
	question := flag.String("question", "How tall is Tokyo Tower?", "the question to find evidence for")
	maxLoops := flag.Int64("max-loops", 3, "SEARCH rounds allowed (1..10)")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loop := client.NewLoop(client.New(*baseURL), &corpus.Memory{Chunks: corpus.Landmarks()})
	loop.OnEvent = printEvent
	result, err := loop.Run(ctx, client.Question{
		RequestID:   fmt.Sprintf("example-%d", time.Now().UnixNano()),
		UserQuery:   *question,
		SubjectID:   "landmarks",
		Constraints: &api.LibrarianConstraints{MaxLoops: maxLoops},
	})
	if err != nil {
		var service *client.ServiceError
		if errors.As(err, &service) && service.ErrorType == api.ErrorTypeLoopLimit {
			fmt.Printf("no usable evidence after the allowed rounds: %s\n", service.Message)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Printf("COMPLETE after %d call(s): %s\n", result.Calls, result.Complete.CoverageNotes)
	for _, item := range result.Complete.Evidence {
		fmt.Printf("  %s pages %v score %.3f: %s\n", item.DocumentID, item.Pages, item.Score, item.WhyRelevant)
		for _, snippet := range item.Snippets {
			fmt.Printf("    %q\n", snippet)
		}
	}
}

func printEvent(e client.Event) {
	switch {
	case e.Err != nil:
		fmt.Printf("step %d attempt %d failed, retrying: %v\n", e.Step, e.Attempt, e.Err)
	case e.Round != nil:
		fmt.Printf("step %d: searched, %d hit(s)\n", e.Step, len(e.Round.Results))
	default:
		switch action := e.Response.(type) {
		case *api.LibrarianSearchAction:
			fmt.Printf("step %d: SEARCH text=%q vector=%q (%s)\n", e.Step, action.QueriesText, action.QueriesVector, action.Rationale)
		case *api.LibrarianCompleteAction:
			fmt.Printf("step %d: COMPLETE with %d evidence item(s)\n", e.Step, len(action.Evidence))
		}
	}
}

func envOr(name, fallback string) string {
	if value := strings.TrimSpace(os.Getenv(name)); value != "" {
		return value
	}
	return fallback
}
