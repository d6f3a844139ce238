package devserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
