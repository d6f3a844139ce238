package process

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// TestVersionGuard: an update written from a stale read (another version,
// or a status the process has left) changes nothing and says so.
func TestVersionGuard(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	noop := func(context.Context, pgx.Tx, StepInput, *struct{}) error { return nil }
	reg, err := NewRegistry(Definition[struct{}]{
		Type: "T", Initial: "A", Next: func(string, struct{}) (string, error) { return "", nil },
		Steps: map[string]Step[struct{}]{"A": {Handler: noop}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := NewActivities(ActivitiesConfig{DB: pool, Registry: reg})
	if _, err := a.Start(ctx, StartInput{Type: "T", BusinessKey: "k"}); err != nil {
		t.Fatal(err)
	}
	read, err := Get(ctx, pool, ID("T", "k"))
	if err != nil {
		t.Fatal(err)
	}
	paused := read
	paused.Status, paused.ResumeStatus = StatusPaused, StatusNew
	if _, err := write(ctx, dbsqlc.New(pool), time.Now(), read, paused, entry{event: EventProcessPaused}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		from Instance
	}{
		{"stale version", read},
		{"status left", func() Instance { i := read; i.Version++; return i }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := tt.from
			to.Status = StatusRunning
			_, err := write(ctx, dbsqlc.New(pool), time.Now(), tt.from, to, entry{event: EventStepStarted})
			if !errors.Is(err, ErrVersionConflict) {
				t.Fatalf("err = %v, want ErrVersionConflict", err)
			}
		})
	}
	now, err := Get(ctx, pool, read.ID)
	if err != nil || now.Status != StatusPaused || now.Version != read.Version+1 {
		t.Fatalf("instance %+v %v", now, err)
	}
	entries, err := Log(ctx, pool, read.ID)
	if err != nil || len(entries) != 2 {
		t.Fatalf("log: %d entries, %v (a refused update must write none)", len(entries), err)
	}
}
