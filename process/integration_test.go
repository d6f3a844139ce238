package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/process"
)

// onServer puts the fixture's activities, ProcessWorkflow and the test
// caller on a worker of a task queue of their own on the shared
// in-process Temporal server.
func (f *fixture) onServer(t *testing.T) (client.Client, string) {
	t.Helper()
	c, err := sharedTemporal()
	if err != nil {
		t.Fatal(err)
	}
	queue := "process-test-" + uuid.NewString()
	w := worker.New(c, queue, worker.Options{})
	process.Register(w, f.acts)
	w.RegisterWorkflow(transferWorkflow)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return c, queue
}

func startTransfer(t *testing.T, c client.Client, queue, key string, exec process.ExecOptions) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "transfer-" + key, TaskQueue: queue},
		transferWorkflow, key, transferData{Amount: "42.00"}, exec)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func waitOutcome(t *testing.T, run client.WorkflowRun, within time.Duration) process.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	var out process.Outcome
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("workflow %s: %v", run.GetID(), err)
	}
	return out
}

// TestPauseOnTheServer: a pause during Debit lands after it and stops the
// runner before Notify; resume (by signal, or found by the fallback check
// when the signal is lost) continues it; a forced compensation wakes it to
// undo what completed.
func TestPauseOnTheServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		resumeCheck time.Duration
		withClient  bool // the operator can signal
		act         func(*process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error)
		want        process.Status
		within      time.Duration
		effects     map[string]int
	}{
		{
			name: "resume signals the runner", resumeCheck: time.Hour, withClient: true,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Resume
			},
			want: process.StatusSucceeded, within: 15 * time.Second,
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
		},
		{
			name: "resume without a signal: the fallback check", resumeCheck: 2 * time.Second,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Resume
			},
			want: process.StatusSucceeded, within: 30 * time.Second,
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
		},
		{
			name: "forced compensation wakes a paused runner", resumeCheck: time.Hour, withClient: true,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Compensate
			},
			want: process.StatusCompensated, within: 15 * time.Second,
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			c, queue := f.onServer(t)
			cfg := process.OperatorConfig{DB: f.pool, Registry: f.reg}
			if tt.withClient {
				cfg.Client, cfg.TaskQueue = c, queue
			}
			op := process.NewOperator(cfg)
			key := uuid.NewString()
			id := process.ID(transfer, key)
			entered, release := f.hold(key, "Debit")
			defer release()
			run := startTransfer(t, c, queue, key, process.ExecOptions{Local: true, ResumeCheck: tt.resumeCheck})
			<-entered
			paused := make(chan error, 1)
			go func() {
				_, err := op.Pause(context.Background(), id, "alice")
				paused <- err
			}()
			f.waitForLockWaiter(t, paused)
			release()
			if err := <-paused; err != nil {
				t.Fatal(err)
			}
			// The runner stops before Notify and stays stopped.
			time.Sleep(1500 * time.Millisecond)
			if inst := f.get(t, key); inst.Status != process.StatusPaused || inst.Step != "Notify" {
				t.Fatalf("while paused: %s at %s", inst.Status, inst.Step)
			}
			if got := f.effects(t, key); got["Notify"] != 0 || got["Debit"] != 1 {
				t.Fatalf("effects while paused %v", got)
			}
			if _, err := tt.act(op)(t.Context(), id, "bob"); err != nil {
				t.Fatal(err)
			}
			out := waitOutcome(t, run, tt.within)
			if out.Status != tt.want {
				t.Fatalf("outcome %+v", out)
			}
			if got := f.effects(t, key); !mapsEqual(got, tt.effects) {
				t.Fatalf("effects %v, want %v", got, tt.effects)
			}
		})
	}
}

// TestOperatorOnTheServer: an operator's retry starts a ProcessWorkflow
// that finishes what the caller could not; Wake starts one for a process
// whose driver is gone.
func TestOperatorOnTheServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  func(f *fixture, key string)
		first   process.Status // the caller's outcome
		act     func(*process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error)
		local   bool // the runner's activities
		want    process.Status
		hooks   []string
		effects map[string]int
	}{
		{
			name: "compensation failed, retried: compensated",
			script: func(f *fixture, key string) {
				f.fail(key, "Notify", process.Failf("REJECTED", "no"))
				f.fail(key, "Release", process.Failf("LEDGER_CLOSED", "closed for the day"))
			},
			first: process.StatusCompensationFailed,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Retry
			},
			local: true, want: process.StatusCompensated,
			hooks:   []string{"COMPENSATION_FAILED/LEDGER_CLOSED", "COMPENSATED/REJECTED"},
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1},
		},
		{
			name:   "failed, retried with regular activities: succeeded",
			script: func(f *fixture, key string) { f.fail(key, "Reserve", process.Failf("INSUFFICIENT_FUNDS", "not yet")) },
			first:  process.StatusFailed,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Retry
			},
			want:    process.StatusSucceeded,
			hooks:   []string{"FAILED/INSUFFICIENT_FUNDS", "SUCCEEDED/"},
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
		},
		{
			name:   "failed, compensation forced: nothing to undo",
			script: func(f *fixture, key string) { f.fail(key, "Reserve", process.Failf("INSUFFICIENT_FUNDS", "no")) },
			first:  process.StatusFailed,
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Compensate
			},
			want:    process.StatusCompensated,
			hooks:   []string{"FAILED/INSUFFICIENT_FUNDS", "COMPENSATED/INSUFFICIENT_FUNDS"},
			effects: map[string]int{},
		},
		{
			name: "driver gone: Wake starts a runner",
			act: func(o *process.Operator) func(context.Context, uuid.UUID, string) (process.Instance, error) {
				return o.Wake
			},
			local:   true,
			want:    process.StatusSucceeded,
			hooks:   []string{"SUCCEEDED/"},
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			c, queue := f.onServer(t)
			op := process.NewOperator(process.OperatorConfig{DB: f.pool, Registry: f.reg, Client: c, TaskQueue: queue, Exec: process.ExecOptions{Local: tt.local}})
			key := uuid.NewString()
			id := process.ID(transfer, key)
			if tt.script != nil {
				tt.script(f, key)
			}
			if tt.first != "" {
				out := waitOutcome(t, startTransfer(t, c, queue, key, process.ExecOptions{Local: true}), 30*time.Second)
				if out.Status != tt.first {
					t.Fatalf("first outcome %+v", out)
				}
			} else if _, err := f.acts.Start(t.Context(), process.StartInput{Type: transfer, BusinessKey: key, WorkflowID: "never-started-" + key}); err != nil {
				t.Fatal(err)
			}
			inst, err := tt.act(op)(t.Context(), id, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if inst.Status != tt.want {
				if inst.WorkflowID != process.RunnerWorkflowID(id, inst.Version) {
					t.Fatalf("runner %q, want %q", inst.WorkflowID, process.RunnerWorkflowID(id, inst.Version))
				}
				out := waitOutcome(t, c.GetWorkflow(t.Context(), inst.WorkflowID, ""), 30*time.Second)
				if out.Status != tt.want {
					t.Fatalf("runner outcome %+v", out)
				}
			}
			if got := f.outcomes(t, key); !equal(got, tt.hooks) {
				t.Fatalf("hooks %v, want %v", got, tt.hooks)
			}
			if got := f.effects(t, key); !mapsEqual(got, tt.effects) {
				t.Fatalf("effects %v, want %v", got, tt.effects)
			}
		})
	}
}
