package payment_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/payment"
)

func rejectedErr(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, "REJECTED", nil)
}

// TestInitWorkflowBranches: each Phase A branch, with mocked activities.
func TestInitWorkflowBranches(t *testing.T) {
	t.Parallel()
	var a *payment.InitActivities
	tests := []struct {
		name                            string
		validateErr, enrichErr, ruleErr error
		persistErr, enqueueErr, slotErr error
		wantStatus                      payment.Status
		wantErr                         bool
		wantCalled, wantNotCalled       []string
	}{
		{name: "happy path", wantStatus: payment.StatusScheduled,
			wantCalled: []string{"Validate", "Enrich", "ApplyRules", "ExecTime", "PersistScheduled", "Enqueue"}, wantNotCalled: []string{"Reject"}},
		{name: "no slot, nothing persisted", slotErr: temporal.NewNonRetryableApplicationError("exhausted", "X", nil), wantErr: true,
			wantCalled: []string{"ExecTime"}, wantNotCalled: []string{"PersistScheduled", "Enqueue", "Reject"}},
		{name: "validation failure rejects", validateErr: rejectedErr("amount: must be greater than zero"), wantStatus: payment.StatusRejected,
			wantCalled: []string{"Reject"}, wantNotCalled: []string{"Enrich", "PersistScheduled", "Enqueue"}},
		{name: "enrichment failure rejects", enrichErr: rejectedErr("creditor country unknown"), wantStatus: payment.StatusRejected,
			wantCalled: []string{"Reject"}, wantNotCalled: []string{"ApplyRules", "PersistScheduled", "Enqueue"}},
		{name: "rule failure rejects", ruleErr: rejectedErr("rule MAX_AMOUNT"), wantStatus: payment.StatusRejected,
			wantCalled: []string{"Reject"}, wantNotCalled: []string{"PersistScheduled", "Enqueue"}},
		{name: "persist failure enqueues nothing", persistErr: temporal.NewNonRetryableApplicationError("conflict", "CONFLICT", nil), wantErr: true,
			wantNotCalled: []string{"Enqueue", "Reject"}},
		{name: "enqueue failure fails the workflow", enqueueErr: temporal.NewNonRetryableApplicationError("db down", "X", nil), wantErr: true,
			wantCalled: []string{"PersistScheduled", "Enqueue"}, wantNotCalled: []string{"Reject"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterActivity(a)
			called := map[string]int{}
			count := func(name string) func(mock.Arguments) { return func(mock.Arguments) { called[name]++ } }
			env.OnActivity(a.Validate, mock.Anything, mock.Anything).Return("125.00", tt.validateErr).Run(count("Validate"))
			env.OnActivity(a.Enrich, mock.Anything, mock.Anything).Return(payment.Enrichment{CreditorCountry: "DE"}, tt.enrichErr).Run(count("Enrich"))
			env.OnActivity(a.ApplyRules, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return([]string{"MAX_AMOUNT"}, tt.ruleErr).Run(count("ApplyRules"))
			env.OnActivity(a.Reject, mock.Anything, mock.Anything, mock.Anything).Return(nil).Run(count("Reject"))
			req := validRequest(time.Now())
			slotAt := req.RequestedExecutionTime.Add(1234 * time.Millisecond)
			env.OnActivity(a.ExecTime, mock.Anything, mock.Anything).Return(payment.ExecSlot{At: slotAt, Paced: true}, tt.slotErr).Run(count("ExecTime"))
			env.OnActivity(a.PersistScheduled, mock.Anything, mock.Anything, mock.Anything).Return(tt.persistErr).Run(func(args mock.Arguments) {
				called["PersistScheduled"]++
				if at := args.Get(2).(time.Time); !at.Equal(slotAt) {
					t.Errorf("persisted exec time %s, want the slot %s", at, slotAt)
				}
			})
			env.OnActivity(a.Enqueue, mock.Anything, mock.Anything).Return(tt.enqueueErr).Run(func(args mock.Arguments) {
				called["Enqueue"]++
				if in := args.Get(1).(payment.EnqueueInput); !in.ExecAt.Equal(slotAt) || !in.Paced {
					t.Errorf("enqueued at %s paced %t, want the slot %s, paced", in.ExecAt, in.Paced, slotAt)
				}
			})

			env.ExecuteWorkflow(payment.PaymentInitWorkflow, req)
			if !env.IsWorkflowCompleted() {
				t.Fatal("not completed")
			}
			err := env.GetWorkflowError()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil {
				var res payment.InitResult
				if err := env.GetWorkflowResult(&res); err != nil {
					t.Fatal(err)
				}
				if res.Status != tt.wantStatus {
					t.Fatalf("status = %s, want %s", res.Status, tt.wantStatus)
				}
				if tt.wantStatus == payment.StatusRejected && res.Reason == "" {
					t.Fatal("no reason")
				}
			}
			for _, n := range tt.wantCalled {
				if called[n] == 0 {
					t.Errorf("%s not called", n)
				}
			}
			for _, n := range tt.wantNotCalled {
				if called[n] != 0 {
					t.Errorf("%s called", n)
				}
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
