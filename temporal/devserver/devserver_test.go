package devserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

func waitForSignal(ctx workflow.Context, greeting string) (string, error) {
	var name string
	workflow.GetSignalChannel(ctx, "name").Receive(ctx, &name)
	return greeting + ", " + name, nil
}

func runWorker(t *testing.T, c client.Client, queue string) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(waitForSignal)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// TestOpenWorkflowSurvivesRestart: with a database file, a workflow that is
// still open when the server stops completes after the server restarts.
func TestOpenWorkflowSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "temporal.db")

	srv, err := devserver.Start(ctx, devserver.Options{DBPath: db, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: srv.HostPort()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "survivor", TaskQueue: "q"}, waitForSignal, "hello")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	srv, err = devserver.Start(ctx, devserver.Options{DBPath: db, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err = client.Dial(client.Options{HostPort: srv.HostPort()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runWorker(t, c, "q")
	if err := c.SignalWorkflow(ctx, "survivor", run.GetRunID(), "name", "paydispatch"); err != nil {
		t.Fatal(err)
	}
	var got string
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.GetWorkflow(waitCtx, "survivor", run.GetRunID()).Get(waitCtx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "hello, paydispatch" {
		t.Fatalf("result %q", got)
	}
}

func greet(_ workflow.Context, name string) (string, error) { return "hello, " + name, nil }

// TestTrimmedVisibilityAnswersQueries: on a database file (trimmed
// visibility indexes) a finished workflow is found by the filters
// paydispatch and operators use, and by one whose index was dropped.
func TestTrimmedVisibilityAnswersQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(t.TempDir(), "temporal.db"), LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "q", worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greeter", TaskQueue: "q"}, greet, "paydispatch")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{
		"WorkflowId IN ('greeter', 'other')",
		"ExecutionStatus = 'Completed' AND WorkflowType = 'greet'",
		"HistoryLength > 0", // its index is dropped: a scan
	} {
		var found int
		deadline := time.Now().Add(30 * time.Second) // visibility is written after the close
		for found == 0 && time.Now().Before(deadline) {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			found = len(resp.Executions)
			if found == 0 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if found != 1 {
			t.Errorf("%s: %d executions, want 1", query, found)
		}
	}
}
