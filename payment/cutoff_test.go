package payment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/webhook"
)

// railsFixture is a database with a SEPA rail (10 a second, Berlin time,
// 07:00 to 16:00, on a calendar that closes the day after day0), the
// rules routing everything to it, and three tenants: acme ROLLs, beta
// HOLDs, gamma REJECTs.
type railsFixture struct {
	s    *saga
	lim  *pacing.Limiter
	res  *routing.Resolver
	loc  *time.Location
	day0 time.Time // 00:00 of a Wednesday, Berlin time
}

func newRailsFixture(t *testing.T) *railsFixture {
	t.Helper()
	ctx := context.Background()
	s := newSaga(t)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// A Wednesday a few weeks ahead, so Validate takes it and nothing
	// runs meanwhile.
	d := time.Now().In(loc).AddDate(0, 0, 21)
	for d.Weekday() != time.Wednesday {
		d = d.AddDate(0, 0, 1)
	}
	day0 := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
	lim := pacing.New(pacing.Config{Pool: s.pool})
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "sepa", MaxPerWindow: 10, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	thursday := calendar.DateOf(day0.AddDate(0, 0, 1), loc)
	if _, err := calendar.Put(ctx, s.pool, calendar.Calendar{Name: "TEST", Weekend: []time.Weekday{time.Saturday, time.Sunday},
		ClosingDays: []calendar.Date{thursday}}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, s.pool, routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, PacingConfig: "sepa",
		TimeZone: "Europe/Berlin", Opens: 7 * time.Hour, Cutoff: 16 * time.Hour, Calendar: "TEST", Active: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRules(context.Background(), s.pool, []routing.Rule{{Rail: "SEPA"}}); err != nil {
		t.Fatal(err)
	}
	for tenant, rule := range map[string]routing.CutoffRule{"beta": routing.Hold, "gamma": routing.Reject} {
		if _, err := routing.SetTenantCutoffRule(ctx, s.pool, tenant, rule); err != nil {
			t.Fatal(err)
		}
	}
	for _, tenant := range []string{"beta", "gamma"} { // acme's ACC-1 is the test database's
		s.account(t, account.Spec{AccountID: account.Key(tenant, "ACC-1"), ExternalID: "ACC-1", TenantID: tenant, Currency: "EUR", OpeningBalance: dec("1000000")})
	}
	res := routing.NewResolver(s.pool, routing.ResolverConfig{})
	s.init = payment.NewInitActivities(payment.InitConfig{Store: s.store, Queue: s.queue, Pacer: lim, Rails: res})
	return &railsFixture{s: s, lim: lim, res: res, loc: loc, day0: day0}
}

func (f *railsFixture) at(days int, clock time.Duration) time.Time {
	return f.day0.AddDate(0, 0, days).Add(clock)
}

// windowsWithin checks that no window of the rail's config is over max.
func (f *railsFixture) windowsWithin(t *testing.T, max int) {
	t.Helper()
	ws, err := f.lim.Windows(context.Background(), "sepa")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Counter > max || w.Counter != w.Slots {
			t.Errorf("window %s: counter %d, %d slots (max %d)", w.Start, w.Counter, w.Slots, max)
		}
	}
}

// payments are n payments of a tenant requested at `at`.
func railPayments(tenant string, n int, at time.Time) []payment.Request {
	out := make([]payment.Request, n)
	for i := range out {
		r := validRequest(time.Now())
		r.PaymentID, r.TenantID, r.RequestedExecutionTime = fmt.Sprintf("%s-%03d", tenant, i), tenant, at
		out[i] = r
	}
	return out
}

// TestPhaseAOnRails: a file of 90 payments per tenant requested at 15:59:50
// on a rail of 10 a second that cuts off at 16:00 (slots end 2 s before
// it): 80 fit; the rest meet their tenant's rule. acme's roll to the next
// business day's 07:00 opening, past the Thursday the calendar closes;
// beta's are HELD, gamma's REJECTED, and only the scheduled ones are
// queued. No slot lies in the guard before a cut-off.
func TestPhaseAOnRails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		tenant string
		late   payment.Status
	}{
		{"acme", payment.StatusScheduled},
		{"beta", payment.StatusHeld},
		{"gamma", payment.StatusRejected},
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			t.Parallel()
			f := newRailsFixture(t)
			at := f.at(0, 15*time.Hour+59*time.Minute+50*time.Second)
			rs := railPayments(tc.tenant, 90, at)
			res, err := f.s.init.InitChunk(ctx, rs, "init-"+tc.tenant)
			if err != nil {
				t.Fatal(err)
			}
			wantHeld := map[payment.Status]int{payment.StatusHeld: 10}[tc.late]
			wantRejected := map[payment.Status]int{payment.StatusRejected: 10}[tc.late]
			if res.Held != wantHeld || res.Rejected != wantRejected || res.Scheduled != 90-wantHeld-wantRejected {
				t.Fatalf("Phase A: %+v", res)
			}
			cutoff := f.at(0, 16*time.Hour)
			friday := f.at(2, 0)
			counts := map[string]int{}
			for _, r := range rs {
				p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
				if err != nil {
					t.Fatal(err)
				}
				if p.Rail != "SEPA" {
					t.Errorf("%s on rail %q", r.PaymentID, p.Rail)
				}
				date := calendar.DateOf(p.ExecutionDate, time.UTC)
				it, qerr := queue.New(f.s.pool).Get(ctx, payment.ItemType, p.Key)
				switch {
				case p.Status == payment.StatusScheduled && p.ScheduledExecutionTime.Before(cutoff):
					counts["on time"]++
					if !p.ScheduledExecutionTime.Before(cutoff.Add(-payment.DefaultCutoffGuard)) || p.ScheduledExecutionTime.Before(at) {
						t.Errorf("%s at %s: not in [requested, cut-off - guard)", r.PaymentID, p.ScheduledExecutionTime)
					}
					if date != calendar.DateOf(f.day0, f.loc) || qerr != nil || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) {
						t.Errorf("%s: date %s, queue %+v %v", r.PaymentID, date, it, qerr)
					}
				case p.Status == payment.StatusScheduled:
					counts["rolled"]++
					opening := friday.Add(7 * time.Hour)
					if p.ScheduledExecutionTime.Before(opening) || p.ScheduledExecutionTime.After(opening.Add(2*time.Second)) ||
						date != calendar.DateOf(friday, f.loc) || qerr != nil {
						t.Errorf("%s rolled to %s (date %s), want Friday's opening %s; queue %v", r.PaymentID, p.ScheduledExecutionTime, date, opening, qerr)
					}
				case p.Status == tc.late:
					counts["late"]++
					if !errors.Is(qerr, queue.ErrNotFound) {
						t.Errorf("%s, %s, is queued: %+v %v", r.PaymentID, p.Status, it, qerr)
					}
				default:
					t.Errorf("%s is %s (%s)", r.PaymentID, p.Status, p.StatusReason)
				}
			}
			want := map[string]int{"on time": 80, "late": 10}
			if tc.late == payment.StatusScheduled {
				want = map[string]int{"on time": 80, "rolled": 10}
			}
			if fmt.Sprint(counts) != fmt.Sprint(want) {
				t.Errorf("%v, want %v", counts, want)
			}
			// Phase A run again (a retry) answers the same.
			again, err := f.s.init.InitChunk(ctx, rs, "init-"+tc.tenant+"-again")
			if err != nil || again.Scheduled+again.Held+again.Rejected != 0 && again != res {
				t.Errorf("again: %+v, %v", again, err)
			}
		})
	}
}

// TestExecutionPastCutoff: an execution held past its rail's cut-off (a
// backlog, a lowered limit) never begins; its tenant's rule decides:
// ROLL gives it a slot at the next business day's opening and hands its
// queue item back for then, HOLD makes it HELD and parks the item,
// REJECT ends it CUTOFF_MISSED. No money moves.
func TestExecutionPastCutoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		tenant     string
		wantStatus payment.Status
		wantQueue  queue.Status
	}{
		{"acme", payment.StatusScheduled, queue.StatusReady},
		{"beta", payment.StatusHeld, queue.StatusParked},
		{"gamma", payment.StatusRejected, queue.StatusDispatched}, // done: the runner completes it
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			t.Parallel()
			f := newRailsFixture(t)
			// The rail cut off a minute ago, today: the payment was
			// scheduled before it and its execution comes after.
			now := time.Now().In(f.loc)
			cut := now.Add(-time.Minute).Truncate(time.Second)
			tod := time.Duration(cut.Hour())*time.Hour + time.Duration(cut.Minute())*time.Minute + time.Duration(cut.Second())*time.Second
			if tod < time.Hour || tod > 23*time.Hour {
				t.Skip("too near midnight in Berlin for a cut-off a minute ago today")
			}
			if _, err := routing.PutRail(ctx, f.s.pool, routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, PacingConfig: "sepa",
				TimeZone: "Europe/Berlin", Opens: 0, Cutoff: tod, Active: true}); err != nil {
				t.Fatal(err)
			}
			f.res.Flush()
			r := railPayments(tc.tenant, 1, f.at(0, 10*time.Hour))[0]
			r.RequestedExecutionTime = time.Now().Add(-2 * time.Minute)
			// Stored by hand as Phase A left it earlier today, before the
			// cut-off: SCHEDULED on today's date, its item DISPATCHED.
			key := payment.Key(r.TenantID, r.PaymentID)
			if _, err := f.s.init.InitChunk(ctx, []payment.Request{r}, "init-x"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.pool.Exec(ctx, `UPDATE payments SET status = 'SCHEDULED', status_reason = NULL, scheduled_execution_time = $2,
				execution_date = $3::text::date, rail = 'SEPA',
				context = coalesce(context, '{"enrichment":{},"amount":"125","rulesPassed":[]}'::jsonb) || jsonb_build_object('executionDate', $3::text, 'pacingConfig', 'sepa')
				WHERE payment_id = $1`, key, cut.Add(-30*time.Second), calendar.DateOf(now, f.loc).String()); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.pool.Exec(ctx, `INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time, queue_status, paced)
				VALUES ('PAYMENT', $1, $2, $3, 'DISPATCHED', true)
				ON CONFLICT (item_type, item_id) DO UPDATE SET queue_status = 'DISPATCHED'`, key, r.TenantID, cut.Add(-30*time.Second)); err != nil {
				t.Fatal(err)
			}
			before := balance(t, f.s, tc.tenant)
			a := payment.NewExecActivities(payment.ExecConfig{Store: payment.NewStore(f.s.pool), Process: f.s.acts, Slots: f.lim,
				Rails: f.res, Pacer: f.lim, Queue: queue.New(f.s.pool)})
			done, err := a.Execution(ctx, payment.ExecutionInput{PaymentID: key, Context: payment.Context{Version: 3},
				NotBefore: cut.Add(-30 * time.Second), WorkflowID: "exec-payment-" + key, Ref: "exec-payment-" + key + "/run"})
			p, gerr := f.s.store.Get(ctx, key)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if p.Status != tc.wantStatus {
				t.Fatalf("payment %s (%s), want %s; execution %v, %v", p.Status, p.StatusReason, tc.wantStatus, done, err)
			}
			var ae interface{ Type() string }
			switch tc.wantStatus {
			case payment.StatusRejected:
				if err != nil || !done {
					t.Fatalf("rejected: %v, %v", done, err)
				}
			default:
				if !errors.As(err, &ae) || ae.Type() != dispatch.ErrTypeDeferred || done {
					t.Fatalf("want a deferral: %v, %v", done, err)
				}
				// The runner moves the item as the deferral says.
				if _, err := queue.New(f.s.pool).Defer(ctx, payment.ItemType, "", []queue.Deferral{{ItemID: key, At: deferredAt(p)}}); err != nil {
					t.Fatal(err)
				}
			}
			it, err := queue.New(f.s.pool).Get(ctx, payment.ItemType, key)
			if err != nil || it.Status != tc.wantQueue {
				t.Errorf("queue item %+v, %v; want %s", it, err, tc.wantQueue)
			}
			if tc.wantStatus == payment.StatusScheduled {
				next := calendar.DateOf(now, f.loc).AddDays(1)
				if !p.ScheduledExecutionTime.After(next.At(0, f.loc).Add(-time.Nanosecond)) || calendar.DateOf(p.ExecutionDate, time.UTC) != next {
					t.Errorf("rolled to %s on %s, want the next day %s", p.ScheduledExecutionTime, p.ExecutionDate, next)
				}
			}
			if after := balance(t, f.s, tc.tenant); !after.Equal(before) {
				t.Errorf("balance %s → %s: money moved", before, after)
			}
			if errs, err := payment.Verify(ctx, f.s.pool); err != nil || len(errs) > 0 {
				t.Errorf("verify: %v %v", errs, err)
			}
		})
	}
}

func deferredAt(p payment.Payment) time.Time {
	if p.Status == payment.StatusScheduled {
		return *p.ScheduledExecutionTime
	}
	return time.Time{}
}

// balance is the tenant's ACC-1 balance.
func balance(t *testing.T, s *saga, tenant string) decimal.Decimal {
	t.Helper()
	var b decimal.Decimal
	if err := s.pool.QueryRow(context.Background(), `SELECT balance FROM account WHERE tenant_id = $1 AND external_id = 'ACC-1'`, tenant).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProjectionThenPhaseA: the projection a file's 202 carries, made
// before Phase A takes a slot, says how many make the cut-off, how many
// meet each rule, and the last slot, as Phase A then does.
func TestProjectionThenPhaseA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 15*time.Hour+59*time.Minute+40*time.Second)
	var rs []payment.Request
	rs = append(rs, railPayments("acme", 100, at)...)
	rs = append(rs, railPayments("beta", 60, at)...)
	rs = append(rs, railPayments("gamma", 40, at)...)
	for i := range rs {
		rs[i].Rail = "SEPA"
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	projs, err := svc.Project(ctx, rs)
	if err != nil || len(projs) != 1 {
		t.Fatalf("projection: %+v, %v", projs, err)
	}
	p := projs[0]
	// 18 s before the guard at 10 a second: 180 make it, 20 do not; the
	// last 20 in order are gamma's 40 minus those that fit... counted by
	// the rules of the payments past the line.
	if p.Rail != "SEPA" || p.Payments != 200 || p.BeforeCutoff != 180 || p.Rolled+p.Held+p.Rejected != 20 || p.Rejected != 20 ||
		p.Cutoff == nil || !p.Cutoff.Equal(f.at(0, 16*time.Hour)) {
		t.Fatalf("projection %+v", p)
	}
	res, err := f.s.init.InitChunk(ctx, rs, "init-file")
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != p.Rejected || res.Held != p.Held {
		t.Errorf("Phase A %+v, projected %+v", res, p)
	}
	var last time.Time
	for _, r := range rs {
		got, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == payment.StatusScheduled && got.ScheduledExecutionTime.Before(*p.Cutoff) && got.ScheduledExecutionTime.After(last) {
			last = *got.ScheduledExecutionTime
		}
	}
	if d := last.Sub(*p.LastSlot); d > 100*time.Millisecond || d < -100*time.Millisecond {
		t.Errorf("last slot %s, projected %s", last, p.LastSlot)
	}
}

// TestReleaseHeld: an operator releases a tenant's held payments: each is
// paced again from now on its rail before a cut-off, SCHEDULED with its
// queue item READY at its slot; a cancel ends one that is still held.
func TestReleaseHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 15*time.Hour+59*time.Minute+50*time.Second)
	rs := railPayments("beta", 90, at)
	if res, err := f.s.init.InitChunk(ctx, rs, "init-beta"); err != nil || res.Held != 10 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	// One of them is cancelled first.
	var held []string
	for _, r := range rs {
		if p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID); p.Status == payment.StatusHeld {
			held = append(held, r.PaymentID)
		}
	}
	if st, _, err := svc.Cancel(ctx, "beta", held[0], nil); err != nil || st != payment.StatusCancelled {
		t.Fatalf("cancel a held payment: %s, %v", st, err)
	}
	records := 0
	rel, err := svc.Release(ctx, payment.HeldFilter{TenantID: "beta", Rail: "SEPA"}, func(context.Context, pgx.Tx, int) error { records++; return nil })
	if err != nil || rel.Released != 9 || rel.Held != 0 || records != 1 {
		t.Fatalf("release: %+v, %v (%d records)", rel, err, records)
	}
	for _, id := range held[1:] {
		p, err := f.s.store.Find(ctx, "beta", id)
		if err != nil {
			t.Fatal(err)
		}
		it, qerr := queue.New(f.s.pool).Get(ctx, payment.ItemType, p.Key)
		rail, _ := f.res.Rail(ctx, "SEPA")
		day, _ := rail.DayOn(calendar.DateOf(p.ExecutionDate, time.UTC))
		if p.Status != payment.StatusScheduled || qerr != nil || it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) ||
			!p.ScheduledExecutionTime.Before(day.Cutoff) || p.ScheduledExecutionTime.Before(day.Opens) || p.StatusReason != payment.ReleaseReason {
			t.Errorf("%s released: %s at %s (%s), queue %+v %v", id, p.Status, p.ScheduledExecutionTime, p.StatusReason, it, qerr)
		}
	}
	if again, err := svc.Release(ctx, payment.HeldFilter{TenantID: "beta"}, nil); err != nil || again.Released != 0 {
		t.Errorf("a second release: %+v, %v", again, err)
	}
}

// TestRailEvents: a payment's events name its rail and execution date; one
// Phase A rolled past a cut-off publishes payment.scheduled then
// payment.rescheduled, a held one payment.held, and its release
// payment.scheduled from HELD; each valid against the published schema.
func TestRailEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	hooks := webhook.NewStore(webhook.StoreConfig{DB: f.s.pool, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})
	var eps []webhook.Endpoint
	for _, tenant := range []string{"acme", "beta"} {
		ep, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: tenant, URL: "http://127.0.0.1:9/" + tenant})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	at := f.at(0, 15*time.Hour+59*time.Minute+57*time.Second)
	rs := append(railPayments("acme", 20, at), railPayments("beta", 20, at)...)
	if _, err := f.s.init.InitChunk(ctx, rs, "init-events"); err != nil {
		t.Fatal(err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	if _, err := svc.Release(ctx, payment.HeldFilter{TenantID: "beta"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := compileEventSchema(t)
	seen := map[string][]string{}
	for _, ep := range eps {
		rows, err := f.s.pool.Query(ctx, `SELECT payload FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY delivery_id`, ep.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytesReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Errorf("event %s: %v", raw, err)
			}
			var e struct {
				Type string
				Data struct {
					PaymentID, Status, PreviousStatus, Rail, ExecutionDate string
				}
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if e.Data.Rail != "SEPA" || e.Data.ExecutionDate == "" {
				t.Errorf("event %s names no rail or date", raw)
			}
			seen[e.Data.PaymentID] = append(seen[e.Data.PaymentID], e.Type+"<"+e.Data.PreviousStatus)
		}
		rows.Close()
	}
	kinds := map[string]int{}
	for _, evs := range seen {
		kinds[strings.Join(evs, " ")]++
	}
	// 10 a second over the second before the 2 s guard: acme's 10 make
	// it (the first in the chunk), its other 10 roll, beta's 20 are held.
	want := map[string]int{
		"payment.scheduled<RECEIVED":                               10,
		"payment.scheduled<RECEIVED payment.rescheduled<SCHEDULED": 10,
		"payment.held<RECEIVED payment.scheduled<HELD":             20,
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

// TestRoutedAtIntake: a file's payments are routed as they are checked
// (source FILE): each gets its rail; one naming a rail that does not
// exist, or on a pacs.008 rail without a creditor BIC, is a bad line
// naming the field; nothing else is refused.
func TestRoutedAtIntake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "hv", MaxPerWindow: 5, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, f.s.pool, routing.Rail{Name: "HV", Type: routing.TypePACS008, PacingConfig: "hv", Active: true}); err != nil {
		t.Fatal(err)
	}
	f.res.Flush()
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	rs := railPayments("acme", 4, f.at(0, 10*time.Hour))
	rs[1].Rail = "HV"
	rs[2].Rail, rs[2].Creditor.BIC = "HV", ""
	rs[3].Rail = "NOWHERE"
	lineErrs, err := svc.CheckBatchFrom(ctx, routing.SourceFile, rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lineErrs) != 2 || lineErrs[0].Line != 3 || lineErrs[0].Fields[0].Field != "creditor.bic" ||
		lineErrs[1].Line != 4 || lineErrs[1].Fields[0].Field != "rail" {
		t.Fatalf("line errors %+v", lineErrs)
	}
	if rs[0].Rail != "SEPA" || rs[1].Rail != "HV" {
		t.Errorf("routed to %q and %q", rs[0].Rail, rs[1].Rail)
	}
}

// TestCancelGivesSlotsBack: a file cancelled before its instant gives its
// slots back, and the corrected file sent for the same instant runs at
// that instant, in the windows the cancelled one held; no window counts
// more than its limit, and each counter is the slots it holds.
func TestCancelGivesSlotsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	wrong := railPayments("acme", 100, at)
	if res, err := f.s.init.InitChunk(ctx, wrong, "init-wrong"); err != nil || res.Scheduled != 100 {
		t.Fatalf("the wrong file: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	res, err := svc.CancelWhere(ctx, payment.CancelFilter{TenantID: "acme"}, false, nil)
	if err != nil || res.Cancelled != 100 {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	corrected := railPayments("beta", 100, at)
	if res, err := f.s.init.InitChunk(ctx, corrected, "init-corrected"); err != nil || res.Scheduled != 100 {
		t.Fatalf("the corrected file: %+v, %v", res, err)
	}
	var last time.Time
	for _, r := range corrected {
		p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		if p.ScheduledExecutionTime.After(last) {
			last = *p.ScheduledExecutionTime
		}
	}
	// 100 at 10 a second from 10:00:00: the last in 10:00:09.
	if !last.Before(at.Add(10 * time.Second)) {
		t.Errorf("the corrected file's last slot %s: behind the cancelled file's slots (want before %s)", last, at.Add(10*time.Second))
	}
	f.windowsWithin(t, 10)
}
