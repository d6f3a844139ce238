package process_test

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/process"
)

// TestLogIsAppendOnly: the trigger refuses to change or remove entries.
func TestLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	tests := []struct{ name, sql string }{
		{"update", `UPDATE process_log SET event = 'ProcessFailed'`},
		{"delete", `DELETE FROM process_log`},
		{"truncate", `TRUNCATE process_log`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.pool.Exec(t.Context(), tt.sql)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if got := f.events(t, "k"); len(got) != 1 {
		t.Fatalf("log %v", got)
	}
}

// TestReplayRefusesImpossibleLogs: replay checks that each entry can
// follow the ones before it.
func TestReplayRefusesImpossibleLogs(t *testing.T) {
	t.Parallel()
	e := func(ev process.Event, step string) process.LogEntry {
		return process.LogEntry{Event: ev, Step: step, Detail: []byte(`{"next":""}`)}
	}
	started := e(process.EventProcessStarted, "A")
	tests := []struct {
		name    string
		entries []process.LogEntry
		want    process.Replayed
		wantErr bool
	}{
		{name: "empty", wantErr: true},
		{name: "no start", entries: []process.LogEntry{e(process.EventStepStarted, "A")}, wantErr: true},
		{name: "started twice", entries: []process.LogEntry{started, started}, wantErr: true},
		{name: "another step", entries: []process.LogEntry{started, e(process.EventStepStarted, "B")}, wantErr: true},
		{name: "resume unpaused", entries: []process.LogEntry{started, e(process.EventProcessResumed, "A")}, wantErr: true},
		{name: "completed after failure", entries: []process.LogEntry{started, e(process.EventStepStarted, "A"),
			e(process.EventProcessFailed, "A"), e(process.EventProcessCompleted, "A")}, wantErr: true},
		{name: "unknown event", entries: []process.LogEntry{started, e("Bogus", "A")}, wantErr: true},
		{name: "paused new", entries: []process.LogEntry{started, e(process.EventProcessPaused, "A")},
			want: process.Replayed{Status: process.StatusPaused, Step: "A", ResumeStatus: process.StatusNew}},
		{name: "retried failure", entries: []process.LogEntry{started, e(process.EventStepStarted, "A"),
			e(process.EventStepFailed, "A"), e(process.EventProcessFailed, "A"), e(process.EventOperatorRetry, "A")},
			want: process.Replayed{Status: process.StatusRunning, Step: "A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := process.Replay(tt.entries)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && got != tt.want {
				t.Fatalf("replayed %+v, want %+v", got, tt.want)
			}
		})
	}
}
