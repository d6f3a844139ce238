package payment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

// TestCancel: a payment is cancelled in whatever state it waits, and
// only then: waiting for Phase A (which then stores and enqueues
// nothing for it), scheduled, or cancelled already; one whose execution
// began, or that Phase A rejected, is not; an unknown id is not found.
func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-C", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")})
	reg := prometheus.NewRegistry()
	metrics := payment.NewMetrics(reg)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(s.pool), Queue: queue.New(s.pool), Metrics: metrics})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	req := func(id string) payment.Request {
		r := validRequest(at)
		r.PaymentID, r.DebtorAccount = id, "ACC-C"
		return r
	}
	// waiting: taken in, its Phase A not run yet
	if _, err := svc.Store().Receive(ctx, []payment.Request{req("c-waiting")}, func(int) string { return "init-c-waiting" }, false); err != nil {
		t.Fatal(err)
	}
	pcs := s.schedule(t, req("c-scheduled"), req("c-executed"), req("c-twice"))
	if out, err := s.execute(ctx, "c-executed", pcs["c-executed"]); err != nil || out.Status != process.StatusSucceeded {
		t.Fatalf("execution: %+v, %v", out, err)
	}
	bad := req("c-rejected")
	bad.DebtorAccount = "NOPE"
	if res, err := s.init.InitChunk(ctx, []payment.Request{bad}, "init-c-rejected"); err != nil || res.Rejected != 1 {
		t.Fatalf("Phase A of the rejected one: %+v, %v", res, err)
	}
	if _, _, err := svc.Cancel(ctx, "acme", "c-twice", nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id      string
		want    payment.Status
		wantErr error
	}{
		{"c-waiting", payment.StatusCancelled, nil},
		{"c-scheduled", payment.StatusCancelled, nil},
		{"c-twice", payment.StatusCancelled, nil},
		{"c-executed", payment.StatusAccepted, payment.ErrNotCancellable},
		{"c-rejected", payment.StatusRejected, payment.ErrNotCancellable},
		{"c-unknown", "", payment.ErrNotFound},
	} {
		got, now, err := svc.Cancel(ctx, "acme", tt.id, nil)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) || now != (tt.id == "c-waiting" || tt.id == "c-scheduled") {
			t.Errorf("%s: %q (now %t), %v; want %q, %v", tt.id, got, now, err, tt.want, tt.wantErr)
		}
	}
	// c-twice, then c-waiting and c-scheduled: each counted once, when
	// cancelled.
	if n, err := testutil.GatherAndCount(reg, "paydispatch_payments_cancelled_total"); err != nil || n != 1 {
		t.Fatalf("cancel metric series: %d, %v", n, err)
	}
	if got := testutil.ToFloat64(metrics.Cancelled("payment")); got != 3 {
		t.Errorf("paydispatch_payments_cancelled_total{via=payment} = %v, want 3", got)
	}
	// Phase A of the cancelled one stores and enqueues nothing for it.
	a := payment.NewInitActivities(payment.InitConfig{Store: svc.Store(), Queue: svc.Queue()})
	if _, err := a.InitIntake(ctx, "init-c-waiting"); err != nil {
		t.Fatal(err)
	}
	p, err := svc.Store().Find(ctx, "acme", "c-waiting")
	if err != nil || p.Status != payment.StatusCancelled {
		t.Fatalf("c-waiting after Phase A: %+v, %v", p, err)
	}
	if _, err := svc.Queue().Get(ctx, payment.ItemType, p.Key); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("c-waiting enqueued: %v", err)
	}
	// The execution of a cancelled payment begins nothing.
	out, err := s.execute(ctx, "c-scheduled", pcs["c-scheduled"])
	if err != nil || out.Status == process.StatusSucceeded || out.ErrorCode != payment.CodeCancelled {
		t.Fatalf("execution of a cancelled payment: %+v, %v", out, err)
	}
	if v, err := payment.Verify(ctx, s.pool); err != nil || len(v) > 0 {
		t.Fatalf("verify: %v, %v", v, err)
	}
}

// TestCancelRacesExecution: 40 payments, each executed and cancelled at
// once by two goroutines. For each, exactly one wins: executed (debited
// once, the cancel refused) or cancelled (never debited, the execution
// begun nothing); the account holds exactly what the executed ones took,
// and verify finds nothing.
func TestCancelRacesExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-R", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("100000")})
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(s.pool), Queue: queue.New(s.pool)})
	const n = 40
	rs := make([]payment.Request, n)
	for i := range rs {
		rs[i] = validRequest(time.Now())
		rs[i].PaymentID, rs[i].DebtorAccount, rs[i].Amount = fmt.Sprintf("race-%02d", i), "ACC-R", "10.00"
	}
	pcs := s.schedule(t, rs...)
	type result struct {
		executed         bool
		cancelled        bool
		executeErr, cErr error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		id := rs[i].PaymentID
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%4) * time.Millisecond) // some cancels first
			out, err := s.execute(ctx, id, pcs[id])
			results[i].executed, results[i].executeErr = err == nil && out.Status == process.StatusSucceeded, err
		}()
		go func() {
			defer wg.Done()
			_, _, err := svc.Cancel(ctx, "acme", id, nil)
			results[i].cancelled, results[i].cErr = err == nil, err
			if err != nil && !errors.Is(err, payment.ErrNotCancellable) {
				t.Errorf("%s: cancel: %v", id, err)
			}
		}()
	}
	wg.Wait()
	executed := 0
	for i, r := range results {
		p, err := svc.Store().Find(ctx, "acme", rs[i].PaymentID)
		if err != nil || r.executeErr != nil {
			t.Fatalf("%s: %v, %v", rs[i].PaymentID, err, r.executeErr)
		}
		switch {
		case r.executed == r.cancelled:
			t.Errorf("%s: executed %t, cancelled %t: one, and only one, must win", rs[i].PaymentID, r.executed, r.cancelled)
		case r.executed && p.Status != payment.StatusAccepted, r.cancelled && p.Status != payment.StatusCancelled:
			t.Errorf("%s: %s after executed %t, cancelled %t", rs[i].PaymentID, p.Status, r.executed, r.cancelled)
		case r.executed:
			executed++
		}
	}
	// 10.00 a payment, no fee on this account
	if want := dec("100000").Sub(dec("10").Mul(dec(fmt.Sprint(executed)))); !s.balance(t, "ACC-R").Equal(want) {
		t.Fatalf("balance %s, want %s for %d executed", s.balance(t, "ACC-R"), want, executed)
	}
	if v, err := payment.Verify(ctx, s.pool); err != nil || len(v) > 0 {
		t.Fatalf("verify: %v, %v", v, err)
	}
	t.Logf("%d executed, %d cancelled", executed, n-executed)
}

// TestCancelWhere: an operator's cancel by filter takes the tenant's
// payments that wait and were requested in the window, in the statuses
// named; a dry run counts the same and changes nothing; another tenant's
// payments, and those outside the window, are left; a filter that names
// neither a tenant nor a file is refused.
func TestCancelWhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-W", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")})
	s.account(t, account.Spec{AccountID: "ACC-WG", TenantID: "globex", Currency: "EUR", OpeningBalance: dec("1000")})
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(s.pool), Queue: queue.New(s.pool)})
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	req := func(tenant, id, acct string, at time.Time) payment.Request {
		r := validRequest(base)
		r.TenantID, r.PaymentID, r.DebtorAccount, r.RequestedExecutionTime = tenant, id, acct, at
		return r
	}
	in, out := base, base.Add(10*time.Minute) // in the window [base, base+5m), and after it
	if _, err := svc.Store().Receive(ctx, []payment.Request{req("acme", "w-waiting", "ACC-W", in)}, func(int) string { return "init-w" }, false); err != nil {
		t.Fatal(err)
	}
	pcs := s.schedule(t, req("acme", "w-in-1", "ACC-W", in), req("acme", "w-in-2", "ACC-W", in.Add(time.Minute)),
		req("acme", "w-out", "ACC-W", out), req("acme", "w-executed", "ACC-W", in), req("globex", "w-theirs", "ACC-WG", in))
	if o, err := s.execute(ctx, "w-executed", pcs["w-executed"]); err != nil || o.Status != process.StatusSucceeded {
		t.Fatalf("execution: %+v, %v", o, err)
	}
	f := payment.CancelFilter{TenantID: "acme", RequestedFrom: base, RequestedTo: base.Add(5 * time.Minute)}
	want := payment.Cancelled{Cancelled: 3, NotCancelled: []payment.NotCancelled{{Status: payment.StatusAccepted, Count: 1, Reason: "its execution has begun"}}}
	for _, dry := range []bool{true, false} {
		got, err := svc.CancelWhere(ctx, f, dry, nil)
		if err != nil || got.Cancelled != want.Cancelled || len(got.NotCancelled) != 1 || got.NotCancelled[0] != want.NotCancelled[0] {
			t.Fatalf("dry run %t: %+v, %v; want %+v", dry, got, err, want)
		}
		p, err := svc.Store().Find(ctx, "acme", "w-in-1")
		if err != nil || (p.Status == payment.StatusCancelled) == dry {
			t.Fatalf("after dry run %t: w-in-1 is %s, %v", dry, p.Status, err)
		}
	}
	for id, want := range map[string]payment.Status{"w-waiting": payment.StatusCancelled, "w-in-2": payment.StatusCancelled,
		"w-out": payment.StatusScheduled, "w-executed": payment.StatusAccepted} {
		if p, err := svc.Store().Find(ctx, "acme", id); err != nil || p.Status != want {
			t.Errorf("%s: %s, %v; want %s", id, p.Status, err, want)
		}
	}
	if p, err := svc.Store().Find(ctx, "globex", "w-theirs"); err != nil || p.Status != payment.StatusScheduled {
		t.Errorf("globex's payment: %s, %v", p.Status, err)
	}
	// Only SCHEDULED, now after the window too: w-out alone.
	got, err := svc.CancelWhere(ctx, payment.CancelFilter{TenantID: "acme", Statuses: []payment.Status{payment.StatusScheduled}}, false, nil)
	if err != nil || got.Cancelled != 1 || len(got.NotCancelled) != 0 {
		t.Fatalf("SCHEDULED only: %+v, %v", got, err)
	}
	if _, err := svc.CancelWhere(ctx, payment.CancelFilter{}, true, nil); !errors.Is(err, payment.ErrNoSelection) {
		t.Fatalf("no tenant, no file: %v", err)
	}
	if v, err := payment.Verify(ctx, s.pool); err != nil || len(v) > 0 {
		t.Fatalf("verify: %v, %v", v, err)
	}
}

// TestCancelRecordsInItsTransactions: a cancel calls its Record inside
// each transaction that cancels payments, with how many: the payments
// waiting for Phase A and the scheduled ones are two. A Record that fails
// rolls its payments back: they stay as they were, and the cancel fails.
func TestCancelRecordsInItsTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-R", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")})
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(s.pool), Queue: queue.New(s.pool)})
	if _, err := s.pool.Exec(ctx, `CREATE TABLE cancel_record (cancelled int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	req := func(id string) payment.Request {
		r := validRequest(at)
		r.PaymentID, r.DebtorAccount = id, "ACC-R"
		return r
	}
	if _, err := svc.Store().Receive(ctx, []payment.Request{req("r-waiting")}, func(int) string { return "init-r-waiting" }, false); err != nil {
		t.Fatal(err)
	}
	s.schedule(t, req("r-scheduled"))
	statuses := func() string {
		t.Helper()
		var out []string
		for _, id := range []string{"r-waiting", "r-scheduled"} {
			v, err := svc.Status(ctx, "acme", id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(v.Status))
		}
		return strings.Join(out, ",")
	}
	fail := errors.New("the audit log is full")
	_, err := svc.CancelWhere(ctx, payment.CancelFilter{TenantID: "acme"}, false, func(context.Context, pgx.Tx, int) error { return fail })
	if !errors.Is(err, fail) || statuses() != "RECEIVED,SCHEDULED" {
		t.Fatalf("the record failed: %v; statuses %s, want RECEIVED,SCHEDULED", err, statuses())
	}
	got, err := svc.CancelWhere(ctx, payment.CancelFilter{TenantID: "acme"}, false, func(ctx context.Context, tx pgx.Tx, n int) error {
		_, err := tx.Exec(ctx, `INSERT INTO cancel_record VALUES ($1)`, n)
		return err
	})
	var recorded string
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(string_agg(cancelled::text, ','), '') FROM cancel_record`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if err != nil || got.Cancelled != 2 || statuses() != "CANCELLED,CANCELLED" || recorded != "1,1" {
		t.Fatalf("cancelled %+v, %v; statuses %s, recorded %q; want 2, both CANCELLED, recorded 1,1", got, err, statuses(), recorded)
	}
}
