package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/routing"
)

// paymentInstruction is an instruction as the payment domain writes it,
// every field it has set.
func paymentInstruction(id, valueDate string) payment.Instruction {
	return payment.Instruction{
		PaymentID: id, EndToEndID: "E2E-" + id, Amount: "1250.50", Currency: "EUR", ValueDate: valueDate,
		Debtor:         payment.InstructionDebtor{Name: "acme", Account: "ACC-1"},
		Creditor:       payment.InstructionCreditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		RemittanceInfo: "INV-42", TenantID: "acme",
	}
}

// TestPaymentInstructionIsARailInstruction is the contract between the
// payment domain, which writes the outbox's payload without knowing the
// rails, and the adapters that read it: the JSON payment.Instruction
// marshals to decodes strictly (no unknown member, every name exact) to
// the same values, passes both formats' checks (pacs.008's with the
// configured debtor agent: the payments name no debtor BIC), and the
// codes and types both sides name are the same strings.
func TestPaymentInstructionIsARailInstruction(t *testing.T) {
	t.Parallel()
	p := paymentInstruction("pay-0001", "2026-11-23")
	payload, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := rail.DecodeInstruction(payload)
	if err != nil {
		t.Fatalf("the payment's instruction does not decode: %v\n%s", err, payload)
	}
	if err := rail.CheckInstruction(in, rail.FormatJSON); err != nil {
		t.Fatalf("the payment's instruction fails the JSON rail: %v", err)
	}
	// Field by field, by the JSON both write: nothing lost or renamed.
	back, _ := json.Marshal(in)
	var a, b map[string]any
	if err := json.Unmarshal(payload, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the rail reads another instruction:\n payment %v\n    rail %v", a, b)
	}
	// Optional members left out still decode and pass.
	p.RemittanceInfo, p.Creditor.BIC = "", ""
	minimal, _ := json.Marshal(p)
	if in, err := rail.DecodeInstruction(minimal); err != nil || rail.CheckInstruction(in, rail.FormatJSON) != nil {
		t.Fatalf("the payment's instruction without its optional fields: %v", err)
	}

	// Through the relayer's sender, as the relayer validates and renders
	// it: a JSON rail and, with a debtor agent, a pacs.008 rail.
	sender, err := app.RailSender(app.RelayConfig{RailURL: "http://127.0.0.1:1", DebtorAgentBIC: "NWBKGB2LXXX"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, railType := range []string{rail.RailSEPAJSON, rail.RailPacs008} {
		m := outbox.Message{InstructionID: "pay-0001", ParticipantID: "acme", SequenceID: 1, IdempotencyKey: "pay-0001", RailType: railType, Payload: payload, Attempt: 1}
		if err := sender.Validate(m); err != nil {
			t.Errorf("%s: %v", railType, err)
		}
	}

	for _, same := range [][2]string{
		{payment.CodeCutoffMissed, rail.CodeCutoffMissed},
		{routing.TypeSEPAJSON, rail.RailSEPAJSON},
		{routing.TypePACS008, rail.RailPacs008},
		{routing.DefaultRail, railsim.DefaultRail},
	} {
		if same[0] != same[1] {
			t.Errorf("%q and %q name one thing", same[0], same[1])
		}
	}
	if len(routing.Types) != 2 {
		t.Errorf("routing has rail types %v; the relayer's directory maps two", routing.Types)
	}
}

// TestRelayToRailsByName: the relayer as serve wires it, the rails from
// the routing table, against one simulator playing them on loopback.
// Each instruction reaches the rail its RailType names, at that rail's
// endpoint, in its format (DEFAULT's empty endpoint: the process's rail
// URL; a legacy type: there too); one valued on a day whose cut-off has
// passed is dead CUTOFF_MISSED (the code the payment hook returns the
// money with) and reaches no rail; an unknown rail is dead UNKNOWN_RAIL.
func TestRelayToRailsByName(t *testing.T) {
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
	// Inactive rails: the relayer delivers what was routed to a rail
	// whether or not it still takes new payments (and active rails would
	// each need a rate-limit config of their own).
	for _, r := range []routing.Rail{
		{Name: "SEPA", Type: routing.TypeSEPAJSON, Endpoint: url + "/rails/SEPA", TimeZone: "Europe/Berlin", Opens: 7 * time.Hour, Cutoff: 16 * time.Hour},
		{Name: "TARGET2-HV", Type: routing.TypePACS008, Endpoint: url + "/rails/TARGET2-HV/", TimeZone: "Europe/Berlin", Cutoff: 17 * time.Hour},
	} {
		if _, err := routing.PutRail(ctx, pool, r); err != nil {
			t.Fatal(err)
		}
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	today := calendar.DateOf(time.Now(), berlin)
	tomorrow, yesterday := today.AddDays(1).String(), today.AddDays(-1).String()

	stop, err := app.StartRelayer(ctx, store, app.RelayConfig{
		RailURL: url, RailTimeout: 2 * time.Second, DebtorAgentBIC: "NWBKGB2LXXX",
		Relayer: outbox.Config{PollInterval: 50 * time.Millisecond, Debounce: 5 * time.Millisecond},
	}, payment.OutboxHooks(), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	enqueue := []struct{ id, railType, valueDate string }{
		{"pay-sepa", "SEPA", tomorrow},
		{"pay-t2", "TARGET2-HV", tomorrow},
		{"pay-default", routing.DefaultRail, today.String()},
		{"pay-legacy", rail.RailSEPAJSON, yesterday}, // before rails: no cut-off known
		{"pay-late", "SEPA", yesterday},
		{"pay-late-t2", "TARGET2-HV", yesterday},
		{"pay-nowhere", "NO-SUCH-RAIL", tomorrow},
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, e := range enqueue {
			payload, err := json.Marshal(paymentInstruction(e.id, e.valueDate))
			if err != nil {
				return err
			}
			if _, _, _, err := outbox.Enqueue(ctx, tx, outbox.Instruction{InstructionID: e.id, ParticipantID: "acme",
				IdempotencyKey: e.id, RailType: e.railType, Payload: payload}); err != nil {
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
		getJSON(t, url+"/ledger?instructions=true", &l)
		d, err := outbox.ReadDepth(ctx, pool, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var taken int64
		for _, v := range l.Rails {
			taken += v.Unique + v.Refused
		}
		if d.Pending == 0 && d.InFlight == 0 && taken+d.DeadLetters == int64(len(enqueue)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: ledger %+v, depth %+v", l, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	keys := func(rail string) string {
		var ks []string
		for _, r := range l.Rails[rail].Instructions {
			ks = append(ks, r.Key+":"+r.Status)
			if r.ReceivedAt.IsZero() {
				t.Errorf("%s: %s has no arrival time", rail, r.Key)
			}
		}
		return strings.Join(ks, ",")
	}
	for rail, want := range map[string]string{
		"SEPA": "pay-sepa:ACCEPTED", "TARGET2-HV": "pay-t2:ACCEPTED",
	} {
		if got := keys(rail); got != want {
			t.Errorf("rail %s holds %q, want %q", rail, got, want)
		}
	}
	if got := keys(railsim.DefaultRail); got != "pay-default:ACCEPTED,pay-legacy:ACCEPTED" && got != "pay-legacy:ACCEPTED,pay-default:ACCEPTED" {
		t.Errorf("the default URL holds %q", got)
	}
	if len(l.Rails) != 3 {
		t.Errorf("rails %v", l.Rails)
	}

	dead, err := outbox.DeadLetters(ctx, pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, d := range dead {
		codes[d.Message.InstructionID] = d.RailCode
		if d.ErrorCode != outbox.CodeRailTerminal {
			t.Errorf("%s dead with %s, want %s", d.Message.InstructionID, d.ErrorCode, outbox.CodeRailTerminal)
		}
	}
	want := map[string]string{"pay-late": rail.CodeCutoffMissed, "pay-late-t2": rail.CodeCutoffMissed, "pay-nowhere": rail.CodeUnknownRail}
	if !reflect.DeepEqual(codes, want) {
		t.Fatalf("dead letters %v, want %v", codes, want)
	}
}
