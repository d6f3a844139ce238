package app_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
)

// TestOptionsDefaults: the zero Options are what serve runs (1,000
// workflow task slots, 200 activities, the SDK's pollers), and a
// benchmark's settings replace only what they name.
func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	w := app.Options{}.WorkerOptions()
	if w.MaxConcurrentWorkflowTaskExecutionSize != app.DefaultWorkflowTaskSlots || app.DefaultWorkflowTaskSlots != 1000 ||
		w.MaxConcurrentActivityExecutionSize != 200 || w.MaxConcurrentWorkflowTaskPollers != 0 || w.MaxConcurrentActivityTaskPollers != 0 {
		t.Fatalf("the defaults: %+v", w)
	}
	w = app.Options{WorkflowTaskSlots: 300, Pollers: 8}.WorkerOptions()
	if w.MaxConcurrentWorkflowTaskExecutionSize != 300 || w.MaxConcurrentActivityExecutionSize != 200 ||
		w.MaxConcurrentWorkflowTaskPollers != 8 || w.MaxConcurrentActivityTaskPollers != 8 {
		t.Fatalf("a benchmark's: %+v", w)
	}
}
