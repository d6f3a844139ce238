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

	"github.com/paydispatch/paydispatch/dispatch"
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

func TestExecWorkflow(t *testing.T) {
	t.Parallel()
	var a *payment.ExecActivities
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	var order []string
	env.OnActivity(a.ExecutePayment, mock.Anything, "pay-1", time.Time{}).Return(nil).Run(func(mock.Arguments) { order = append(order, "execute") })
	env.OnActivity(a.PostProcess, mock.Anything, "pay-1", mock.Anything).Return(nil).Run(func(mock.Arguments) { order = append(order, "post") })
	env.OnActivity(a.SendNotifications, mock.Anything, "pay-1").Return(nil).Run(func(mock.Arguments) { order = append(order, "notify") })
	env.ExecuteWorkflow(payment.PaymentExecWorkflow, "pay-1", `{"version":1}`)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != "execute" || order[1] != "post" || order[2] != "notify" {
		t.Fatalf("order = %v", order)
	}

	// Started ahead of its paced slot: the execute step is given the slot
	// to hold for.
	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	slot := env.Now().Add(2 * time.Second).UTC()
	if err := env.SetMemoOnStart(map[string]any{dispatch.NotBeforeMemo: slot.Format(time.RFC3339Nano)}); err != nil {
		t.Fatal(err)
	}
	var heldFor time.Time
	env.OnActivity(a.ExecutePayment, mock.Anything, "pay-1", mock.Anything).Return(nil).Run(func(args mock.Arguments) { heldFor = args.Get(2).(time.Time) })
	env.OnActivity(a.PostProcess, mock.Anything, "pay-1", mock.Anything).Return(nil)
	env.OnActivity(a.SendNotifications, mock.Anything, "pay-1").Return(nil)
	env.ExecuteWorkflow(payment.PaymentExecWorkflow, "pay-1", `{"version":1}`)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !heldFor.Equal(slot) {
		t.Fatalf("execute step told to hold until %s, want the slot %s", heldFor, slot)
	}

	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	env.ExecuteWorkflow(payment.PaymentExecWorkflow, "pay-1", `not json`)
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) {
		t.Fatalf("unreadable context: %v", err)
	}
}
