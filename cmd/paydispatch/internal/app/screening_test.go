package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/screening"
	"github.com/paydispatch/paydispatch/temporal"
)

// TestScreeningAtIntake: with the screening URL set, the init worker as
// serve starts it screens a file's payments in Phase A: the listed
// creditor's payment is HELD by its hit and never queued, the others
// SCHEDULED; the calls' verdicts are counted. Unset: no control.
func TestScreeningAtIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	pool := pgtest.NewPool(t)
	db := &postgres.DB{Pool: pool}
	if none, err := app.ScreeningControls(db, config.Screening{}, nil, nil, log); err != nil || len(none) != 0 {
		t.Fatalf("screening off: %d controls, %v", len(none), err)
	}
	sim, err := screening.NewSimulator(screening.SimOptions{Names: []string{"Ivan Listed"}})
	if err != nil {
		t.Fatal(err)
	}
	url, stopSim, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSim)
	reg := prometheus.NewRegistry()
	controls, err := app.ScreeningControls(db, config.Screening{URL: url, Timeout: time.Second, Batch: 2, MaxInFlight: 2}, nil, reg, log)
	if err != nil || len(controls) != 1 {
		t.Fatalf("screening on: %d controls, %v", len(controls), err)
	}

	srv, c := temporaltest.Start(t)
	tc := &temporal.Conn{Client: c, Address: srv.HostPort(), Namespace: "default"}
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	openAccounts(t, pool, "t0")
	stop, err := app.StartInitWorker(db, tc, log, app.Options{Controls: controls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	var reqs []payment.Request
	for _, p := range []struct{ id, creditor string }{{"p-1", "Jane Doe"}, {"p-2", "ivan listed"}, {"p-3", "John Roe"}} {
		reqs = append(reqs, payment.Request{PaymentID: p.id, TenantID: "t0", DebtorAccount: "ACC-t0", Amount: "10.00", Currency: "EUR",
			Creditor: payment.Creditor{Name: p.creditor, IBAN: "DE89370400440532013000"}, RequestedExecutionTime: at})
	}
	if taken, err := app.PaymentService(db, tc, payment.ServiceConfig{}).Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs}); err != nil || taken.Refused() != nil {
		t.Fatal(err, taken.Refused())
	}
	want := map[string]payment.Status{"p-1": payment.StatusScheduled, "p-2": payment.StatusHeld, "p-3": payment.StatusScheduled}
	for deadline := time.Now().Add(time.Minute); ; {
		var reason string
		done := true
		for id, st := range want {
			var status string
			err := pool.QueryRow(ctx, `SELECT status, coalesce(status_reason, '') FROM payments WHERE payment_id = $1`, payment.Key("t0", id)).Scan(&status, &reason)
			if err != nil || payment.Status(status) != st {
				done = false
				break
			}
			if id == "p-2" && reason != "SCREENING: SIM-NAMES: creditor name listed" {
				t.Fatalf("p-2 held with %q", reason)
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the payments are not %v", want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var queued int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE item_id = $1`, payment.Key("t0", "p-2")).Scan(&queued); err != nil || queued != 0 {
		t.Fatalf("the hit has %d queue items (%v), want none", queued, err)
	}
	// Three payments in calls of two: two calls, one hit, two clears.
	for _, c := range []struct {
		name, label string
		want        float64
	}{{"paydispatch_screening_calls_total", "ok", 2}, {"paydispatch_screening_verdicts_total", "HIT", 1}, {"paydispatch_screening_verdicts_total", "CLEAR", 2}} {
		if got := counter(t, reg, c.name, c.label); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.label, got, c.want)
		}
	}
}

// counter is the value of the counter name whose one label is label.
func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}
