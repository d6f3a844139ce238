package payment_test

import (
	"log/slog"
	"testing"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/payment"
)

// TestExecWorkflowReplaysOldHistories: exec workflows started before
// execution ran SubmitPayment replay on this code (recorded the same way
// as the init histories below, from a payment executed before).
func TestExecWorkflowReplaysOldHistories(t *testing.T) {
	t.Parallel()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(payment.PaymentExecWorkflow, workflow.RegisterOptions{Name: payment.LegacyExecWorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), "testdata/exec-v1.json"); err != nil {
		t.Fatal(err)
	}
}

// TestInitWorkflowReplaysOldHistories: init workflows started by an older
// release replay on this code (a change that is not behind
// workflow.GetVersion would strand them). The histories were recorded from
// PaymentInitWorkflow on Temporal's own server before Phase A became one
// step (a scheduled payment, and one rejected for its amount).
func TestInitWorkflowReplaysOldHistories(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/init-v1-scheduled.json", "testdata/init-v1-rejected.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(payment.PaymentInitWorkflow, workflow.RegisterOptions{Name: payment.InitWorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)), file); err != nil {
				t.Fatal(err)
			}
		})
	}
}
