package app_test

import (
	"context"
	"log/slog"

	"github.com/paydispatch/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/temporal"
)

// Serve's roles, started on an open store and Temporal connection: Phase A
// and Phase B workers and the dispatcher on its Temporal Schedule.
func Example() {
	ctx := context.Background()
	log := slog.Default()
	var (
		db *postgres.DB   // postgres.Open(...)
		tc *temporal.Conn // temporal.Connect(...)
	)
	if db == nil || tc == nil {
		return // a sketch: open both first
	}
	stopInit, _ := app.StartInitWorker(db, tc, log)
	defer stopInit()
	stopExec, _ := app.StartExecWorker(db, tc, log)
	defer stopExec()
	stopDispatch, _ := app.StartDispatcher(ctx, "schedule", db, tc, nil, log)
	defer stopDispatch()
	_ = app.PaymentService(db, tc, 1000) // the intake the HTTP API calls
}
