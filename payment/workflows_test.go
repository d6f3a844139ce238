package payment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
)

// newTestEnv is the SDK's test environment for one workflow. Its deadlock
// detector measures wall time: 1 s by default, which a parallel test on
// a loaded 2-core machine can exceed.
func newTestEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	return env
}

// TestExecWorkflowUnreadableContext: a context the workflow cannot read
// fails it for good (retrying cannot help), before any step.
func TestExecWorkflowUnreadableContext(t *testing.T) {
	t.Parallel()
	env := newTestEnv()
	env.ExecuteWorkflow(payment.PaymentExecution, "pay-1", `not json`)
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("unreadable context: %v", err)
	}
}

// TestPaymentExecutionPaths: an execution that goes through is Execution
// alone; one whose process has to wait goes on in process.Run, and is
// finished (recorded, notified) only if the process succeeded; an
// infrastructure failure Execution cannot get past fails the workflow, for
// the queue's retry. The activities are mocked: TestExecWorkflowOnTemporal
// runs them on Temporal's server and PostgreSQL.
func TestPaymentExecutionPaths(t *testing.T) {
	t.Parallel()
	var a *payment.ExecActivities
	succeeded := process.State{Status: process.StatusSucceeded, Outcome: &process.Outcome{Status: process.StatusSucceeded}}
	failed := process.State{Status: process.StatusFailed, Outcome: &process.Outcome{Status: process.StatusFailed, ErrorCode: "INSUFFICIENT_FUNDS"}}
	tests := []struct {
		name        string
		done        bool
		executeErr  error
		run         *process.State // what process.Run finds, when Execution leaves the process waiting
		wantFinish  int
		wantExecute int
		wantErr     bool
	}{
		{name: "went through", done: true, wantExecute: 1},
		{name: "waited, then succeeded", run: &succeeded, wantExecute: 1, wantFinish: 1},
		{name: "waited, then failed", run: &failed, wantExecute: 1},
		{name: "the database down", executeErr: errors.New("db down"), wantExecute: 10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := newTestEnv()
			env.RegisterActivity(a)
			process.Register(env, process.NewActivities(process.ActivitiesConfig{}))
			executes, finishes, starts := 0, 0, 0
			env.OnActivity(a.Execution, mock.Anything, mock.Anything).Return(func(_ context.Context, in payment.ExecutionInput) (bool, error) {
				executes++
				if in.PaymentID != "pay-1" || in.WorkflowID != "exec-payment-pay-1" {
					t.Errorf("Execution got %+v", in)
				}
				return tt.done, tt.executeErr
			})
			env.OnActivity(process.StartActivity, mock.Anything, mock.Anything).Return(func(context.Context, process.StartInput) (process.State, error) {
				starts++
				return *tt.run, nil
			})
			env.OnActivity(a.Finish, mock.Anything, "pay-1", mock.Anything).Return(func(context.Context, string, string) error {
				finishes++
				return nil
			})
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "exec-payment-pay-1"})
			env.ExecuteWorkflow(payment.PaymentExecution, "pay-1", `{"version":2}`)
			if err := env.GetWorkflowError(); (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			wantStarts := 0
			if tt.run != nil {
				wantStarts = 1
			}
			if executes != tt.wantExecute || finishes != tt.wantFinish || starts != wantStarts {
				t.Fatalf("Execution %d, process.Start %d, Finish %d; want %d, %d, %d", executes, starts, finishes, tt.wantExecute, wantStarts, tt.wantFinish)
			}
		})
	}
}
