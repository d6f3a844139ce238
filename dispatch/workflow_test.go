package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/queue"
)

func testConfig(enabled bool) queue.Settings {
	return queue.Settings{
		ItemType: itemType, Enabled: enabled, BatchSize: 500, DispatchInterval: 5 * time.Second,
		JitterWindow: 4 * time.Second, MaxDispatchRetries: 3, StaleClaimThreshold: 2 * time.Minute,
		MaxStaleRecoveryPerCycle: 100, ExecWorkflowType: "PaymentExecution", ExecTaskQueue: "payment-exec-task-queue",
	}
}

// TestDispatcherWorkflowBranches drives the cycle with mocked activities.
func TestDispatcherWorkflowBranches(t *testing.T) {
	t.Parallel()
	var a *dispatch.Activities
	tests := []struct {
		name       string
		enabled    bool
		recovery   dispatch.Recovery
		recon      dispatch.Reconciliation
		dispatch   dispatch.Dispatch
		claimErr   error
		wantCalls  []string // activities that must run
		wantNot    []string // activities that must not run
		wantErr    bool
		wantResult func(t *testing.T, r dispatch.CycleResult)
	}{
		{
			name: "kill switch returns after reading config", enabled: false,
			wantCalls: []string{"ReadConfig"},
			wantNot:   []string{"RecoverStaleClaims", "Reconcile", "ClaimAndDispatch", "RecordResults"},
			wantResult: func(t *testing.T, r dispatch.CycleResult) {
				if !r.Disabled {
					t.Error("Disabled not reported")
				}
			},
		},
		{
			name: "empty batch records nothing", enabled: true,
			dispatch:  dispatch.Dispatch{BatchID: "B", Claimed: 0},
			wantCalls: []string{"ReadConfig", "RecoverStaleClaims", "Reconcile", "ClaimAndDispatch"},
			wantNot:   []string{"RecordResults"},
		},
		{
			name: "a dispatched batch is recorded", enabled: true,
			dispatch:  dispatch.Dispatch{BatchID: "B", Claimed: 3, Started: 1, AlreadyStarted: 1, StartFailed: 1},
			wantCalls: []string{"ReadConfig", "RecoverStaleClaims", "Reconcile", "ClaimAndDispatch", "RecordResults"},
			wantResult: func(t *testing.T, r dispatch.CycleResult) {
				if r.Dispatch.Started != 1 || r.Dispatch.AlreadyStarted != 1 || r.Dispatch.StartFailed != 1 {
					t.Errorf("dispatch result %+v", r.Dispatch)
				}
			},
		},
		{
			name: "stale recovery alone is recorded", enabled: true,
			recovery:  dispatch.Recovery{Released: 2, Dispatched: 1},
			wantCalls: []string{"RecoverStaleClaims", "ClaimAndDispatch", "RecordResults"},
		},
		{
			name: "a failing claim fails the cycle", enabled: true,
			claimErr:  errors.New("database down"),
			wantCalls: []string{"ClaimAndDispatch"},
			wantNot:   []string{"RecordResults"},
			wantErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			// The SDK's deadlock detector measures wall time: 1 s by default,
			// which a parallel test on a loaded 2-core machine can exceed.
			env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
			env.RegisterActivity(a)
			called := map[string]int{}
			env.OnActivity(a.ReadConfig, mock.Anything, itemType).Return(testConfig(tt.enabled), nil).
				Run(func(mock.Arguments) { called["ReadConfig"]++ })
			env.OnActivity(a.RecoverStaleClaims, mock.Anything, mock.Anything).Return(tt.recovery, nil).
				Run(func(mock.Arguments) { called["RecoverStaleClaims"]++ })
			env.OnActivity(a.Reconcile, mock.Anything, mock.Anything).Return(tt.recon, nil).
				Run(func(mock.Arguments) { called["Reconcile"]++ })
			env.OnActivity(a.ClaimAndDispatch, mock.Anything, mock.Anything).Return(tt.dispatch, tt.claimErr).
				Run(func(mock.Arguments) { called["ClaimAndDispatch"]++ })
			env.OnActivity(a.RecordResults, mock.Anything, mock.Anything).Return(nil).
				Run(func(mock.Arguments) { called["RecordResults"]++ })

			env.ExecuteWorkflow(dispatch.DispatcherWorkflow, itemType)
			if !env.IsWorkflowCompleted() {
				t.Fatal("workflow did not complete")
			}
			err := env.GetWorkflowError()
			if (err != nil) != tt.wantErr {
				t.Fatalf("workflow error = %v, want error %v", err, tt.wantErr)
			}
			for _, name := range tt.wantCalls {
				if called[name] == 0 {
					t.Errorf("%s not called", name)
				}
			}
			for _, name := range tt.wantNot {
				if called[name] != 0 {
					t.Errorf("%s called", name)
				}
			}
			if tt.wantResult != nil && err == nil {
				var r dispatch.CycleResult
				if err := env.GetWorkflowResult(&r); err != nil {
					t.Fatal(err)
				}
				tt.wantResult(t, r)
			}
		})
	}
}

// TestDispatchCycle: the schedule's workflow runs the cycle as one local
// activity, again after a failed attempt, and answers its result.
func TestDispatchCycle(t *testing.T) {
	t.Parallel()
	var a *dispatch.Activities
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	env.RegisterActivity(a)
	want := dispatch.CycleResult{ItemType: itemType, Dispatch: dispatch.Dispatch{Claimed: 7}}
	calls := 0
	env.OnActivity(a.RunCycle, mock.Anything, itemType).Return(func(context.Context, string) (dispatch.CycleResult, error) {
		calls++
		if calls == 1 {
			return dispatch.CycleResult{}, errors.New("the database blinked")
		}
		return want, nil
	})
	env.ExecuteWorkflow(dispatch.DispatchCycle, itemType)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got dispatch.CycleResult
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if calls != 2 || got.Dispatch.Claimed != 7 {
		t.Fatalf("RunCycle called %d times, result %+v; want 2 and %+v", calls, got, want)
	}
}
