package payment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// byID is a Control that decides by payment id, and counts what it saw.
type byID struct {
	name  string
	rules map[string]payment.Decision
	seen  int
	fail  error
}

func (c *byID) Name() string { return c.name }

func (c *byID) Check(_ context.Context, cs []payment.Candidate) ([]payment.Decision, error) {
	if c.fail != nil {
		return nil, c.fail
	}
	out := make([]payment.Decision, len(cs))
	for i, cand := range cs {
		c.seen++
		out[i] = c.rules[cand.Request.PaymentID]
	}
	return out, nil
}

// TestControlsStopPaymentsBeforeTheirSlots: what each decision leaves of
// a payment in a chunk: a stopped payment takes no slot and no queue
// item but keeps its context (a release or an approval paces it later);
// the most severe of two controls' decisions wins; the rejected ones
// never reach the controls.
func TestControlsStopPaymentsBeforeTheirSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	first := &byID{name: "first", rules: map[string]payment.Decision{
		"p-warn":   {Action: payment.ActionWarn, Reason: "DUPLICATE suspected: like p-pass"},
		"p-hold":   {Action: payment.ActionHold, Reason: payment.HoldScreening + ": a hit"},
		"p-await":  {Action: payment.ActionAwaitApproval, Reason: "APPROVAL: 2 wanted"},
		"p-reject": {Action: payment.ActionReject, Reason: "DUPLICATE of p-pass"},
		"p-both":   {Action: payment.ActionAwaitApproval, Reason: "APPROVAL: 1 wanted"},
	}}
	second := &byID{name: "second", rules: map[string]payment.Decision{
		"p-both": {Action: payment.ActionHold, Reason: payment.HoldDuplicate + ": like p-pass"},
		"p-warn": {Action: payment.ActionPass},
	}}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool),
		Controls: []payment.Control{first, second}})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	var chunk []payment.Request
	for _, id := range []string{"p-pass", "p-warn", "p-hold", "p-await", "p-reject", "p-both", "p-invalid"} {
		r := validRequest(time.Now())
		r.PaymentID, r.RequestedExecutionTime = id, at
		if id == "p-invalid" {
			r.Amount = "-1"
		}
		chunk = append(chunk, r)
	}
	res, err := a.InitChunk(ctx, chunk, "init-controls")
	if err != nil {
		t.Fatal(err)
	}
	if want := (payment.BatchResult{Scheduled: 2, Rejected: 2, Held: 2, AwaitingApproval: 1}); res != want {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	if first.seen != 6 || second.seen != 6 {
		t.Fatalf("the controls saw %d and %d payments, want the 6 valid ones each", first.seen, second.seen)
	}
	tests := []struct {
		id        string
		status    payment.Status
		reasonHas string
		queued    bool
	}{
		{"p-pass", payment.StatusScheduled, "", true},
		{"p-warn", payment.StatusScheduled, "DUPLICATE suspected", true},
		{"p-hold", payment.StatusHeld, "SCREENING: a hit", false},
		{"p-await", payment.StatusAwaitingApproval, "APPROVAL: 2 wanted", false},
		{"p-reject", payment.StatusRejected, "DUPLICATE of p-pass", false},
		{"p-both", payment.StatusHeld, "DUPLICATE: like p-pass", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got := load(t, pool, tt.id)
			if got.status != tt.status || got.queued != tt.queued || !strings.Contains(got.reason, tt.reasonHas) || (tt.reasonHas == "") != (got.reason == "") {
				t.Fatalf("stored %+v, want %s with a reason naming %q, queued %t", got, tt.status, tt.reasonHas, tt.queued)
			}
			if tt.status == payment.StatusHeld || tt.status == payment.StatusAwaitingApproval {
				var hasContext bool
				if err := pool.QueryRow(ctx, `SELECT context IS NOT NULL FROM payments WHERE payment_id = $1`,
					payment.Key("acme", tt.id)).Scan(&hasContext); err != nil || !hasContext {
					t.Fatalf("a stopped payment keeps its context for its release: %t, %v", hasContext, err)
				}
			}
		})
	}
}

// TestControlErrorLeavesThePaymentsReceived: a control that cannot answer
// fails Phase A's attempt (retried) and stores nothing.
func TestControlErrorLeavesThePaymentsReceived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	down := &byID{name: "screening", fail: errors.New("connection refused")}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Controls: []payment.Control{down}})
	r := validRequest(time.Now())
	_, err := a.InitChunk(ctx, []payment.Request{r}, "init-down")
	if err == nil || !strings.Contains(err.Error(), "control screening") {
		t.Fatalf("err = %v, want the control's failure, named", err)
	}
	if got := load(t, pool, r.PaymentID); got.status != payment.StatusReceived || got.queued {
		t.Fatalf("stored %+v, want RECEIVED and not queued", got)
	}
	down.fail = nil
	if res, err := a.InitIntake(ctx, "init-down"); err != nil || res.Scheduled != 1 {
		t.Fatal(fmt.Sprint(res, err))
	}
}

// TestReleaseByHoldReason: a release lets go the holds it names (by
// default a cut-off's and a suspected duplicate's), never a screening hit
// unless named and by its payment's id; a reason that is no hold, or a
// screening release by a rail, is refused and releases nothing.
func TestReleaseByHoldReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	hold := &byID{name: "holds", rules: map[string]payment.Decision{}}
	f.s.init = payment.NewInitActivities(payment.InitConfig{Store: f.s.store, Queue: f.s.queue, Pacer: f.lim, Rails: f.res,
		Controls: []payment.Control{hold}})
	at := f.at(0, 10*time.Hour)
	ps := railPayments("acme", 3, at)
	for i, reason := range []string{payment.ReasonCutoff + ": no slot", payment.HoldDuplicate + ": like x", payment.HoldScreening + ": SIM-NAMES"} {
		ps[i].Rail = "SEPA"
		hold.rules[ps[i].PaymentID] = payment.Decision{Action: payment.ActionHold, Reason: reason}
	}
	if res, err := f.s.init.InitChunk(ctx, ps, "init-holds"); err != nil || res.Held != 3 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	refused := []payment.HeldFilter{
		{TenantID: "acme", Reasons: []string{"FRAUD"}},
		{TenantID: "acme", Rail: "SEPA", Reasons: []string{payment.HoldScreening}},
		{TenantID: "acme", PaymentIDs: []string{ps[2].PaymentID}, Rail: "SEPA", Reasons: []string{payment.HoldScreening}},
	}
	for _, hf := range refused {
		if rel, err := svc.Release(ctx, hf, nil); err == nil || rel.Released != 0 {
			t.Fatalf("release %+v: %+v, %v; want refused", hf, rel, err)
		}
	}
	status := func(i int) payment.Status {
		p, err := f.s.store.Find(ctx, "acme", ps[i].PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		return p.Status
	}
	if rel, err := svc.Release(ctx, payment.HeldFilter{TenantID: "acme"}, nil); err != nil || rel.Released != 2 {
		t.Fatalf("release of the tenant's holds: %+v, %v; want the cut-off's and the duplicate's", rel, err)
	}
	if status(0) != payment.StatusScheduled || status(1) != payment.StatusScheduled || status(2) != payment.StatusHeld {
		t.Fatalf("after the default release: %s, %s, %s; the screening hit must stay HELD", status(0), status(1), status(2))
	}
	rel, err := svc.Release(ctx, payment.HeldFilter{TenantID: "acme", PaymentIDs: []string{ps[2].PaymentID}, Reasons: []string{payment.HoldScreening}}, nil)
	if err != nil || rel.Released != 1 || status(2) != payment.StatusScheduled {
		t.Fatalf("the screening hit released by its id: %+v, %v, %s", rel, err, status(2))
	}
}

// TestLatePhaseAKeepsWhatIntakeAccepted: Phase A judges a payment as of
// when intake took it in. Held up past PastTolerance (here a control
// that cannot answer, then a clock ten minutes on), it still schedules a
// payment requested a minute before its receipt, not REJECTED "in the
// past" after intake accepted it.
func TestLatePhaseAKeepsWhatIntakeAccepted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	down := &byID{name: "screening", fail: errors.New("connection refused")}
	cfg := payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Controls: []payment.Control{down}}
	r := validRequest(time.Now())
	r.PaymentID, r.RequestedExecutionTime = "late", time.Now().Add(-time.Minute)
	if _, err := payment.NewInitActivities(cfg).InitChunk(ctx, []payment.Request{r}, "init-late"); err == nil {
		t.Fatal("Phase A went on without its control")
	}
	cfg.Controls = nil
	cfg.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	res, err := payment.NewInitActivities(cfg).InitIntake(ctx, "init-late")
	if err != nil || res.Scheduled != 1 {
		t.Fatalf("the late Phase A: %+v, %v; want it scheduled", res, err)
	}
	if got := load(t, pool, r.PaymentID); got.status != payment.StatusScheduled || !got.queued {
		t.Fatalf("stored %+v, want SCHEDULED and queued", got)
	}
}
