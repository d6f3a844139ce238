package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
)

func TestHold(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		until   time.Time
		wantErr error
	}{
		{"zero: at once", context.Background(), time.Time{}, nil},
		{"past: at once", context.Background(), time.Now().Add(-time.Hour), nil},
		{"future: not before it", context.Background(), time.Now().Add(50 * time.Millisecond), nil},
		{"cancelled while holding", cancelled, time.Now().Add(time.Hour), context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := dispatch.Hold(tc.ctx, tc.until)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Hold: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && time.Now().Before(tc.until) {
				t.Fatalf("Hold returned before %s", tc.until)
			}
		})
	}
}

// NotBefore reads the slot the engine put in the start's memo; a workflow
// started without one reads zero.
func TestNotBefore(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 12, 1, 16, 0, 0, 123_000_000, time.UTC)
	for _, tc := range []struct {
		name string
		memo map[string]any
		want time.Time
	}{
		{"slot in the memo", map[string]any{dispatch.NotBeforeMemo: slot.Format(time.RFC3339Nano)}, slot},
		{"no memo", nil, time.Time{}},
		{"unreadable", map[string]any{dispatch.NotBeforeMemo: "16:00"}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			// The SDK's deadlock detector measures wall time: 1 s by default,
			// which a parallel test on a loaded 2-core machine can exceed.
			env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 30 * time.Second})
			if tc.memo != nil {
				require.NoError(t, env.SetMemoOnStart(tc.memo))
			}
			env.ExecuteWorkflow(func(ctx workflow.Context) (time.Time, error) { return dispatch.NotBefore(ctx), nil })
			require.NoError(t, env.GetWorkflowError())
			var got time.Time
			require.NoError(t, env.GetWorkflowResult(&got))
			if !got.Equal(tc.want) {
				t.Fatalf("NotBefore = %s, want %s", got, tc.want)
			}
		})
	}
}
