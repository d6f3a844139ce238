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
)

func rejectedErr(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, "REJECTED", nil)
}

// TestInitWorkflowBranches: the workflow returns Phase A's outcome (mocked
// here; TestInitPaymentBranches runs it on PostgreSQL), and a CONFLICT or
// a failure it cannot get past fails it.
func TestInitWorkflowBranches(t *testing.T) {
	t.Parallel()
	var a *payment.InitActivities
	slotAt := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name       string
		result     payment.InitResult
		err        error
		wantStatus payment.Status
		wantErr    bool
		wantCalls  int
	}{
		{name: "scheduled", result: payment.InitResult{Status: payment.StatusScheduled, ScheduledExecutionTime: slotAt}, wantStatus: payment.StatusScheduled, wantCalls: 1},
		{name: "rejected with its reason", result: payment.InitResult{Status: payment.StatusRejected, Reason: "invalid payment: amount: must be greater than zero"},
			wantStatus: payment.StatusRejected, wantCalls: 1},
		{name: "conflict fails the workflow, not retried", err: temporal.NewNonRetryableApplicationError("id used", payment.ErrTypeConflict, nil), wantErr: true, wantCalls: 1},
		{name: "the database down: retried, then fails", err: errors.New("db down"), wantErr: true, wantCalls: 10},
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
			req := validRequest(time.Now())
			calls := 0
			env.OnActivity(a.InitPayment, mock.Anything, mock.Anything, payment.InitWorkflowID(req.PaymentID)).Return(
				func(_ context.Context, r payment.Request, _ string) (payment.InitResult, error) {
					calls++
					res := tt.result
					res.PaymentID = r.PaymentID
					return res, tt.err
				})
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: payment.InitWorkflowID(req.PaymentID)})
			env.ExecuteWorkflow(payment.PaymentInitWorkflow, req)
			if !env.IsWorkflowCompleted() {
				t.Fatal("not completed")
			}
			err := env.GetWorkflowError()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if calls != tt.wantCalls {
				t.Fatalf("Phase A ran %d times, want %d", calls, tt.wantCalls)
			}
			if err != nil {
				return
			}
			var res payment.InitResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.wantStatus || res.PaymentID != req.PaymentID {
				t.Fatalf("result = %+v, want %s", res, tt.wantStatus)
			}
			if tt.wantStatus == payment.StatusRejected && res.Reason == "" {
				t.Fatal("no reason")
			}
			if tt.wantStatus == payment.StatusScheduled && !res.ScheduledExecutionTime.Equal(slotAt) {
				t.Fatalf("scheduled at %s, want the slot %s", res.ScheduledExecutionTime, slotAt)
			}
		})
	}
}

// TestExecWorkflowUnreadableContext: a context the workflow cannot read
// fails it for good (retrying cannot help), before any step.
func TestExecWorkflowUnreadableContext(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The SDK's deadlock detector measures wall time: 1 s by default,
	// which a parallel test on a loaded 2-core machine can exceed.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
	env.ExecuteWorkflow(payment.PaymentExecWorkflow, "pay-1", `not json`)
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("unreadable context: %v", err)
	}
}
