package screening_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/screening"
)

// newPool is a database with PAYMENT registered and an account ACC-1
// of tenant acme.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "ACC-1", TenantID: "acme", Currency: "EUR",
		OpeningBalance: decimal.NewFromInt(1_000_000)}); err != nil {
		t.Fatal(err)
	}
	return pool
}

// control is a Control on pool asking the service at url, with the
// tenants' rules for no answer.
func control(t *testing.T, pool *pgxpool.Pool, url string, rules map[string]string) *screening.Control {
	t.Helper()
	return controlWith(t, pool, url, rules, nil)
}

// controlWith is control counting on m.
func controlWith(t *testing.T, pool *pgxpool.Pool, url string, rules map[string]string, m *screening.Metrics) *screening.Control {
	t.Helper()
	cl, err := screening.NewClient(screening.ClientConfig{URL: url, Timeout: 200 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	cfg := screening.ControlConfig{Client: cl, DB: pool, Metrics: m}
	if rules != nil {
		cfg.OnError = func(_ context.Context, tenant string) (string, error) {
			if r, ok := rules[tenant]; ok {
				return r, nil
			}
			return "", errors.New("settings unreadable")
		}
	}
	c, err := screening.NewControl(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func candidate(tenant, id string) payment.Candidate {
	return payment.Candidate{Key: payment.Key(tenant, id), Request: payment.Request{TenantID: tenant, PaymentID: id,
		DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89 3704 0044 0532 0130 00"}}}
}

// TestControlDecisions: the decision on each verdict, and on a payment
// without an answer by each tenant rule (and when the rule cannot be
// read, or is not one of the three).
func TestControlDecisions(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	tests := []struct {
		name    string
		verdict string // the service's verdict; "slow": no answer in time
		rules   map[string]string
		tenant  string
		want    payment.Action
		reason  string // the reason begins with it
	}{
		{"clear", "CLEAR", nil, "acme", payment.ActionPass, ""},
		{"hit", "HIT", nil, "acme", payment.ActionHold, "SCREENING: L: r"},
		{"a hit whatever the rule", "HIT", map[string]string{"acme": screening.RuleAllow}, "acme", payment.ActionHold, "SCREENING: L: r"},
		{"error, no rule reader: hold", "ERROR", nil, "acme", payment.ActionHold, "SCREENING: no answer (the service's ERROR: r)"},
		{"error, HOLD", "ERROR", map[string]string{"acme": screening.RuleHold}, "acme", payment.ActionHold, "SCREENING: no answer ("},
		{"error, REJECT", "ERROR", map[string]string{"acme": screening.RuleReject}, "acme", payment.ActionReject, "SCREENING: no answer ("},
		{"error, ALLOW", "ERROR", map[string]string{"acme": screening.RuleAllow}, "acme", payment.ActionPass, ""},
		{"error, the other tenant's rule is not this one's", "ERROR", map[string]string{"acme": screening.RuleAllow, "globex": screening.RuleReject}, "globex", payment.ActionReject, "SCREENING: no answer ("},
		{"error, the rule unreadable: hold", "ERROR", map[string]string{}, "acme", payment.ActionHold, "SCREENING: no answer ("},
		{"error, an unknown rule: hold", "ERROR", map[string]string{"acme": "MAYBE"}, "acme", payment.ActionHold, "SCREENING: no answer ("},
		{"an unknown verdict is no answer", "PERHAPS", map[string]string{"acme": screening.RuleReject}, "acme", payment.ActionReject, `SCREENING: no answer (unknown verdict "PERHAPS")`},
		{"timeout, HOLD", "slow", map[string]string{"acme": screening.RuleHold}, "acme", payment.ActionHold, "SCREENING: no answer (timeout after 200ms)"},
		{"timeout, REJECT", "slow", map[string]string{"acme": screening.RuleReject}, "acme", payment.ActionReject, "SCREENING: no answer (timeout after 200ms)"},
		{"timeout, ALLOW", "slow", map[string]string{"acme": screening.RuleAllow}, "acme", payment.ActionPass, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			delay := time.Duration(0)
			if tt.verdict == "slow" {
				delay = 2 * time.Second
			}
			url := service(t, &callRecord{}, delay, verdicts(func(string) string { return tt.verdict }))
			reg := prometheus.NewRegistry()
			c := controlWith(t, pool, url, tt.rules, screening.NewMetrics(reg))
			ds, err := c.Check(context.Background(), []payment.Candidate{candidate(tt.tenant, fmt.Sprint("p-", i))})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].Action != tt.want || !strings.HasPrefix(ds[0].Reason, tt.reason) || (tt.reason == "") != (ds[0].Reason == "") {
				t.Fatalf("decided %+v, want action %d with a reason beginning %q", ds, tt.want, tt.reason)
			}
			// A payment without an answer is counted by the rule applied.
			unanswered := tt.verdict != "CLEAR" && tt.verdict != "HIT"
			for _, rule := range []string{screening.RuleHold, screening.RuleReject, screening.RuleAllow} {
				applied := unanswered && ((rule == screening.RuleReject && tt.want == payment.ActionReject) ||
					(rule == screening.RuleAllow && tt.want == payment.ActionPass) || (rule == screening.RuleHold && tt.want == payment.ActionHold))
				if got, want := counted(t, reg, "paydispatch_screening_errors_total", rule), map[bool]float64{true: 1}[applied]; got != want {
					t.Errorf("errors_total{rule=%s} = %v, want %v", rule, got, want)
				}
			}
		})
	}
}

// counted is the value of the counter name whose one label is label.
func counted(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}

// TestControlKeepsHits: a hit is answered again without asking on the
// next Check, even when the service now clears the payment; a clear is
// asked again.
func TestControlKeepsHits(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	first := control(t, pool, service(t, &callRecord{}, 0, verdicts(func(id string) string {
		if id == payment.Key("acme", "p-hit") {
			return "HIT"
		}
		return "CLEAR"
	})), nil)
	cs := []payment.Candidate{candidate("acme", "p-hit"), candidate("acme", "p-clear")}
	if ds, err := first.Check(ctx, cs); err != nil || ds[0].Action != payment.ActionHold || ds[1].Action != payment.ActionPass {
		t.Fatalf("first check: %+v, %v", ds, err)
	}
	rec := &callRecord{}
	later := control(t, pool, service(t, rec, 0, verdicts(allClear)), nil)
	ds, err := later.Check(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if ds[0] != (payment.Decision{Action: payment.ActionHold, Reason: "SCREENING: L: r"}) || ds[1].Action != payment.ActionPass {
		t.Fatalf("second check: %+v, want the hit kept", ds)
	}
	if len(rec.sizes) != 1 || rec.sizes[0] != 1 {
		t.Fatalf("the second check asked about %v payments, want only the clear one", rec.sizes)
	}
}

// TestControlDatabaseDown: a hit that cannot be kept fails the check
// (Phase A's attempt), rather than going on with a hit it could lose.
func TestControlDatabaseDown(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	c := control(t, pool, service(t, &callRecord{}, 0, verdicts(func(string) string { return "HIT" })), nil)
	pool.Close()
	if ds, err := c.Check(context.Background(), []payment.Candidate{candidate("acme", "p-1")}); err == nil {
		t.Fatalf("decided %+v without a database", ds)
	}
}

// request is a valid payment of tenant acme, to creditor, at at.
func request(id, creditor string, at time.Time) payment.Request {
	return payment.Request{PaymentID: id, TenantID: "acme", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR",
		Creditor:               payment.Creditor{Name: creditor, IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		RequestedExecutionTime: at, RemittanceInfo: "INV-42"}
}

// stored is where Phase A left a payment of acme.
func stored(t *testing.T, pool *pgxpool.Pool, id string) (payment.Status, string, bool) {
	t.Helper()
	ctx := context.Background()
	p, err := payment.NewStore(pool).Find(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = queue.New(pool).Get(ctx, payment.ItemType, payment.Key("acme", id))
	if err != nil && !errors.Is(err, queue.ErrNotFound) {
		t.Fatal(err)
	}
	return p.Status, p.StatusReason, err == nil
}

// failing is a Control after screening that fails Phase A's attempt
// while fail is set.
type failing struct{ fail bool }

func (f *failing) Name() string { return "after" }
func (f *failing) Check(_ context.Context, cs []payment.Candidate) ([]payment.Decision, error) {
	if f.fail {
		return nil, errors.New("unavailable")
	}
	return make([]payment.Decision, len(cs)), nil
}

// TestPhaseAHoldsTheHits: a chunk through Phase A with the simulator's
// seeded hits: the hits HELD with their SCREENING reason and no queue
// item, the rest SCHEDULED and queued; an attempt that fails after the
// screening, retried against a service that now clears everyone, keeps
// the hits HELD.
func TestPhaseAHoldsTheHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	sim, err := screening.NewSimulator(screening.SimOptions{Names: []string{"Ivan Listed", "ACME Shell Corp"}})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	after := &failing{fail: true}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool),
		Controls: []payment.Control{control(t, pool, url, nil), after}})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	creditors := map[string]string{"p-1": "Jane Doe", "p-2": "ivan  LISTED", "p-3": "John Roe", "p-4": "ACME Shell Corp", "p-5": "Erika Mustermann"}
	var chunk []payment.Request
	for _, id := range []string{"p-1", "p-2", "p-3", "p-4", "p-5"} {
		chunk = append(chunk, request(id, creditors[id], at))
	}
	if _, err := a.InitChunk(ctx, chunk, "init-screen"); err == nil {
		t.Fatal("the failing control did not fail the attempt")
	}
	if st := sim.Stats(); st.Payments != 5 || st.Hits != 2 {
		t.Fatalf("the simulator answered %+v, want 5 payments and 2 hits", st)
	}
	// The retry: the service now clears everyone.
	clears, err := screening.NewSimulator(screening.SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url2, stop2, err := clears.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop2)
	after.fail = false
	retry := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool),
		Controls: []payment.Control{control(t, pool, url2, nil), after}})
	res, err := retry.InitIntake(ctx, "init-screen")
	if err != nil {
		t.Fatal(err)
	}
	if want := (payment.BatchResult{Scheduled: 3, Held: 2}); res != want {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	if st := clears.Stats(); st.Payments != 3 {
		t.Fatalf("the retry asked about %d payments, want the 3 not hit", st.Payments)
	}
	for _, id := range []string{"p-1", "p-2", "p-3", "p-4", "p-5"} {
		status, reason, queued := stored(t, pool, id)
		hit := id == "p-2" || id == "p-4"
		switch {
		case hit && (status != payment.StatusHeld || queued || reason != "SCREENING: SIM-NAMES: creditor name listed"):
			t.Errorf("%s: %s %q queued %t, want HELD by its hit, not queued", id, status, reason, queued)
		case !hit && (status != payment.StatusScheduled || !queued):
			t.Errorf("%s: %s %q queued %t, want SCHEDULED and queued", id, status, reason, queued)
		}
	}
}
