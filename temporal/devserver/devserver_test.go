package devserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
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

func TestMain(m *testing.M) { pgtest.Main(m, postgres.Schema{}) }

// stores are the two places the server keeps its data, each as a function
// giving the options of a new store for one test.
var stores = []struct {
	name string
	new  func(t *testing.T) devserver.Options
}{
	{"sqlite", func(t *testing.T) devserver.Options {
		return devserver.Options{DBPath: filepath.Join(t.TempDir(), "temporal.db"), LogLevel: "fatal"}
	}},
	{"postgres", func(t *testing.T) devserver.Options {
		return devserver.Options{Postgres: newPostgresStore(t), LogLevel: "fatal"}
	}},
}

// newPostgresStore is a PostgreSQL store in two new databases, dropped
// when the test ends.
func newPostgresStore(t *testing.T) *devserver.Postgres {
	t.Helper()
	url := pgtest.EmptyURL(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Database + "_tmprl"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Logf("drop the Temporal databases: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, db := range []string{name, name + "_visibility"} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
				t.Logf("drop %s: %v", db, err)
			}
		}
	})
	return &devserver.Postgres{URL: url, Database: name, StatePath: filepath.Join(t.TempDir(), "postgres"), MaxConns: 5}
}

// TestOpenWorkflowSurvivesRestart: on either store, a workflow that is
// still open when the server stops completes after the server restarts,
// and a finished one is listed by the visibility store.
func TestOpenWorkflowSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := store.new(t)

			srv, err := devserver.Start(ctx, opts)
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

			srv, err = devserver.Start(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Stop() }()
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
			if n := awaitListed(t, c, "WorkflowId = 'survivor' AND ExecutionStatus = 'Completed'"); n != 1 {
				t.Errorf("listed %d completed survivors, want 1", n)
			}
		})
	}
}

// awaitListed is how many executions query lists once it lists any
// (visibility is written after the close), or 0 after 30 s.
func awaitListed(t *testing.T, c client.Client, query string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if n := len(resp.Executions); n > 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
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
	defer func() { _ = srv.Stop() }()
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
		if found := awaitListed(t, c, query); found != 1 {
			t.Errorf("%s: %d executions, want 1", query, found)
		}
	}
}

// TestRetention: a new store's namespace gets the retention asked for,
// a store started again with another gets that one, and none asked
// leaves it as it was.
func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	opts := stores[0].new(t)
	for _, step := range []struct {
		ask, want time.Duration
	}{
		{2 * time.Minute, 2 * time.Minute},
		{3 * time.Hour, 3 * time.Hour},
		{0, 3 * time.Hour},
	} {
		opts.Retention = step.ask
		srv, err := devserver.Start(ctx, opts)
		if err != nil {
			t.Fatalf("retention %v: %v", step.ask, err)
		}
		c, err := client.Dial(client.Options{HostPort: srv.HostPort()})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		c.Close()
		_ = srv.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != step.want {
			t.Errorf("asked %v: retention %v, want %v", step.ask, got, step.want)
		}
	}
}
