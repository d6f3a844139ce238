package temporal

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
)

// TestHeldTaskFilter: the TMPRL1104 warning of a held workflow type's task
// within a hold is dropped; the same warning for another type or a longer
// task, and every other line, are kept. Through the SDK's own logger
// adapter, as the worker logs it.
func TestHeldTaskFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg, wfType string
		took              time.Duration
		kept              bool
	}{
		{"a paced execution's hold", "[TMPRL1104] r:4:1 Workflow task duration exceeded 5 seconds.", "PaymentExecution", 6 * time.Second, false},
		{"a held type, longer than any hold", "[TMPRL1104] r:4:1 Workflow task duration exceeded 5 seconds.", "PaymentExecution", 2 * time.Minute, true},
		{"another type", "[TMPRL1104] r:4:1 Workflow task duration exceeded 5 seconds.", "DispatcherWorkflow", 6 * time.Second, true},
		{"another warning", "Activity error.", "PaymentExecution", 6 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			base := slog.New(slog.NewTextHandler(&out, nil))
			log := sdklog.NewStructuredLogger(slog.New(heldTaskFilter{Handler: base.Handler(), types: []string{"PaymentExecution"}}).With("component", "temporal-client"))
			log.Warn(tt.msg, "WorkflowType", tt.wfType, "WorkflowID", "exec-PAYMENT-p1", "WorkflowTaskDuration", tt.took)
			if kept := strings.Contains(out.String(), tt.msg); kept != tt.kept {
				t.Fatalf("kept %v, want %v: %q", kept, tt.kept, out.String())
			}
		})
	}
}
