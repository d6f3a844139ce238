package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

// TestRoleWaitsForTheSchema: a role started beside serve works only once
// serve has migrated — not on the half-migrated schema it may find — and
// gives up with the fix when nobody migrates.
func TestRoleWaitsForTheSchema(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("migrated meanwhile", func(t *testing.T) {
		t.Parallel()
		store := &postgres.DB{Pool: pgtest.NewEmptyPool(t)}
		migrated := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, err := app.Migrate(context.Background(), store.Pool, quiet)
			migrated <- err
		}()
		if err := awaitCurrentSchema(t.Context(), store, quiet, time.Minute, 50*time.Millisecond); err != nil {
			t.Fatalf("awaitCurrentSchema: %v", err)
		}
		if err := <-migrated; err != nil {
			t.Fatalf("migrate: %v", err)
		}
		// Returned only once nothing was pending, however the poll fell.
		if err := requireCurrentSchema(t.Context(), store); err != nil {
			t.Fatalf("the schema the role started on: %v", err)
		}
	})
	t.Run("nobody migrates", func(t *testing.T) {
		t.Parallel()
		store := &postgres.DB{Pool: pgtest.NewEmptyPool(t)}
		err := awaitCurrentSchema(t.Context(), store, quiet, 200*time.Millisecond, 50*time.Millisecond)
		if !errors.Is(err, errSchemaBehind) {
			t.Fatalf("awaitCurrentSchema on an empty database: %v, want %v", err, errSchemaBehind)
		}
	})
}
