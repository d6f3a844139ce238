package payment_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// clock is a settable clock for the windows.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// dupPhaseA is Phase A with the duplicate control alone, on c's clock.
func dupPhaseA(pool *pgxpool.Pool, c *clock, more ...payment.Control) *payment.InitActivities {
	store := payment.NewStore(pool)
	controls := append([]payment.Control{payment.NewDuplicateControl(payment.DuplicateConfig{Store: store, Now: c.now})}, more...)
	return payment.NewInitActivities(payment.InitConfig{Store: store, Queue: queue.New(pool), Controls: controls, Now: c.now})
}

// payroll is n payments of acme's, each to its employee (an amount of
// its own), requested at `at`, their ids prefixed.
func payroll(prefix string, n int, at time.Time) []payment.Request {
	out := make([]payment.Request, n)
	for i := range out {
		r := validRequest(at)
		r.PaymentID, r.Amount, r.RequestedExecutionTime = fmt.Sprintf("%s-%03d", prefix, i), fmt.Sprintf("%d.00", 1000+i), at
		out[i] = r
	}
	return out
}

func setDuplicates(t *testing.T, pool *pgxpool.Pool, tenant, action string, days int) {
	t.Helper()
	c := payment.ControlSettingsChange{TenantID: tenant}
	if action != "" {
		c.DuplicateAction = &action
	}
	if days != 0 {
		c.DuplicateWindowDays = &days
	}
	if _, err := payment.SetControlSettings(context.Background(), pool, c); err != nil {
		t.Fatal(err)
	}
}

// TestPayrollSentAgain: the same payroll sent again under new ids is
// caught payment by payment, each as its tenant's rule says, naming the
// payment it repeats; the first payroll goes on untouched, and OFF
// catches nothing. With no rule set, the default (WARN) applies.
func TestPayrollSentAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		action     string // "" : none set
		status     payment.Status
		reasonHead string // the reason before "like <id>"
		queued     bool
	}{
		{"", payment.StatusScheduled, "DUPLICATE suspected: ", true},
		{"WARN", payment.StatusScheduled, "DUPLICATE suspected: ", true},
		{"hold", payment.StatusHeld, "DUPLICATE: ", false},
		{"REJECT", payment.StatusRejected, "DUPLICATE: ", false},
		{"OFF", payment.StatusScheduled, "", true},
	}
	for _, tt := range tests {
		t.Run("rule "+tt.action, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newPool(t)
			if tt.action != "" {
				setDuplicates(t, pool, "acme", tt.action, 0)
			}
			c := &clock{t: time.Now()}
			a := dupPhaseA(pool, c)
			at := c.now().Add(24 * time.Hour).Truncate(time.Second)
			if res, err := a.InitChunk(ctx, payroll("jan", 5, at), "init-jan"); err != nil || res.Scheduled != 5 {
				t.Fatalf("the first payroll: %+v, %v", res, err)
			}
			c.add(3 * time.Hour)
			if _, err := a.InitChunk(ctx, payroll("jan-again", 5, at), "init-jan-again"); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				first, again := load(t, pool, fmt.Sprintf("jan-%03d", i)), load(t, pool, fmt.Sprintf("jan-again-%03d", i))
				if first.status != payment.StatusScheduled || first.reason != "" || !first.queued {
					t.Errorf("the first payment %d: %+v", i, first)
				}
				want := ""
				if tt.reasonHead != "" {
					want = tt.reasonHead + fmt.Sprintf("like jan-%03d", i)
				}
				if again.status != tt.status || again.reason != want || again.queued != tt.queued {
					t.Errorf("sent again %d: %s %q queued %t, want %s %q queued %t", i, again.status, again.reason, again.queued, tt.status, want, tt.queued)
				}
			}
		})
	}
}

// TestNotADuplicate: a payment that differs in its debtor account,
// creditor IBAN, amount, currency or execution date is not a duplicate,
// nor is another tenant's; one whose amount is written otherwise but is
// the same, or whose IBAN is spaced and in lower case, or requested at
// another time of the same UTC day, is.
func TestNotADuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "acme", "HOLD", 0)
	setDuplicates(t, pool, "globex", "HOLD", 0)
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "ACC-2", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")}); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	a := dupPhaseA(pool, c)
	day := c.now().UTC().AddDate(0, 0, 3).Truncate(24 * time.Hour)
	base := validRequest(c.now())
	base.PaymentID, base.RequestedExecutionTime = "first", day.Add(10*time.Hour)
	if res, err := a.InitChunk(ctx, []payment.Request{base}, "init-first"); err != nil || res.Scheduled != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	tests := []struct {
		name   string
		change func(*payment.Request)
		dup    bool
	}{
		{"another creditor", func(r *payment.Request) { r.Creditor.IBAN = "GB82WEST12345698765432" }, false},
		{"another amount", func(r *payment.Request) { r.Amount = "125.01" }, false},
		{"another day", func(r *payment.Request) { r.RequestedExecutionTime = day.Add(34 * time.Hour) }, false},
		{"another debtor account", func(r *payment.Request) { r.DebtorAccount = "ACC-2" }, false},
		{"another tenant", func(r *payment.Request) { r.TenantID, r.DebtorAccount = "globex", "ACC-G" }, false},
		{"the amount written otherwise", func(r *payment.Request) { r.Amount = "125.0" }, true},
		{"the IBAN spaced, lower case", func(r *payment.Request) { r.Creditor.IBAN = "de89 3704 0044 0532 0130 00" }, true},
		{"later the same UTC day, another name", func(r *payment.Request) {
			r.RequestedExecutionTime, r.Creditor.Name, r.RemittanceInfo = day.Add(23*time.Hour), "J. Doe", "other"
		}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			r.PaymentID = fmt.Sprintf("case-%d", i)
			tt.change(&r)
			if _, err := a.InitChunk(ctx, []payment.Request{r}, "init-"+r.PaymentID); err != nil {
				t.Fatal(err)
			}
			p, err := payment.NewStore(pool).Find(ctx, r.TenantID, r.PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Status == payment.StatusHeld && p.StatusReason == "DUPLICATE: like first"; got != tt.dup {
				t.Fatalf("%s %q, want a duplicate: %t", p.Status, p.StatusReason, tt.dup)
			}
		})
	}
}

// TestDuplicateWindow: a payment is a duplicate of an earlier one within
// the window in force when that one was taken in; once it is over, the
// next one owns the fingerprint, and the one after is its duplicate.
// The clock moves, nothing sleeps.
func TestDuplicateWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "acme", "HOLD", 2)
	c := &clock{t: time.Now()}
	a := dupPhaseA(pool, c)
	at := c.now().AddDate(0, 0, 10).Truncate(time.Second)
	send := func(id string) stored {
		t.Helper()
		r := validRequest(c.now())
		r.PaymentID, r.RequestedExecutionTime = id, at
		if _, err := a.InitChunk(ctx, []payment.Request{r}, "init-"+id); err != nil {
			t.Fatal(err)
		}
		return load(t, pool, id)
	}
	steps := []struct {
		after  time.Duration
		id     string
		reason string // "": scheduled
	}{
		{0, "a", ""},
		{47 * time.Hour, "b", "DUPLICATE: like a"},
		{59 * time.Minute, "c", "DUPLICATE: like a"},
		{2 * time.Minute, "d", ""}, // a's window ended a minute ago
		{time.Hour, "e", "DUPLICATE: like d"},
	}
	for _, s := range steps {
		c.add(s.after)
		got := send(s.id)
		if wantHeld := s.reason != ""; (got.status == payment.StatusHeld) != wantHeld || got.reason != s.reason {
			t.Fatalf("%s after %s: %s %q, want reason %q", s.id, s.after, got.status, got.reason, s.reason)
		}
	}
	// The window of payments taken in from now is the one set now.
	setDuplicates(t, pool, "acme", "", 1)
	c.add(48 * time.Hour) // d's window (2 days) ended
	if got := send("f"); got.status != payment.StatusScheduled {
		t.Fatalf("f: %+v", got)
	}
	c.add(25 * time.Hour) // f's window (1 day) ended
	if got := send("g"); got.status != payment.StatusScheduled {
		t.Fatalf("g: %+v", got)
	}
}

// TestDuplicatesAcrossConcurrentChunks: the same 40 payments sent in 8
// chunks at once (each its own ids, in its own order, as a file's chunks
// run Phase A concurrently): each fingerprint has exactly one owner, the
// payment SCHEDULED, and every other is HELD naming it; none deadlocks.
// Within one chunk, a repeat is caught too.
func TestDuplicatesAcrossConcurrentChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "acme", "HOLD", 0)
	c := &clock{t: time.Now()}
	a := dupPhaseA(pool, c)
	at := c.now().Add(48 * time.Hour).Truncate(time.Second)
	const chunks, n = 8, 40
	var g errgroup.Group
	for k := range chunks {
		chunk := payroll(fmt.Sprintf("c%d", k), n, at)
		rand.Shuffle(len(chunk), func(i, j int) { chunk[i], chunk[j] = chunk[j], chunk[i] })
		if k == 0 {
			again := chunk[0]
			again.PaymentID += "-again"
			chunk = append(chunk, again)
		}
		g.Go(func() error {
			_, err := a.InitChunk(ctx, chunk, fmt.Sprintf("init-c%d", k))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT external_id, amount::text, status, coalesce(status_reason, '') FROM payments WHERE tenant_id = 'acme'`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ID, Amount, Status, Reason string }
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != chunks*n+1 {
		t.Fatalf("%d payments stored, want %d", len(rs), chunks*n+1)
	}
	owners := map[string]string{}
	for _, r := range rs {
		if r.Status == string(payment.StatusScheduled) {
			if o, ok := owners[r.Amount]; ok {
				t.Fatalf("amount %s scheduled twice: %s and %s", r.Amount, o, r.ID)
			}
			owners[r.Amount] = r.ID
		}
	}
	if len(owners) != n {
		t.Fatalf("%d fingerprints owned, want %d", len(owners), n)
	}
	for _, r := range rs {
		if r.Status == string(payment.StatusScheduled) {
			continue
		}
		if r.Status != string(payment.StatusHeld) || r.Reason != "DUPLICATE: like "+owners[r.Amount] {
			t.Errorf("%s (%s): %s %q, want HELD like %s", r.ID, r.Amount, r.Status, r.Reason, owners[r.Amount])
		}
	}
}

// failOnce fails its first call, as a Phase A attempt that fails after
// the duplicate control claimed its fingerprints.
type failOnce struct{ calls atomic.Int32 }

func (f *failOnce) Name() string { return "flaky" }
func (f *failOnce) Check(_ context.Context, cs []payment.Candidate) ([]payment.Decision, error) {
	if f.calls.Add(1) == 1 {
		return nil, errors.New("timeout")
	}
	return make([]payment.Decision, len(cs)), nil
}

// TestDuplicateRetryAnswersTheSame: Phase A retried after the control
// claimed the fingerprints answers as the first attempt would have: the
// owner is not its own duplicate, the repeat still is; the control asked
// again on the same candidates answers the same.
func TestDuplicateRetryAnswersTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "acme", "HOLD", 0)
	c := &clock{t: time.Now()}
	flaky := &failOnce{}
	a := dupPhaseA(pool, c, flaky)
	at := c.now().Add(time.Hour).Truncate(time.Second)
	chunk := append(payroll("p", 3, at), payroll("q", 1, at)...) // q-000 repeats p-000
	if _, err := a.InitChunk(ctx, chunk, "init-retry"); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the first attempt: %v", err)
	}
	c.add(time.Minute)
	if res, err := a.InitIntake(ctx, "init-retry"); err != nil || res.Scheduled != 3 || res.Held != 1 {
		t.Fatalf("the retry: %+v, %v", res, err)
	}
	if got := load(t, pool, "q-000"); got.status != payment.StatusHeld || got.reason != "DUPLICATE: like p-000" {
		t.Fatalf("q-000: %+v", got)
	}
	ctl := payment.NewDuplicateControl(payment.DuplicateConfig{Store: payment.NewStore(pool), Now: c.now})
	var cs []payment.Candidate
	for _, r := range chunk {
		m, err := payment.Validate(r, c.now())
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, payment.Candidate{Key: payment.Key(r.TenantID, r.PaymentID), Request: r, Money: m})
	}
	for attempt := range 2 {
		ds, err := ctl.Check(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range ds {
			want := payment.Decision{}
			if i == 3 {
				want = payment.Decision{Action: payment.ActionHold, Reason: "DUPLICATE: like p-000"}
			}
			if d != want {
				t.Fatalf("asked again (%d), %s: %+v, want %+v", attempt, cs[i].Request.PaymentID, d, want)
			}
		}
	}
}

// TestReleaseDuplicate: an operator's release of a payment held as a
// duplicate schedules it, its queue item READY at its new slot.
func TestReleaseDuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	setDuplicates(t, f.s.pool, "acme", "HOLD", 0)
	c := &clock{t: time.Now()}
	f.s.init = payment.NewInitActivities(payment.InitConfig{Store: f.s.store, Queue: f.s.queue, Pacer: f.lim, Rails: f.res, Now: c.now,
		Controls: []payment.Control{payment.NewDuplicateControl(payment.DuplicateConfig{Store: f.s.store, Now: c.now})}})
	at := f.at(0, 10*time.Hour)
	first, again := railPayments("acme", 1, at), railPayments("acme", 1, at)
	again[0].PaymentID = "acme-again"
	first[0].Rail, again[0].Rail = "SEPA", "SEPA" // routed at intake, as the service does
	if res, err := f.s.init.InitChunk(ctx, append(first, again...), "init-dup"); err != nil || res.Held != 1 || res.Scheduled != 1 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	rel, err := svc.Release(ctx, payment.HeldFilter{TenantID: "acme", PaymentIDs: []string{"acme-again"}}, nil)
	if err != nil || rel.Released != 1 {
		t.Fatalf("release: %+v, %v", rel, err)
	}
	p, err := f.s.store.Find(ctx, "acme", "acme-again")
	if err != nil {
		t.Fatal(err)
	}
	it, err := f.s.queue.Get(ctx, payment.ItemType, p.Key)
	if p.Status != payment.StatusScheduled || err != nil || it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) {
		t.Fatalf("released: %s (%s), queue %+v %v", p.Status, p.StatusReason, it, err)
	}
}

// countingDB counts the statements sent through it.
type countingDB struct {
	*pgxpool.Pool
	n atomic.Int32
}

func (d *countingDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	d.n.Add(1)
	return d.Pool.Query(ctx, sql, args...)
}

func (d *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	d.n.Add(1)
	return d.Pool.QueryRow(ctx, sql, args...)
}

func (d *countingDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	d.n.Add(1)
	return d.Pool.Exec(ctx, sql, args...)
}

// TestSuspectedDuplicates: the intake's read-only look, in one query
// however many requests: a request like a payment taken in (its window
// open) or like an earlier request among them is a suspect, naming it;
// the payment itself sent again, a different one, an unreadable amount
// and an OFF tenant's are not; nothing is written.
func TestSuspectedDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "globex", "OFF", 0)
	setDuplicates(t, pool, "acme", "REJECT", 0)
	c := &clock{t: time.Now()}
	at := c.now().Add(24 * time.Hour).Truncate(time.Second)
	if _, err := dupPhaseA(pool, c).InitChunk(ctx, payroll("jan", 2, at), "init-jan"); err != nil {
		t.Fatal(err)
	}
	var reqs []payment.Request
	reqs = append(reqs, payroll("jan", 1, at)...)      // 0: jan-000 itself, sent again
	reqs = append(reqs, payroll("again", 2, at)...)    // 1, 2: like jan-000 and jan-001
	reqs = append(reqs, payroll("new", 3, at)[2])      // 3: new-002, new
	reqs = append(reqs, payroll("new-copy", 3, at)[2]) // 4: like new-002, among the requests
	bad := payroll("bad", 1, at)[0]
	bad.Amount = "1e3"
	reqs = append(reqs, bad) // 5: unreadable
	g := payroll("g", 1, at)[0]
	g.TenantID, g.DebtorAccount = "globex", "ACC-G"
	reqs = append(reqs, g, g) // 6, 7: OFF
	reqs[7].PaymentID = "g-other"
	// Many more, all new, to show the cost stays one query.
	reqs = append(reqs, payroll("bulk", 2000, at.Add(72*time.Hour))...)
	db := &countingDB{Pool: pool}
	c.add(time.Hour)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(db), Now: c.now})
	var before int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_fingerprint`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	got, err := svc.SuspectedDuplicates(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []payment.Suspect{
		{Index: 1, PaymentID: "again-000", Like: "jan-000", LikeIndex: -1, Action: payment.DuplicateReject},
		{Index: 2, PaymentID: "again-001", Like: "jan-001", LikeIndex: -1, Action: payment.DuplicateReject},
		{Index: 4, PaymentID: "new-copy-002", Like: "new-002", LikeIndex: 3, Action: payment.DuplicateReject},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("suspects %+v\nwant %+v", got, want)
	}
	if n := db.n.Load(); n != 1 {
		t.Fatalf("%d statements for %d requests, want 1", n, len(reqs))
	}
	var after int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_fingerprint`).Scan(&after); err != nil || after != before {
		t.Fatalf("fingerprints %d before, %d after (%v): a look writes nothing", before, after, err)
	}
	// Once jan's window is over, they are suspects no more.
	c.add(8 * 24 * time.Hour)
	if got, err := svc.SuspectedDuplicates(ctx, reqs[1:3]); err != nil || len(got) != 0 {
		t.Fatalf("after the window: %+v, %v", got, err)
	}
}

// TestDeleteFingerprints: the retention deletes the fingerprints whose
// windows are over, and no other, in batches.
func TestDeleteFingerprints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO payment_fingerprint (tenant_id, fingerprint, payment_id, external_id, received_at, expires_at)
		SELECT 'acme', int4send(g), 'k-' || g, 'p-' || g, now() - interval '10 days', now() - interval '3 days' + g * interval '1 hour' + interval '30 minutes'
		FROM generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	// Expired: the 70 whose window ended before now less an hour.
	before := time.Now().Add(-time.Hour)
	var total int64
	for {
		n, err := payment.DeleteFingerprints(ctx, pool, before, 30)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	var left int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_fingerprint WHERE expires_at < $1`, before).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if total != 70 || left != 0 {
		t.Fatalf("deleted %d, %d expired left; want 70 and 0", total, left)
	}
}

// TestControlSettings: a tenant's settings are the defaults until set; a
// change sets the fields it gives and keeps the others; bad values are
// refused, each field named.
func TestControlSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	store := payment.NewStore(pool)
	if got, err := store.ControlSettings(ctx, []string{"acme"}); err != nil || got["acme"].DuplicateAction != payment.DuplicateWarn ||
		got["acme"].DuplicateWindowDays != 7 || got["acme"].ScreeningOnError != payment.ScreeningHold {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	set, err := payment.SetControlSettings(ctx, pool, payment.ControlSettingsChange{TenantID: "acme", ScreeningOnError: str("allow")})
	if err != nil || set.ScreeningOnError != payment.ScreeningAllow || set.DuplicateAction != payment.DuplicateWarn || set.DuplicateWindowDays != 7 {
		t.Fatalf("set: %+v, %v", set, err)
	}
	set, err = payment.SetControlSettings(ctx, pool, payment.ControlSettingsChange{TenantID: "acme", DuplicateAction: str("Reject"), DuplicateWindowDays: num(30)})
	if err != nil || set.ScreeningOnError != payment.ScreeningAllow || set.DuplicateAction != payment.DuplicateReject || set.DuplicateWindowDays != 30 {
		t.Fatalf("changed: %+v, %v", set, err)
	}
	if got, err := store.ScreeningOnError(ctx, "acme"); err != nil || got != payment.ScreeningAllow {
		t.Fatalf("screening on error: %s, %v", got, err)
	}
	if got, err := store.ScreeningOnError(ctx, "globex"); err != nil || got != payment.ScreeningHold {
		t.Fatalf("screening on error, unset: %s, %v", got, err)
	}
	if all, err := payment.ListControlSettings(ctx, pool); err != nil || len(all) != 1 || all[0].TenantID != "acme" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	for _, tt := range []struct {
		name   string
		c      payment.ControlSettingsChange
		fields []string
	}{
		{"no tenant", payment.ControlSettingsChange{DuplicateAction: str("HOLD")}, []string{"tenantId"}},
		{"a bad tenant", payment.ControlSettingsChange{TenantID: "a b", DuplicateAction: str("HOLD")}, []string{"tenantId"}},
		{"nothing to set", payment.ControlSettingsChange{TenantID: "acme"}, []string{"duplicateAction"}},
		{"an unknown action", payment.ControlSettingsChange{TenantID: "acme", DuplicateAction: str("IGNORE")}, []string{"duplicateAction"}},
		{"an empty action", payment.ControlSettingsChange{TenantID: "acme", DuplicateAction: str("")}, []string{"duplicateAction"}},
		{"no window", payment.ControlSettingsChange{TenantID: "acme", DuplicateWindowDays: num(0)}, []string{"duplicateWindowDays"}},
		{"a window too long", payment.ControlSettingsChange{TenantID: "acme", DuplicateWindowDays: num(91)}, []string{"duplicateWindowDays"}},
		{"an unknown screening answer", payment.ControlSettingsChange{TenantID: "acme", ScreeningOnError: str("PASS")}, []string{"screeningOnError"}},
		{"all wrong", payment.ControlSettingsChange{TenantID: "", DuplicateAction: str("x"), DuplicateWindowDays: num(-1), ScreeningOnError: str("y")},
			[]string{"tenantId", "duplicateAction", "duplicateWindowDays", "screeningOnError"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := payment.SetControlSettings(ctx, pool, tt.c)
			var bad *field.Invalid
			if !errors.As(err, &bad) || len(bad.Fields) != len(tt.fields) {
				t.Fatalf("err = %v, want the fields %v", err, tt.fields)
			}
			for i, f := range tt.fields {
				if bad.Fields[i].Field != f {
					t.Fatalf("err = %v, want the fields %v", err, tt.fields)
				}
			}
		})
	}
	if got, _ := store.ControlSettings(ctx, []string{"acme"}); got["acme"].DuplicateAction != payment.DuplicateReject {
		t.Fatalf("a refused change changed the settings: %+v", got["acme"])
	}
}

// TestSentAgainAfterItsCancel: a payment sent again after the one it
// repeats was cancelled (or rejected) is no duplicate: it takes the
// fingerprint over, and a third like it is a duplicate of it, not of the
// cancelled one.
func TestSentAgainAfterItsCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	setDuplicates(t, pool, "acme", "HOLD", 0)
	c := &clock{t: time.Now()}
	a := dupPhaseA(pool, c)
	at := c.now().Add(24 * time.Hour).Truncate(time.Second)
	for i, status := range []string{"CANCELLED", "REJECTED"} {
		first := payroll(fmt.Sprintf("first%d", i), 1, at)
		first[0].Amount = fmt.Sprintf("%d.00", 500+i)
		if res, err := a.InitChunk(ctx, first, "init-"+first[0].PaymentID); err != nil || res.Scheduled != 1 {
			t.Fatalf("the first: %+v, %v", res, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE payments SET status = $1 WHERE external_id = $2`, status, first[0].PaymentID); err != nil {
			t.Fatal(err)
		}
		again, third := first[0], first[0]
		again.PaymentID, third.PaymentID = fmt.Sprintf("again%d", i), fmt.Sprintf("third%d", i)
		if got, err := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool)}).SuspectedDuplicates(ctx, []payment.Request{again}); err != nil || len(got) != 0 {
			t.Fatalf("the intake's look after the first was %s: %+v, %v; want none", status, got, err)
		}
		for _, r := range []payment.Request{again, third} {
			if _, err := a.InitChunk(ctx, []payment.Request{r}, "init-"+r.PaymentID); err != nil {
				t.Fatal(err)
			}
		}
		if got := load(t, pool, again.PaymentID); got.status != payment.StatusScheduled || got.reason != "" || !got.queued {
			t.Errorf("sent again after its %s: %+v, want SCHEDULED, no duplicate", status, got)
		}
		if got := load(t, pool, third.PaymentID); got.status != payment.StatusHeld || got.reason != "DUPLICATE: like "+again.PaymentID {
			t.Errorf("a third like it: %+v, want HELD like %s", got, again.PaymentID)
		}
	}
}
