package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/process"
)

// TestRunDirect: the in-process runner takes the paths the workflow does
// (the same plan): success; a retryable code retried after its backoff;
// a permanent failure compensated last first; an infrastructure error
// returned with the process left where it was, which a second run then
// finishes.
func TestRunDirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	exec := process.ExecOptions{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	run := func(key string) (process.Outcome, error) {
		return process.RunDirect(ctx, f.acts, process.Options{Type: transfer, BusinessKey: key, Data: transferData{Amount: "10.00"}, Exec: exec})
	}
	f.fail("retried", "Debit", process.Failf("BUSY", "the core is busy"))
	f.fail("refused", "Notify", process.Failf("REJECTED", "no"))
	f.fail("down", "Debit", errors.New("connection refused"))
	tests := []struct {
		key        string
		want       process.Status
		wantCode   string
		wantErr    bool
		wantEffect map[string]int // each step's committed effects
	}{
		{"ok", process.StatusSucceeded, "", false, map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1}},
		{"retried", process.StatusSucceeded, "", false, map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1}},
		{"refused", process.StatusCompensated, "REJECTED", false, map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1}},
		{"down", process.StatusRunning, "", true, map[string]int{"Reserve": 1}},
	}
	for _, tt := range tests {
		out, err := run(tt.key)
		if (err != nil) != tt.wantErr || out.Status != tt.want || out.ErrorCode != tt.wantCode {
			t.Fatalf("%s: %+v, %v; want %s %q (error %t)", tt.key, out, err, tt.want, tt.wantCode, tt.wantErr)
		}
		if got := f.effects(t, tt.key); !maps.Equal(got, tt.wantEffect) {
			t.Fatalf("%s: effects %v, want %v", tt.key, got, tt.wantEffect)
		}
	}
	// The database is back: the same call finishes the process.
	if out, err := run("down"); err != nil || out.Status != process.StatusSucceeded {
		t.Fatalf("second run: %+v %v", out, err)
	}
}

// TestAdvance: one call runs a process's steps while none has to wait —
// through to the end, or compensated — and stops at a step backing off
// (a retryable code) or at an infrastructure error, with every step
// before it committed once; called again it goes on from there.
func TestAdvance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.fail("busy", "Debit", process.Failf("BUSY", "the core is busy"))
	f.fail("refused", "Notify", process.Failf("REJECTED", "no"))
	f.fail("down", "Debit", errors.New("connection refused"))
	tests := []struct {
		key        string
		want       process.Status
		wantStep   string
		wantErr    bool
		wantEffect map[string]int
	}{
		{"ok", process.StatusSucceeded, "", false, map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1}},
		{"refused", process.StatusCompensated, "", false, map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1}},
		{"busy", process.StatusRunning, "Debit", false, map[string]int{"Reserve": 1}},
		{"down", process.StatusRunning, "Debit", true, map[string]int{"Reserve": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			st, err := f.acts.Advance(ctx, process.StartInput{Type: transfer, BusinessKey: tt.key, Data: json.RawMessage(`{"amount":"10.00"}`)})
			if (err != nil) != tt.wantErr || st.Status != tt.want || (tt.wantStep != "" && st.Step != tt.wantStep) {
				t.Fatalf("%+v, %v; want %s at %q (error %t)", st, err, tt.want, tt.wantStep, tt.wantErr)
			}
			if got := f.effects(t, tt.key); !maps.Equal(got, tt.wantEffect) {
				t.Fatalf("effects %v, want %v", got, tt.wantEffect)
			}
			if tt.key == "busy" && st.Retries != 1 {
				t.Fatalf("retries %d, want the one backing off", st.Retries)
			}
		})
	}
	// Called again (the caller's retry): the process goes on from its step;
	// one backing off is not executed before its runner waits.
	st, err := f.acts.Advance(ctx, process.StartInput{Type: transfer, BusinessKey: "down"})
	if err != nil || st.Status != process.StatusSucceeded {
		t.Fatalf("down, again: %+v, %v", st, err)
	}
	if got := f.effects(t, "down"); !maps.Equal(got, map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1}) {
		t.Fatalf("down, again: effects %v", got)
	}
	if st, err = f.acts.Advance(ctx, process.StartInput{Type: transfer, BusinessKey: "busy"}); err != nil || st.Step != "Debit" || st.Retries != 1 {
		t.Fatalf("busy, again: %+v, %v; want it left to back off", st, err)
	}
}
