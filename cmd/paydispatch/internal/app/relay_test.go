package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

func railInstruction(id, participant, railType, amount string) outbox.Instruction {
	payload, _ := json.Marshal(rail.Instruction{
		PaymentID: id, EndToEndID: "E2E-" + id, Amount: amount, Currency: "EUR", ValueDate: "2026-11-23",
		Debtor:   rail.Debtor{Name: "ACME Corp", Account: "ACC-1", BIC: "NWBKGB2L"},
		Creditor: rail.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		TenantID: "acme",
	})
	return outbox.Instruction{InstructionID: id, ParticipantID: participant, IdempotencyKey: "key-" + id, RailType: railType, Payload: payload}
}

// TestRelayToEmbeddedSimulator: the relayer as serve wires it, against
// the simulator on loopback. A JSON and a pacs.008 instruction reach the
// rail once each, in their participant's sequence; an invalid payload is
// dead-lettered without a call; the metrics count them.
func TestRelayToEmbeddedSimulator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := &postgres.DB{Pool: pool}
	log := slog.New(slog.DiscardHandler)

	url, stopSim, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stopSim()
	reg := prometheus.NewRegistry()
	metrics := app.RegisterOutboxMetrics(reg, store, time.Minute)
	stop, err := app.StartRelayer(ctx, store, app.RelayConfig{
		RailURL: url, RailTimeout: 2 * time.Second,
		Relayer: outbox.Config{PollInterval: 50 * time.Millisecond, Debounce: 5 * time.Millisecond},
	}, payment.OutboxHooks(), metrics, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	bad := railInstruction("pay-bad", "bank-a", rail.RailSEPAJSON, "1.234") // three decimals: not EUR
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, in := range []outbox.Instruction{
			railInstruction("pay-1", "bank-a", rail.RailSEPAJSON, "125.00"),
			railInstruction("pay-2", "bank-a", rail.RailPacs008, "0.10"),
			bad,
		} {
			if _, _, _, err := outbox.Enqueue(ctx, tx, in); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var l railsim.LedgerView
	deadline := time.Now().Add(30 * time.Second)
	for {
		getJSON(t, url+"/ledger", &l)
		d, err := outbox.ReadDepth(ctx, pool, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if l.Unique == 2 && d.Pending == 0 && d.InFlight == 0 {
			if d.DeadLetters != 1 {
				t.Fatalf("depth %+v, want the invalid payload dead", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: ledger %+v, depth %+v", l, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// bank-a is in throughput mode: its two instructions go out in
	// parallel and may arrive in either order (Reordered 0 or 1).
	p := l.Participants["bank-a"]
	if l.Received != 2 || l.Duplicates != 0 || l.Refused != 0 || l.Malformed != 0 || p.Highest != 2 || p.Gaps != 0 || p.Unique != 2 {
		t.Fatalf("ledger %+v (bank-a %+v): want sequences 1 and 2 once each, nothing else", l, p)
	}
	dead, err := outbox.DeadLetters(ctx, pool, 10)
	if err != nil || len(dead) != 1 || dead[0].Message.InstructionID != bad.InstructionID || dead[0].ErrorCode != outbox.CodeInvalidPayload {
		t.Fatalf("dead letters %+v, %v", dead, err)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"paydispatch_outbox_attempts_total", "paydispatch_outbox_pending_depth", "paydispatch_outbox_dead_letter_depth"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("metrics lack %s: %v", want, names)
		}
	}
}

// TestRelayWiringRefusesBadInput: a bad rail URL or simulator behaviour
// is an error, not a panic, and starts nothing.
func TestRelayWiringRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	if _, _, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{Behaviour: railsim.Behaviour{RetryableFraction: 2}}, log); err == nil || !strings.Contains(err.Error(), "retryableFraction") {
		t.Fatalf("bad behaviour: %v", err)
	}
	if _, _, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{Cutoffs: map[string]railsim.Cutoff{"a b": {TimeOfDay: time.Hour}}}, log); err == nil {
		t.Fatal("a bad rail name for a cut-off was accepted")
	}
	if _, err := app.RailSender(app.RelayConfig{RailURL: "ftp://rail", RailTimeout: time.Second}, nil); err == nil {
		t.Fatal("an ftp rail URL was accepted")
	}
	if _, err := app.RailSender(app.RelayConfig{RailURL: "http://rail", DebtorAgentBIC: "nope"}, nil); err == nil {
		t.Fatal("a debtor agent that is no BIC was accepted")
	}
	if _, err := app.StartRelayer(ctx, &postgres.DB{}, app.RelayConfig{RailURL: "http://127.0.0.1:1"}, outbox.Hooks{}, nil, log); err == nil {
		t.Fatal("a relayer without a pool was started")
	}
	r, err := app.RailSender(app.RelayConfig{RailURL: "http://127.0.0.1:9090"}, nil)
	if err != nil || strings.Join(r.Types(), ",") != rail.RailPacs008+","+rail.RailSEPAJSON {
		t.Fatalf("rail types %v, %v", r.Types(), err)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
