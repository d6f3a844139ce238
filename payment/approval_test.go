package payment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestApprovalRuleMatching: which of a tenant's rules a payment meets,
// from each source, alone or in a file; the first that matches decides.
func TestApprovalRuleMatching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	store := payment.NewStore(pool)
	if err := store.PutApprovalRules(ctx, nil, "acme", []payment.ApprovalRule{
		{Name: "big-usd", MinAmount: "500", Currency: "USD", Approvals: 3},
		{Name: "big", MinAmount: "10000.00", Approvals: 2},
		{Name: "kafka", Source: routing.SourceKafka, Approvals: 1},
		{Name: "treasury", DebtorAccount: "ACC-T", Approvals: 2},
		{Name: "target2", Rail: "TARGET2", Approvals: 2},
		{Name: "file-total", FileMinTotal: "1000", Approvals: 2},
		{Name: "file-count", FileMinCount: 5, Approvals: 1},
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.PutApprovalRules(ctx, nil, "globex", []payment.ApprovalRule{{Name: "all", Approvals: 1}}); err != nil {
		t.Fatal(err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: store})
	pay := func(tenant, amount, currency string) payment.Request {
		r := validRequest(time.Now())
		r.TenantID, r.Amount, r.Currency = tenant, amount, currency
		return r
	}
	with := func(r payment.Request, f func(*payment.Request)) payment.Request { f(&r); return r }
	many := func(n int, r payment.Request) []payment.Request {
		out := make([]payment.Request, n)
		for i := range out {
			out[i] = r
			out[i].PaymentID = fmt.Sprintf("p-%d", i)
		}
		return out
	}
	tests := []struct {
		name   string
		source string
		reqs   []payment.Request
		want   string // the first payment's rule ("": none)
		n      int
	}{
		{"below every rule", routing.SourceAPI, []payment.Request{pay("acme", "125.00", "EUR")}, "", 0},
		{"amount at the bound", routing.SourceAPI, []payment.Request{pay("acme", "10000.00", "EUR")}, "big", 2},
		{"amount a cent below", routing.SourceAPI, []payment.Request{pay("acme", "9999.99", "EUR")}, "", 0},
		{"currency narrows the amount", routing.SourceAPI, []payment.Request{pay("acme", "600.00", "USD")}, "big-usd", 3},
		{"the same amount in another currency", routing.SourceAPI, []payment.Request{pay("acme", "600.00", "EUR")}, "", 0},
		{"order: the first match decides", routing.SourceAPI, []payment.Request{pay("acme", "20000.00", "USD")}, "big-usd", 3},
		{"source", routing.SourceKafka, []payment.Request{pay("acme", "1.00", "EUR")}, "kafka", 1},
		{"another source", routing.SourceFile, []payment.Request{pay("acme", "1.00", "EUR")}, "", 0},
		{"debtor account", routing.SourceAPI, []payment.Request{with(pay("acme", "1.00", "EUR"), func(r *payment.Request) { r.DebtorAccount = "ACC-T" })}, "treasury", 2},
		{"rail", routing.SourceAPI, []payment.Request{with(pay("acme", "1.00", "EUR"), func(r *payment.Request) { r.Rail = "TARGET2" })}, "target2", 2},
		{"a file's total", routing.SourceFile, many(4, pay("acme", "250.00", "EUR")), "file-total", 2},
		{"a file's total just short", routing.SourceFile, many(4, pay("acme", "249.99", "EUR")), "", 0},
		{"a file's total is per currency", routing.SourceFile, append(many(2, pay("acme", "400.00", "EUR")),
			with(pay("acme", "400.00", "GBP"), func(r *payment.Request) { r.PaymentID = "gbp" })), "", 0},
		{"a file's count", routing.SourceFile, many(5, pay("acme", "1.00", "EUR")), "file-count", 1},
		{"file rules never match a payment alone", routing.SourceAPI, []payment.Request{pay("acme", "1000.00", "EUR")}, "", 0},
		{"file rules never match Kafka's chunks", routing.SourceKafka, many(5, pay("acme", "250.00", "EUR")), "kafka", 1},
		{"another tenant's rules", routing.SourceAPI, []payment.Request{pay("globex", "1.00", "EUR")}, "all", 1},
		{"a tenant with none", routing.SourceAPI, []payment.Request{pay("initech", "99999.00", "EUR")}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := svc.ApplyApprovalRules(ctx, tt.source, "tok-1", tt.reqs); err != nil {
				t.Fatal(err)
			}
			if rule, n := payment.ApprovalOf(tt.reqs[0]); rule != tt.want || n != tt.n {
				t.Fatalf("matched %q (%d approvals), want %q (%d)", rule, n, tt.want, tt.n)
			}
		})
	}
}

// TestValidateApprovalRules: each bad field named by its index.
func TestValidateApprovalRules(t *testing.T) {
	t.Parallel()
	ok := payment.ApprovalRule{Name: "r", Approvals: 2}
	with := func(f func(*payment.ApprovalRule)) payment.ApprovalRule { r := ok; f(&r); return r }
	tests := []struct {
		name  string
		rules []payment.ApprovalRule
		want  []string
	}{
		{"valid", []payment.ApprovalRule{ok, with(func(r *payment.ApprovalRule) {
			r.Name, r.MinAmount, r.Currency, r.Source, r.FileMinTotal, r.FileMinCount = "f", "10.50", "EUR", "FILE", "1000", 3
		})}, nil},
		{"no approvals", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Approvals = 0 })}, []string{"rules[0].approvals"}},
		{"too many approvals", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Approvals = 11 })}, []string{"rules[0].approvals"}},
		{"an amount in exponent form", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.MinAmount = "1e5" })}, []string{"rules[0].minAmount"}},
		{"a negative amount", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.MinAmount = "-1" })}, []string{"rules[0].minAmount"}},
		{"a bad file total", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.FileMinTotal = "lots" })}, []string{"rules[0].fileMinTotal"}},
		{"a source not in the list", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Source = "SFTP" })}, []string{"rules[0].source"}},
		{"a file's facts from the API", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Source, r.FileMinCount = "API", 2 })}, []string{"rules[0].source"}},
		{"a currency in lower case", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Currency = "eur" })}, []string{"rules[0].currency"}},
		{"a bad rail", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Rail = "no spaces" })}, []string{"rules[0].rail"}},
		{"no name", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.Name = "" })}, []string{"rules[0].name"}},
		{"a name twice", []payment.ApprovalRule{ok, ok}, []string{"rules[1].name"}},
		{"a negative count", []payment.ApprovalRule{with(func(r *payment.ApprovalRule) { r.FileMinCount = -1 })}, []string{"rules[0].fileMinCount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := payment.ValidateApprovalRules(tt.rules)
			var bad *field.Invalid
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &bad) {
				t.Fatalf("err = %v, want a *field.Invalid", err)
			}
			var got []string
			for _, f := range bad.Fields {
				got = append(got, f.Field)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("fields %v, want %v", got, tt.want)
			}
		})
	}
}

// approvals is a rails fixture whose payments go through the intake's
// matching, Receive and Phase A with the approvals control.
type approvals struct {
	*railsFixture
	svc  *payment.Service
	init *payment.InitActivities
}

func newApprovals(t *testing.T, now func() time.Time, rules map[string][]payment.ApprovalRule) *approvals {
	t.Helper()
	f := newRailsFixture(t)
	for tenant, rs := range rules {
		if err := f.s.store.PutApprovalRules(context.Background(), nil, tenant, rs); err != nil {
			t.Fatal(err)
		}
	}
	return &approvals{railsFixture: f,
		svc: payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim, Now: now}),
		init: payment.NewInitActivities(payment.InitConfig{Store: f.s.store, Queue: f.s.queue, Pacer: f.lim, Rails: f.res,
			Controls: []payment.Control{payment.NewApprovalControl(f.s.store)}})}
}

// take takes the payments in as the intake does (checked and routed,
// matched, received), submitted by principal from source, and runs their
// Phase A.
func (a *approvals) take(t *testing.T, source, principal, initID string, rs []payment.Request) payment.BatchResult {
	t.Helper()
	ctx := context.Background()
	if bad, err := a.svc.CheckBatchFrom(ctx, source, rs, nil); err != nil || len(bad) > 0 {
		t.Fatalf("check: %+v, %v", bad, err)
	}
	if err := a.svc.ApplyApprovalRules(ctx, source, principal, rs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.store.Receive(ctx, rs, func(int) string { return initID }, true); err != nil {
		t.Fatal(err)
	}
	res, err := a.init.InitIntake(ctx, initID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (a *approvals) find(t *testing.T, tenant, id string) (payment.Payment, *queue.Item) {
	t.Helper()
	p, err := a.s.store.Find(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	it, err := a.s.queue.Get(context.Background(), payment.ItemType, p.Key)
	if errors.Is(err, queue.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, &it
}

// heldAtCutoff takes n of beta's payments in (its rule asks one
// approval), requested at 15:00 on the fixture's first day, and sweeps at
// its 16:00 cut-off, which holds them (beta's rule is HOLD); now is left
// at the cut-off.
func (a *approvals) heldAtCutoff(t *testing.T, now *time.Time, initID string, n int) {
	t.Helper()
	if res := a.take(t, routing.SourceAPI, "tok-sub", initID, railPayments("beta", n, a.at(0, 15*time.Hour))); res.AwaitingApproval != n {
		t.Fatalf("Phase A: %+v", res)
	}
	*now = a.at(0, 16*time.Hour)
	if got, err := a.svc.SweepApprovalCutoffs(context.Background()); err != nil || got.Held != n {
		t.Fatalf("sweep: %+v, %v", got, err)
	}
}

// TestApprovals: a payment a rule matches waits AWAITING_APPROVAL with no
// queue item; its submitter's approval is refused; one approver counts
// once; the second approval schedules it at its requested instant and
// queues it; a denial rejects the other with the approver's reason; the
// same payment sent again is a replay; verify finds nothing.
func TestApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "big", MinAmount: "100", Approvals: 2}}})
	at := a.at(0, 10*time.Hour)
	rs := railPayments("acme", 3, at)
	rs[2].Amount, rs[2].RequestedExecutionTime = "99.99", at.Add(time.Hour) // its slot is not theirs
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-appr", rs); res.AwaitingApproval != 2 || res.Scheduled != 1 {
		t.Fatalf("Phase A: %+v", res)
	}
	p, it := a.find(t, "acme", "acme-000")
	if p.Status != payment.StatusAwaitingApproval || it != nil || p.StatusReason != "APPROVAL: 0 of 2 approvals (rule big)" {
		t.Fatalf("a matched payment: %s (%s), queued %v", p.Status, p.StatusReason, it)
	}
	// The same payment sent again is a replay, not a conflict.
	again := railPayments("acme", 1, at)
	if err := a.svc.ApplyApprovalRules(ctx, routing.SourceFile, "tok-other", again); err != nil {
		t.Fatal(err)
	}
	if rc, err := a.s.store.Receive(ctx, again, func(int) string { return "init-again" }, true); err != nil || rc[0].Fresh || rc[0].Conflict {
		t.Fatalf("a replay: %+v, %v", rc, err)
	}

	one := payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-000"}}
	records := 0
	record := func(context.Context, pgx.Tx, int) error { records++; return nil }
	if _, err := a.svc.Approve(ctx, one, payment.Approver{Principal: "tok-sub", Actor: "sub"}, false, record); !errors.Is(err, payment.ErrOwnPayment) {
		t.Fatalf("the submitter's approval: %v, want ErrOwnPayment", err)
	}
	got, err := a.svc.Approve(ctx, one, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, record)
	if err != nil || got.Approved != 1 || got.Scheduled != 0 || got.Waiting != 1 {
		t.Fatalf("the first approval: %+v, %v", got, err)
	}
	if got, err := a.svc.Approve(ctx, one, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, record); err != nil || got.Already != 1 || got.Approved != 0 || got.Scheduled != 0 {
		t.Fatalf("the same approver again: %+v, %v", got, err)
	}
	if p, _ := a.find(t, "acme", "acme-000"); p.Status != payment.StatusAwaitingApproval {
		t.Fatalf("after one approval of two: %s", p.Status)
	}
	got, err = a.svc.Approve(ctx, one, payment.Approver{Principal: "tok-b", Actor: "bob"}, false, record)
	if err != nil || got.Approved != 1 || got.Scheduled != 1 {
		t.Fatalf("the second approval: %+v, %v", got, err)
	}
	p, it = a.find(t, "acme", "acme-000")
	// Its slot is in the window of its requested instant (the limiter
	// spreads a window's slots), not now.
	if p.Status != payment.StatusScheduled || p.ScheduledExecutionTime == nil || p.ScheduledExecutionTime.Before(at) ||
		!p.ScheduledExecutionTime.Before(at.Add(time.Second)) || it == nil || it.Status != queue.StatusReady ||
		!it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) || p.StatusReason != payment.ReasonApproved {
		t.Fatalf("approved: %s at %v (%s), queue %+v; want SCHEDULED and READY in the second from %s", p.Status, p.ScheduledExecutionTime, p.StatusReason, it, at)
	}
	if records != 2 {
		t.Fatalf("%d records, want one per approval that changed something", records)
	}

	deny := payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-001"}}
	got, err = a.svc.Deny(ctx, deny, payment.Approver{Principal: "tok-b", Actor: "bob"}, "not ours", false, nil)
	if err != nil || got.Rejected != 1 {
		t.Fatalf("deny: %+v, %v", got, err)
	}
	if p, it := a.find(t, "acme", "acme-001"); p.Status != payment.StatusRejected || p.StatusReason != "DENIED by bob: not ours" || it != nil {
		t.Fatalf("denied: %s (%s), queued %v", p.Status, p.StatusReason, it)
	}
	if vs, err := payment.Verify(ctx, a.s.pool); err != nil || len(vs) != 0 {
		t.Fatalf("verify: %v, %v", vs, err)
	}
}

// TestBulkApproval: a filter's dry run counts what it would do and
// changes nothing; the limit bounds a call.
func TestBulkApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "all", Approvals: 1}}})
	at := a.at(0, 10*time.Hour)
	if res := a.take(t, routing.SourceFile, "tok-sub", "init-bulk", railPayments("acme", 3, at)); res.AwaitingApproval != 3 {
		t.Fatalf("Phase A: %+v", res)
	}
	f := payment.ApprovalFilter{TenantID: "acme", From: at, To: at.Add(time.Second)}
	who := payment.Approver{Principal: "tok-a", Actor: "anna"}
	got, err := a.svc.Approve(ctx, f, who, true, func(context.Context, pgx.Tx, int) error { t.Fatal("a dry run records nothing"); return nil })
	if want := (payment.Decided{Selected: 3, Approved: 3, Scheduled: 3, DryRun: true}); err != nil || got != want {
		t.Fatalf("dry run: %+v, %v; want %+v", got, err, want)
	}
	for i := range 3 {
		if p, it := a.find(t, "acme", fmt.Sprintf("acme-%03d", i)); p.Status != payment.StatusAwaitingApproval || it != nil {
			t.Fatalf("after a dry run: %s, queued %v", p.Status, it)
		}
	}
	f.Limit = 2
	if got, err := a.svc.Approve(ctx, f, who, false, nil); err != nil || got.Selected != 2 || got.Scheduled != 2 || !got.More {
		t.Fatalf("two of three: %+v, %v", got, err)
	}
	// The submitter's own are passed over by a filter, and counted.
	if got, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "acme"}, payment.Approver{Principal: "tok-sub"}, false, nil); err != nil || got.Selected != 0 || got.Own != 1 || got.Approved != 0 {
		t.Fatalf("the submitter's filter: %+v, %v", got, err)
	}
}

// TestBulkApprovalGoesOn: under a rule of two approvals, a filter's calls
// by one checker go on past the payments it approved already (each call
// bounded by its limit), rather than finding the same ones again.
func TestBulkApprovalGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"beta": {{Name: "two", Approvals: 2}}})
	at := a.at(0, 10*time.Hour)
	if res := a.take(t, routing.SourceFile, "tok-sub", "init-goes-on", railPayments("beta", 5, at)); res.AwaitingApproval != 5 {
		t.Fatalf("Phase A: %+v", res)
	}
	f := payment.ApprovalFilter{TenantID: "beta", Limit: 2}
	anna := payment.Approver{Principal: "tok-a", Actor: "anna"}
	tests := []struct {
		who  payment.Approver
		want payment.Decided
	}{
		{anna, payment.Decided{Selected: 2, Approved: 2, Waiting: 2, More: true}},
		{anna, payment.Decided{Selected: 2, Approved: 2, Waiting: 2, More: true}},
		{anna, payment.Decided{Selected: 1, Approved: 1, Waiting: 1}},
		{anna, payment.Decided{Already: 2}}, // counted up to the limit
		{payment.Approver{Principal: "tok-b", Actor: "bob"}, payment.Decided{Selected: 2, Approved: 2, Scheduled: 2, More: true}},
	}
	for i, tt := range tests {
		if got, err := a.svc.Approve(ctx, f, tt.who, false, nil); err != nil || got != tt.want {
			t.Fatalf("call %d by %s: %+v, %v; want %+v", i+1, tt.who.Actor, got, err, tt.want)
		}
	}
	approved := 0
	for i := range 5 {
		if p, _ := a.find(t, "beta", fmt.Sprintf("beta-%03d", i)); p.Status == payment.StatusScheduled {
			approved++
		}
	}
	if approved != 2 {
		t.Fatalf("%d of 5 SCHEDULED after both checkers' first call, want 2", approved)
	}
}

// TestApprovalCutoffSweep: approvals still missing at the cut-off meet
// each tenant's rule: acme ROLLs (still waiting, on the next business
// day, once), beta HOLDs, gamma REJECTs. An approval after the cut-off
// paces the rolled one on its new day.
func TestApprovalCutoffSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	rule := []payment.ApprovalRule{{Name: "all", Approvals: 1}}
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"acme": rule, "beta": rule, "gamma": rule})
	at := a.at(0, 15*time.Hour)
	for _, tenant := range []string{"acme", "beta", "gamma"} {
		if res := a.take(t, routing.SourceAPI, "tok-sub", "init-"+tenant, railPayments(tenant, 1, at)); res.AwaitingApproval != 1 {
			t.Fatalf("Phase A: %+v", res)
		}
	}
	now = a.at(0, 15*time.Hour+59*time.Minute) // before the cut-off and its guard
	if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got != (payment.ApprovalCutoffs{}) {
		t.Fatalf("a sweep before the cut-off: %+v, %v", got, err)
	}
	now = a.at(0, 16*time.Hour)
	if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got != (payment.ApprovalCutoffs{Rejected: 1, Held: 1, Rolled: 1}) {
		t.Fatalf("the sweep at the cut-off: %+v, %v", got, err)
	}
	friday := calendar.DateOf(a.at(2, 0), a.loc) // Thursday is closed
	tests := []struct {
		tenant    string
		status    payment.Status
		reasonHas string
	}{
		{"acme", payment.StatusAwaitingApproval, "APPROVAL: 0 of 1"},
		{"beta", payment.StatusHeld, payment.ReasonCutoff + ": approvals missing"},
		{"gamma", payment.StatusRejected, payment.CodeCutoffMissed + ": approvals missing"},
	}
	for _, tt := range tests {
		p, it := a.find(t, tt.tenant, tt.tenant+"-000")
		if p.Status != tt.status || !strings.Contains(p.StatusReason, tt.reasonHas) || it != nil {
			t.Errorf("%s: %s (%s), queued %v; want %s naming %q", tt.tenant, p.Status, p.StatusReason, it, tt.status, tt.reasonHas)
		}
	}
	if p, _ := a.find(t, "acme", "acme-000"); calendar.DateOf(p.ExecutionDate, time.UTC) != friday {
		t.Errorf("rolled to %s, want %s", p.ExecutionDate, friday)
	}
	if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got != (payment.ApprovalCutoffs{}) {
		t.Fatalf("a second sweep the same day: %+v, %v", got, err)
	}
	got, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "acme"}, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, nil)
	if err != nil || got.Scheduled != 1 {
		t.Fatalf("approve after the cut-off: %+v, %v", got, err)
	}
	p, it := a.find(t, "acme", "acme-000")
	opens := a.at(2, 7*time.Hour)
	if p.Status != payment.StatusScheduled || calendar.DateOf(p.ExecutionDate, time.UTC) != friday || p.ScheduledExecutionTime.Before(opens) || it == nil {
		t.Fatalf("approved after the cut-off: %s on %s at %v, queued %v; want SCHEDULED on %s from %s", p.Status, p.ExecutionDate, p.ScheduledExecutionTime, it, friday, opens)
	}
}

// TestReleaseKeepsApprovalRules: an operator's release of HELD payments
// schedules one whose approvals were given while it was HELD, and sends
// one whose approvals are missing to AWAITING_APPROVAL.
func TestReleaseKeepsApprovalRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"beta": {{Name: "all", Approvals: 1}}})
	at := a.at(0, 15*time.Hour)
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-beta", railPayments("beta", 2, at)); res.AwaitingApproval != 2 {
		t.Fatalf("Phase A: %+v", res)
	}
	now = a.at(0, 16*time.Hour)
	if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got.Held != 2 {
		t.Fatalf("sweep: %+v, %v", got, err)
	}
	got, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "beta", PaymentIDs: []string{"beta-000"}}, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, nil)
	if err != nil || got.Approved != 1 || got.Scheduled != 0 || got.Waiting != 1 {
		t.Fatalf("an approval while HELD: %+v, %v", got, err)
	}
	if p, _ := a.find(t, "beta", "beta-000"); p.Status != payment.StatusHeld {
		t.Fatalf("approved while HELD: %s, want HELD until released", p.Status)
	}
	rel, err := a.svc.Release(ctx, payment.HeldFilter{TenantID: "beta"}, nil)
	if err != nil || rel.Released != 1 || rel.AwaitingApproval != 1 {
		t.Fatalf("release: %+v, %v", rel, err)
	}
	if p, it := a.find(t, "beta", "beta-000"); p.Status != payment.StatusScheduled || it == nil {
		t.Errorf("approved and released: %s, queued %v", p.Status, it)
	}
	if p, it := a.find(t, "beta", "beta-001"); p.Status != payment.StatusAwaitingApproval || it != nil || !strings.HasPrefix(p.StatusReason, "APPROVAL: 0 of 1") {
		t.Errorf("released without its approvals: %s (%s), queued %v", p.Status, p.StatusReason, it)
	}
}

// TestReleaseCountsAnApprovalInFlight: a release that meets a held
// payment whose last approval is being given (the approval's transaction
// holds the payment, as Approve's does) waits for it and counts it: the
// payment is released, never left AWAITING_APPROVAL with its approvals
// complete, where nothing would move it again.
func TestReleaseCountsAnApprovalInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"beta": {{Name: "all", Approvals: 1}}})
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-flight", railPayments("beta", 1, a.at(0, 15*time.Hour))); res.AwaitingApproval != 1 {
		t.Fatalf("Phase A: %+v", res)
	}
	now = a.at(0, 16*time.Hour)
	if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got.Held != 1 {
		t.Fatalf("sweep: %+v, %v", got, err)
	}
	key := payment.Key("beta", "beta-000")
	tx, err := a.s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM payments WHERE payment_id = $1 FOR UPDATE`, key); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO payment_approvals (payment_id, principal, decision, actor) VALUES ($1, 'tok-a', 'APPROVE', 'anna')`, key); err != nil {
		t.Fatal(err)
	}
	type result struct {
		rel payment.Released
		err error
	}
	done := make(chan result, 1)
	go func() {
		rel, err := a.svc.Release(ctx, payment.HeldFilter{TenantID: "beta"}, nil)
		done <- result{rel, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the release went on past the approval in flight: %+v, %v", r.rel, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.rel.Released != 1 || r.rel.AwaitingApproval != 0 {
		t.Fatalf("release: %+v, %v; want it released with the approval that landed", r.rel, r.err)
	}
	if p, it := a.find(t, "beta", "beta-000"); p.Status != payment.StatusScheduled || it == nil {
		t.Fatalf("approved during its release: %s (%s), queued %v", p.Status, p.StatusReason, it)
	}
}

// TestVerifyFindsUnapprovedExecution: a payment whose execution began
// without its approvals (forged here: no code path does it) breaks
// executed_with_its_approvals.
func TestVerifyFindsUnapprovedExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "all", Approvals: 2}}})
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-forged", railPayments("acme", 1, a.at(0, 10*time.Hour))); res.AwaitingApproval != 1 {
		t.Fatalf("Phase A: %+v", res)
	}
	key := payment.Key("acme", "acme-000")
	if _, err := a.s.pool.Exec(ctx, `UPDATE payments SET status = 'ACCEPTED', accepted_at = now() WHERE payment_id = $1`, key); err != nil {
		t.Fatal(err)
	}
	vs, err := payment.Verify(ctx, a.s.pool)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, v := range vs {
		if v.Rule == payment.RuleApproved {
			found = append(found, v.Row+": "+v.Detail)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], key) || !strings.Contains(found[0], "0 of the 2") {
		t.Fatalf("violations %v, want the forged payment's", vs)
	}
}

// TestRequirementCommitsWithTheClaim: a payment's requirement is stored
// in the transaction that claims its id, before Phase A, and a taking-in
// that fails stores neither.
func TestRequirementCommitsWithTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "all", Approvals: 1}}})
	count := func() (n int) {
		if err := a.s.pool.QueryRow(ctx, `SELECT count(*) FROM payment_approval_requirements`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rs := railPayments("acme", 2, a.at(0, 10*time.Hour))
	if err := a.svc.ApplyApprovalRules(ctx, routing.SourceAPI, "tok-sub", rs[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.store.Receive(ctx, rs[:1], func(int) string { return "init-claim" }, true); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d requirements once the id is claimed, want 1 (before Phase A)", n)
	}
	// A file with a conflict, taken whole, claims nothing: its other
	// payment's requirement is not stored either.
	bad := rs[0]
	bad.Amount = "1.00"
	file := []payment.Request{bad, rs[1]}
	if err := a.svc.ApplyApprovalRules(ctx, routing.SourceFile, "tok-sub", file); err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.store.Receive(ctx, file, func(int) string { return "init-conflict" }, true); !errors.Is(err, payment.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d requirements after a refused file, want still 1", n)
	}
}

// TestApprovalEvents: a payment that awaits approval publishes
// payment.awaiting_approval, then payment.scheduled once approved; a
// denied one payment.rejected.
func TestApprovalEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "all", Approvals: 1}}})
	hooks := webhook.NewStore(webhook.StoreConfig{DB: a.s.pool, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})
	ep, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: "http://127.0.0.1:9/acme"})
	if err != nil {
		t.Fatal(err)
	}
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-events", railPayments("acme", 2, a.at(0, 10*time.Hour))); res.AwaitingApproval != 2 {
		t.Fatalf("Phase A: %+v", res)
	}
	who := payment.Approver{Principal: "tok-a", Actor: "anna"}
	if _, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-000"}}, who, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.Deny(ctx, payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-001"}}, who, "no", false, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := a.s.pool.Query(ctx, `SELECT payload->>'type', payload->'data'->>'paymentId' FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY delivery_id`, ep.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for rows.Next() {
		var kind, id string
		if err := rows.Scan(&kind, &id); err != nil {
			t.Fatal(err)
		}
		got[id] = append(got[id], kind)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := []string{"payment.awaiting_approval", "payment.scheduled"}; !slices.Equal(got["acme-000"], want) {
		t.Errorf("approved: events %v, want %v", got["acme-000"], want)
	}
	if want := []string{"payment.awaiting_approval", "payment.rejected"}; !slices.Equal(got["acme-001"], want) {
		t.Errorf("denied: events %v, want %v", got["acme-001"], want)
	}
}

// TestApprovalWhilePaused: an approval lets no payment go that a pause
// holds: approved while its tenant is paused, it is SCHEDULED, marked
// with the pause, with neither a slot nor a queue item; its tenant
// resumed while its rail is paused, the rail's pause holds it; the rail
// resumed, it is queued at a slot.
func TestApprovalWhilePaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, map[string][]payment.ApprovalRule{"acme": {{Name: "all", Approvals: 1}}})
	at := a.at(0, 10*time.Hour)
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-paused", railPayments("acme", 1, at)); res.AwaitingApproval != 1 {
		t.Fatalf("Phase A: %+v", res)
	}
	tenant, rail := payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, payment.PauseScope{Kind: payment.PauseRail, ID: "SEPA"}
	pausedBy := func() string {
		t.Helper()
		var tag *string
		if err := a.s.pool.QueryRow(ctx, `SELECT paused_by FROM payments WHERE payment_id = $1`, payment.Key("acme", "acme-000")).Scan(&tag); err != nil {
			t.Fatal(err)
		}
		if tag == nil {
			return ""
		}
		return *tag
	}
	if _, err := a.svc.Pause(ctx, tenant, nil); err != nil {
		t.Fatal(err)
	}
	got, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-000"}}, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, nil)
	if want := (payment.Decided{Selected: 1, Approved: 1, Scheduled: 1, Paused: 1}); err != nil || got != want {
		t.Fatalf("approved while paused: %+v, %v; want %+v", got, err, want)
	}
	if p, it := a.find(t, "acme", "acme-000"); p.Status != payment.StatusScheduled || it != nil || pausedBy() != "TENANT:acme" {
		t.Fatalf("approved while paused: %s, queued %v, paused by %q", p.Status, it, pausedBy())
	}
	// Named again, with an id that is none of acme's: neither awaits.
	again, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "acme", PaymentIDs: []string{"acme-000", "nope", "nope"}}, payment.Approver{Principal: "tok-b", Actor: "bob"}, false, nil)
	if want := (payment.Decided{NotAwaiting: 2}); err != nil || again != want {
		t.Fatalf("named again: %+v, %v; want %+v", again, err, want)
	}
	if _, err := a.svc.Pause(ctx, rail, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := a.svc.Resume(ctx, tenant, nil); err != nil || res.Paused != 1 || res.Moved != 0 {
		t.Fatalf("its tenant resumed, its rail paused: %+v, %v", res, err)
	}
	if p, it := a.find(t, "acme", "acme-000"); p.Status != payment.StatusScheduled || it != nil || pausedBy() != "RAIL:SEPA" {
		t.Fatalf("its tenant resumed, its rail paused: %s, queued %v, paused by %q", p.Status, it, pausedBy())
	}
	if res, err := a.svc.Resume(ctx, rail, nil); err != nil || res.Moved != 1 || res.Paused != 0 {
		t.Fatalf("its rail resumed: %+v, %v", res, err)
	}
	if p, it := a.find(t, "acme", "acme-000"); p.Status != payment.StatusScheduled || it == nil || it.Status != queue.StatusReady || pausedBy() != "" {
		t.Fatalf("its rail resumed: %s, queued %+v, paused by %q", p.Status, it, pausedBy())
	}
	if vs, err := payment.Verify(ctx, a.s.pool); err != nil || len(vs) != 0 {
		t.Fatalf("verify: %v, %v", vs, err)
	}
}

// TestLateApprovalMeetsTheRule: an approval that lands after its
// payment's cut-off, before the sweep has found it, meets its tenant's
// cut-off rule as the sweep would have: acme's ROLL paces it on the next
// business day, beta's HOLD holds it (its approval kept), gamma's REJECT
// rejects it; none is queued but the rolled one.
func TestLateApprovalMeetsTheRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	rule := []payment.ApprovalRule{{Name: "all", Approvals: 1}}
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"acme": rule, "beta": rule, "gamma": rule})
	at := a.at(0, 15*time.Hour)
	for _, tenant := range []string{"acme", "beta", "gamma"} {
		if res := a.take(t, routing.SourceAPI, "tok-sub", "init-late-"+tenant, railPayments(tenant, 1, at)); res.AwaitingApproval != 1 {
			t.Fatalf("Phase A: %+v", res)
		}
	}
	now = a.at(0, 16*time.Hour+time.Second)
	friday := calendar.DateOf(a.at(2, 0), a.loc) // Thursday is closed
	tests := []struct {
		tenant    string
		want      payment.Decided
		status    payment.Status
		reasonHas string
		queued    bool
	}{
		{"acme", payment.Decided{Selected: 1, Approved: 1, Scheduled: 1}, payment.StatusScheduled, "", true},
		{"beta", payment.Decided{Selected: 1, Approved: 1, Held: 1}, payment.StatusHeld, payment.ReasonCutoff + ": no slot before rail SEPA's cut-off", false},
		{"gamma", payment.Decided{Selected: 1, Approved: 1, Rejected: 1}, payment.StatusRejected, payment.CodeCutoffMissed + ": no slot before rail SEPA's cut-off", false},
	}
	for _, tt := range tests {
		got, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: tt.tenant}, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, nil)
		if err != nil || got != tt.want {
			t.Errorf("%s approved late: %+v, %v; want %+v", tt.tenant, got, err, tt.want)
			continue
		}
		p, it := a.find(t, tt.tenant, tt.tenant+"-000")
		if p.Status != tt.status || !strings.Contains(p.StatusReason, tt.reasonHas) || (it != nil && it.Status == queue.StatusReady) != tt.queued {
			t.Errorf("%s approved late: %s (%s), queued %+v; want %s naming %q", tt.tenant, p.Status, p.StatusReason, it, tt.status, tt.reasonHas)
		}
		if tt.status == payment.StatusScheduled && calendar.DateOf(p.ExecutionDate, time.UTC) != friday {
			t.Errorf("%s rolled to %s, want %s", tt.tenant, p.ExecutionDate, friday)
		}
	}
	if vs, err := payment.Verify(ctx, a.s.pool); err != nil || len(vs) != 0 {
		t.Fatalf("verify: %v, %v", vs, err)
	}
}

// TestApprovalSweepGoesOn: the cut-off sweep looks at a bounded number of
// payments a round, and goes on from where it stopped: payments it rolled
// (still awaiting approval, requested first) never keep it from a later
// one whose cut-off has come.
func TestApprovalSweepGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	rule := []payment.ApprovalRule{{Name: "all", Approvals: 1}}
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"acme": rule, "gamma": rule})
	payment.SetSweepBatch(a.svc, 2)
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-sweep-acme", railPayments("acme", 3, a.at(0, 15*time.Hour))); res.AwaitingApproval != 3 {
		t.Fatalf("Phase A: %+v", res)
	}
	if res := a.take(t, routing.SourceAPI, "tok-sub", "init-sweep-gamma", railPayments("gamma", 1, a.at(0, 15*time.Hour+30*time.Minute))); res.AwaitingApproval != 1 {
		t.Fatalf("Phase A: %+v", res)
	}
	now = a.at(0, 16*time.Hour)
	for i, want := range []payment.ApprovalCutoffs{{Rolled: 2}, {Rolled: 1, Rejected: 1}, {}, {}} {
		if got, err := a.svc.SweepApprovalCutoffs(ctx); err != nil || got != want {
			t.Fatalf("round %d: %+v, %v; want %+v", i+1, got, err, want)
		}
	}
	if p, _ := a.find(t, "gamma", "gamma-000"); p.Status != payment.StatusRejected {
		t.Fatalf("gamma's after the rolled ones: %s (%s), want REJECTED", p.Status, p.StatusReason)
	}
}

// TestApprovalQueriesUseIndexes: among 100,000 payments under an
// approval rule, each approved or denied once, 2,000 still awaiting
// approval, the cut-off
// sweep's round and a checker's filter read the payments' indexes (of
// those awaiting approval, of a tenant's by status), and the
// requirements by key: neither table whole.
func TestApprovalQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApprovals(t, nil, nil)
	if _, err := a.s.pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, status, rail, request, context)
		SELECT 'k-' || g, 'p-' || g, 't-' || (g / 50 % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now() + g * interval '1 second',
		       CASE WHEN g % 50 = 0 THEN 'AWAITING_APPROVAL' ELSE 'DELIVERED' END, 'SEPA', '{}', '{}'
		FROM generate_series(1, 100000) g;
		INSERT INTO payment_approval_requirements (payment_id, tenant_id, rule, approvals, submitter)
		SELECT 'k-' || g, 't-' || (g / 50 % 10), 'all', 2, 'tok-sub' FROM generate_series(1, 100000) g;
		INSERT INTO payment_approvals (payment_id, principal, decision, actor)
		SELECT 'k-' || g, 'tok-' || (g % 7), CASE WHEN g % 50 = 1 THEN 'DENY' ELSE 'APPROVE' END, 'someone' FROM generate_series(1, 100000) g;
		ANALYZE payments; ANALYZE payment_approval_requirements; ANALYZE payment_approvals`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		f    func(ctx context.Context, svc *payment.Service) error
	}{
		{"the cut-off sweep", func(ctx context.Context, svc *payment.Service) error {
			_, err := svc.SweepApprovalCutoffs(ctx)
			return err
		}},
		{"a checker's filter", func(ctx context.Context, svc *payment.Service) error {
			_, err := svc.Approve(ctx, payment.ApprovalFilter{TenantID: "t-0"}, payment.Approver{Principal: "tok-a", Actor: "anna"}, true, nil)
			return err
		}},
	} {
		plan := pgtest.Plans(t, a.s.pool, false, func(ctx context.Context, tx pgx.Tx) error {
			svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(tx), Queue: a.s.queue, Rails: a.res, Pacer: a.lim})
			return tt.f(ctx, svc)
		})
		if testing.Verbose() {
			t.Logf("%s:\n%s", tt.name, plan)
		}
		if !strings.Contains(plan, "payments_awaiting_approval_idx") && !strings.Contains(plan, "payments_list_status_idx") ||
			strings.Contains(plan, "Seq Scan on payments\n") || strings.Contains(plan, "Seq Scan on payments p\n") ||
			strings.Contains(plan, "Seq Scan on payment_approval") {
			t.Errorf("%s: not by the payments' indexes, or a table read whole:\n%s", tt.name, plan)
		}
	}
}

// TestReleaseWhilePaused: an operator's release of a held payment whose
// rail is paused schedules it under the pause, without a slot or a queue
// item, and counts it paused, not released.
func TestReleaseWhilePaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"beta": {{Name: "all", Approvals: 1}}})
	a.heldAtCutoff(t, &now, "init-rel-paused", 1)
	if _, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "beta"}, payment.Approver{Principal: "tok-a", Actor: "anna"}, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.Pause(ctx, payment.PauseScope{Kind: payment.PauseRail, ID: "SEPA"}, nil); err != nil {
		t.Fatal(err)
	}
	rel, err := a.svc.Release(ctx, payment.HeldFilter{TenantID: "beta"}, nil)
	if want := (payment.Released{Paused: 1}); err != nil || rel != want {
		t.Fatalf("release on a paused rail: %+v, %v; want %+v", rel, err, want)
	}
	var tag *string
	if err := a.s.pool.QueryRow(ctx, `SELECT paused_by FROM payments WHERE payment_id = $1`, payment.Key("beta", "beta-000")).Scan(&tag); err != nil {
		t.Fatal(err)
	}
	if p, it := a.find(t, "beta", "beta-000"); p.Status != payment.StatusScheduled || (it != nil && it.Status == queue.StatusReady) || tag == nil || *tag != "RAIL:SEPA" {
		t.Fatalf("released on a paused rail: %s, queued %+v, paused by %v", p.Status, it, tag)
	}
	if res, err := a.svc.Resume(ctx, payment.PauseScope{Kind: payment.PauseRail, ID: "SEPA"}, nil); err != nil || res.Rolled+res.Moved != 1 {
		t.Fatalf("the rail resumed: %+v, %v", res, err)
	}
	if p, it := a.find(t, "beta", "beta-000"); p.Status != payment.StatusScheduled || it == nil || it.Status != queue.StatusReady {
		t.Fatalf("the rail resumed: %s, queued %+v", p.Status, it)
	}
}

// TestRejectHeld: an operator rejects held payments by id, with a
// reason: REJECTED, "REJECTED by <actor>: <reason>"; a payment not HELD
// named with them is left, and a second rejection finds nothing.
func TestRejectHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"beta": {{Name: "all", Approvals: 1}}})
	a.heldAtCutoff(t, &now, "init-reject-held", 2)
	if _, err := a.s.pool.Exec(ctx, `UPDATE payments SET status = 'AWAITING_APPROVAL' WHERE payment_id = $1`, payment.Key("beta", "beta-001")); err != nil {
		t.Fatal(err)
	}
	recorded := 0
	record := func(_ context.Context, _ pgx.Tx, n int) error { recorded += n; return nil }
	ids := []string{"beta-000", "beta-001", "beta-nope"}
	if n, err := a.svc.RejectHeld(ctx, "beta", ids, "compliance", "sanctions match confirmed", record); err != nil || n != 1 || recorded != 1 {
		t.Fatalf("reject: %d (recorded %d), %v", n, recorded, err)
	}
	if p, it := a.find(t, "beta", "beta-000"); p.Status != payment.StatusRejected || p.StatusReason != "REJECTED by compliance: sanctions match confirmed" || (it != nil && it.Status != queue.StatusCompleted) {
		t.Fatalf("rejected: %s (%s), queued %+v", p.Status, p.StatusReason, it)
	}
	if p, _ := a.find(t, "beta", "beta-001"); p.Status != payment.StatusAwaitingApproval {
		t.Fatalf("not HELD, left: %s", p.Status)
	}
	if n, err := a.svc.RejectHeld(ctx, "beta", ids, "compliance", "again", record); err != nil || n != 0 || recorded != 1 {
		t.Fatalf("again: %d (recorded %d), %v", n, recorded, err)
	}
	if vs, err := payment.Verify(ctx, a.s.pool); err != nil || len(vs) != 0 {
		t.Fatalf("verify: %v, %v", vs, err)
	}
}

// TestFileSelections: a file none of whose payments was taken in selects
// nothing (never every held or waiting payment); another tenant's file is
// not found for a tenant, as one that does not exist.
func TestFileSelections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now time.Time
	a := newApprovals(t, func() time.Time { return now }, map[string][]payment.ApprovalRule{"beta": {{Name: "all", Approvals: 1}}})
	a.heldAtCutoff(t, &now, "init-files", 2)
	if _, err := a.s.pool.Exec(ctx, `UPDATE payments SET status = 'AWAITING_APPROVAL' WHERE payment_id = $1`, payment.Key("beta", "beta-001")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.s.pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks, rejected) VALUES ('b-all-rejected', '{beta}', 0, 0, 3)`); err != nil {
		t.Fatal(err)
	}
	anna := payment.Approver{Principal: "tok-a", Actor: "anna"}
	if got, err := a.svc.Release(ctx, payment.HeldFilter{BatchID: "b-all-rejected"}, nil); err != nil || got != (payment.Released{}) {
		t.Errorf("release of an empty file: %+v, %v; want nothing", got, err)
	}
	if got, err := a.svc.Approve(ctx, payment.ApprovalFilter{BatchID: "b-all-rejected"}, anna, false, nil); err != nil || got != (payment.Decided{}) {
		t.Errorf("approval of an empty file: %+v, %v; want nothing", got, err)
	}
	if _, err := a.svc.Approve(ctx, payment.ApprovalFilter{TenantID: "globex", BatchID: "b-all-rejected"}, anna, true, nil); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("another tenant's file: %v, want ErrNotFound", err)
	}
	if p, _ := a.find(t, "beta", "beta-000"); p.Status != payment.StatusHeld {
		t.Errorf("beta-000: %s, want HELD still", p.Status)
	}
	if p, _ := a.find(t, "beta", "beta-001"); p.Status != payment.StatusAwaitingApproval {
		t.Errorf("beta-001: %s, want AWAITING_APPROVAL still", p.Status)
	}
}
