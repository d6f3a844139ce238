package process_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/process"
)

// fastExec keeps the SDK environment's retries short.
func fastExec(local bool) process.ExecOptions {
	return process.ExecOptions{
		Local:       local,
		Timeout:     10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 3},
	}
}

// transferWorkflow is a caller: it runs a Transfer inline.
func transferWorkflow(ctx workflow.Context, key string, data transferData, exec process.ExecOptions) (process.Outcome, error) {
	return process.Run(ctx, process.Options{Type: transfer, BusinessKey: key, Data: data, Exec: exec})
}

func runTransfer(t *testing.T, f *fixture, key string, data transferData, exec process.ExecOptions) (process.Outcome, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The SDK's deadlock detector measures wall time: 1 s by default,
	// which a parallel test on a loaded 2-core machine can exceed.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	process.Register(env, f.acts)
	env.RegisterWorkflow(transferWorkflow)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "transfer-" + key})
	env.ExecuteWorkflow(transferWorkflow, key, data, exec)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow not completed")
	}
	if err := env.GetWorkflowError(); err != nil {
		return process.Outcome{}, err
	}
	var out process.Outcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

var (
	happyEvents = []string{
		"ProcessStarted Reserve", "StepStarted Reserve", "StepCompleted Reserve",
		"StepStarted Debit", "StepCompleted Debit", "StepStarted Notify", "StepCompleted Notify", "ProcessCompleted Notify",
	}
	upToNotify = happyEvents[:5]
)

func concat(parts ...[]string) []string { return slices.Concat(parts...) }

// TestRun drives Transfers through Run in the SDK test environment, with
// local and with regular activities, against PostgreSQL.
func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		script      func(f *fixture, key string)
		wantStatus  process.Status
		wantErr     bool
		wantEvents  []string
		wantEffects map[string]int
		wantHooks   []string
		wantFailure string // failed step/code on the instance
	}{
		{
			name:        "happy path",
			wantStatus:  process.StatusSucceeded,
			wantEvents:  happyEvents,
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
			wantHooks:   []string{"SUCCEEDED/"},
		},
		{
			name:       "retryable code retried, then succeeding",
			script:     func(f *fixture, key string) { f.fail(key, "Debit", busy(), busy()) },
			wantStatus: process.StatusSucceeded,
			wantEvents: concat(happyEvents[:3],
				[]string{"StepStarted Debit", "StepFailed Debit:BUSY", "StepStarted Debit", "StepFailed Debit:BUSY"},
				happyEvents[3:]),
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
			wantHooks:   []string{"SUCCEEDED/"},
		},
		{
			name:       "permanent failure compensates in reverse order",
			script:     func(f *fixture, key string) { f.fail(key, "Notify", process.Failf("REJECTED", "the rail refused it")) },
			wantStatus: process.StatusCompensated,
			wantEvents: concat(upToNotify, []string{
				"StepStarted Notify", "StepFailed Notify:REJECTED", "ProcessCompensating Refund:REJECTED",
				"CompensationStarted Refund", "CompensationCompleted Refund",
				"CompensationStarted Release", "CompensationCompleted Release", "ProcessCompensated Release:REJECTED",
			}),
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1},
			wantHooks:   []string{"COMPENSATED/REJECTED"},
			wantFailure: "Notify/REJECTED",
		},
		{
			name: "failure with nothing to compensate",
			script: func(f *fixture, key string) {
				f.fail(key, "Reserve", process.Failf("INSUFFICIENT_FUNDS", "balance 10.00 < 125.10"))
			},
			wantStatus:  process.StatusFailed,
			wantEvents:  []string{"ProcessStarted Reserve", "StepStarted Reserve", "StepFailed Reserve:INSUFFICIENT_FUNDS", "ProcessFailed Reserve:INSUFFICIENT_FUNDS"},
			wantEffects: map[string]int{},
			wantHooks:   []string{"FAILED/INSUFFICIENT_FUNDS"},
			wantFailure: "Reserve/INSUFFICIENT_FUNDS",
		},
		{
			name:       "retries used up: permanent",
			script:     func(f *fixture, key string) { f.fail(key, "Debit", busy(), busy(), busy(), busy()) },
			wantStatus: process.StatusCompensated,
			wantEvents: concat(happyEvents[:3],
				slices.Repeat([]string{"StepStarted Debit", "StepFailed Debit:BUSY"}, 4),
				[]string{"ProcessCompensating Release:BUSY", "CompensationStarted Release", "CompensationCompleted Release", "ProcessCompensated Release:BUSY"}),
			wantEffects: map[string]int{"Reserve": 1, "Release": 1},
			wantHooks:   []string{"COMPENSATED/BUSY"},
			wantFailure: "Debit/BUSY",
		},
		{
			name:        "a step past its deadline times out and is retried",
			script:      func(f *fixture, key string) { f.slow(key, "Notify", 3*time.Second) },
			wantStatus:  process.StatusSucceeded,
			wantEvents:  concat(upToNotify, []string{"StepStarted Notify", "StepTimedOut Notify:TIMEOUT"}, happyEvents[5:]),
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
			wantHooks:   []string{"SUCCEEDED/"},
		},
		{
			name: "compensation failing for good",
			script: func(f *fixture, key string) {
				f.fail(key, "Notify", process.Failf("REJECTED", "no"))
				f.fail(key, "Release", process.Failf("LEDGER_CLOSED", "the ledger is closed for the day"))
			},
			wantStatus: process.StatusCompensationFailed,
			wantEvents: concat(upToNotify, []string{
				"StepStarted Notify", "StepFailed Notify:REJECTED", "ProcessCompensating Refund:REJECTED",
				"CompensationStarted Refund", "CompensationCompleted Refund",
				"CompensationStarted Release", "CompensationFailed Release:LEDGER_CLOSED", "ProcessCompensationFailed Release:LEDGER_CLOSED",
			}),
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1},
			wantHooks:   []string{"COMPENSATION_FAILED/LEDGER_CLOSED"},
			wantFailure: "Notify/REJECTED",
		},
		{
			name: "compensation retried on a retryable code",
			script: func(f *fixture, key string) {
				f.fail(key, "Debit", process.Failf("ACCOUNT_BLOCKED", "blocked"))
				f.fail(key, "Release", busy())
			},
			wantStatus: process.StatusCompensated,
			wantEvents: concat(happyEvents[:3], []string{
				"StepStarted Debit", "StepFailed Debit:ACCOUNT_BLOCKED", "ProcessCompensating Release:ACCOUNT_BLOCKED",
				"CompensationStarted Release", "CompensationFailed Release:BUSY",
				"CompensationStarted Release", "CompensationCompleted Release", "ProcessCompensated Release:ACCOUNT_BLOCKED",
			}),
			wantEffects: map[string]int{"Reserve": 1, "Release": 1},
			wantHooks:   []string{"COMPENSATED/ACCOUNT_BLOCKED"},
			wantFailure: "Debit/ACCOUNT_BLOCKED",
		},
		{
			name:        "infrastructure error: rolled back, retried by Temporal, unseen by the process",
			script:      func(f *fixture, key string) { f.fail(key, "Debit", errConnRefused, errConnRefused) },
			wantStatus:  process.StatusSucceeded,
			wantEvents:  happyEvents,
			wantEffects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
			wantHooks:   []string{"SUCCEEDED/"},
		},
		{
			name:        "infrastructure down through every retry: the caller fails, the process waits",
			script:      func(f *fixture, key string) { f.fail(key, "Debit", errConnRefused, errConnRefused, errConnRefused) },
			wantErr:     true,
			wantStatus:  process.StatusRunning,
			wantEvents:  happyEvents[:3],
			wantEffects: map[string]int{"Reserve": 1},
		},
	}
	for _, local := range []bool{true, false} {
		mode := map[bool]string{true: "local", false: "regular"}[local]
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					key := mode + "-" + string(rune('a'+i))
					if tt.script != nil {
						tt.script(f, key)
					}
					data := transferData{Amount: "125.10", Big: "12345678901234567890", Rate: "1.10"}
					out, err := runTransfer(t, f, key, data, fastExec(local))
					if (err != nil) != tt.wantErr {
						t.Fatalf("err = %v", err)
					}
					inst := f.get(t, key)
					if inst.Status != tt.wantStatus {
						t.Fatalf("status %s, want %s", inst.Status, tt.wantStatus)
					}
					if !tt.wantErr {
						if out.Status != tt.wantStatus || out.ProcessID != process.ID(transfer, key) {
							t.Fatalf("outcome %+v", out)
						}
						// Numbers come back exactly, through PostgreSQL; the
						// outcome carries no data through the engine.
						if d := dataOf(t, inst.Data); d.Amount != "125.10" || d.Big != "12345678901234567890" || d.Rate != "1.10" {
							t.Fatalf("data did not round-trip: %s", inst.Data)
						}
						if out.Data != nil {
							t.Fatalf("the outcome carried the data through the engine: %s", out.Data)
						}
						if got := out.FailedStep + "/" + out.ErrorCode; tt.wantFailure != "" && got != tt.wantFailure {
							t.Fatalf("outcome failure %s, want %s", got, tt.wantFailure)
						}
					}
					if got := inst.FailedStep + "/" + inst.ErrorCode; tt.wantFailure != "" && got != tt.wantFailure {
						t.Fatalf("instance failure %s, want %s", got, tt.wantFailure)
					}
					if got := f.events(t, key); !slices.Equal(got, tt.wantEvents) {
						t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.wantEvents, "\n"))
					}
					if got := f.effects(t, key); !mapsEqual(got, tt.wantEffects) {
						t.Fatalf("effects %v, want %v", got, tt.wantEffects)
					}
					if got := f.outcomes(t, key); !slices.Equal(got, tt.wantHooks) {
						t.Fatalf("hooks %v, want %v", got, tt.wantHooks)
					}
					if !tt.wantErr {
						return
					}
					// The caller's own retry (the dispatch queue's) runs the
					// workflow again: it finds the process and goes on from
					// Debit; Reserve is not done again.
					out, err = runTransfer(t, f, key, transferData{}, fastExec(local))
					if err != nil || out.Status != process.StatusSucceeded {
						t.Fatalf("re-run: %+v, %v", out, err)
					}
					if got := f.effects(t, key); !mapsEqual(got, map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1}) {
						t.Fatalf("effects after the re-run %v", got)
					}
				})
			}
		})
	}
}

// TestRetryAttemptsAndBackoff: attempts are counted and given to the
// handler, and the runner backs off exponentially between them.
func TestRetryAttemptsAndBackoff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fail("k", "Reserve", busy(), busy(), busy())
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The SDK's deadlock detector measures wall time: 1 s by default,
	// which a parallel test on a loaded 2-core machine can exceed.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	process.Register(env, f.acts)
	env.RegisterWorkflow(transferWorkflow)
	start := env.Now()
	exec := fastExec(true)
	exec.InitialBackoff, exec.MaxBackoff = time.Minute, 3*time.Minute
	env.ExecuteWorkflow(transferWorkflow, "k", transferData{}, exec)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// 1 + 2 + 3 (capped from 4) minutes of backoff, on the test clock.
	if waited := env.Now().Sub(start); waited < 6*time.Minute || waited > 7*time.Minute {
		t.Fatalf("backed off %s, want 6 min", waited)
	}
	var out process.Outcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	inst, err := process.Get(t.Context(), f.pool, out.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	if d := dataOf(t, inst.Data); d.Attempts["Reserve"] != 4 || d.Attempts["Debit"] != 1 {
		t.Fatalf("attempts in data: %s", inst.Data)
	}
	entries, err := process.Log(t.Context(), f.pool, out.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	var attempts []int
	for _, e := range entries {
		if e.Event == process.EventStepFailed {
			attempts = append(attempts, e.Attempt)
			var d struct{ Retryable, Retry bool }
			if err := json.Unmarshal(e.Detail, &d); err != nil || !d.Retryable || !d.Retry {
				t.Fatalf("StepFailed detail %s", e.Detail)
			}
		}
	}
	if !slices.Equal(attempts, []int{1, 2, 3}) {
		t.Fatalf("failed attempts %v", attempts)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
