package payment_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }

// newPool is a test database with PAYMENT registered, as serve leaves it,
// and the debtor accounts the tests' payments name: acme's ACC-1 and
// globex's ACC-G, in EUR, with plenty.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []account.Spec{
		{AccountID: "ACC-1", TenantID: "acme", Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000)},
		{AccountID: "ACC-G", TenantID: "globex", Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000)},
	} {
		if _, _, err := account.Create(ctx, pool, a); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := payment.NewStore(newPool(t))
	now := time.Now()
	r := validRequest(now)
	m, err := payment.Validate(r, now)
	if err != nil {
		t.Fatal(err)
	}
	at := r.RequestedExecutionTime
	if created, err := s.Record(ctx, r, &m, payment.StatusScheduled, "", &at); err != nil || !created {
		t.Fatalf("record: %v %v", created, err)
	}
	// Replay: the same request (its time in another zone) is a no-op.
	replay := r
	replay.RequestedExecutionTime = r.RequestedExecutionTime.In(time.FixedZone("MST", -7*3600))
	if created, err := s.Record(ctx, replay, &m, payment.StatusScheduled, "", &at); err != nil || created {
		t.Fatalf("replay: %v %v", created, err)
	}
	other := r
	other.Amount = "999.00"
	if _, err := s.Record(ctx, other, &m, payment.StatusScheduled, "", &at); !errors.Is(err, payment.ErrConflict) {
		t.Fatalf("different payment under the same id: %v", err)
	}
	key := payment.Key(r.TenantID, r.PaymentID)
	p, err := s.Get(ctx, key)
	if err != nil || p.Status != payment.StatusScheduled || !p.Money.Amount.Equal(decimal.RequireFromString("125")) || p.Money.Currency != "EUR" ||
		p.Key != key || p.PaymentID != r.PaymentID {
		t.Fatalf("get: %+v %v", p, err)
	}
	if found, err := s.Find(ctx, r.TenantID, r.PaymentID); err != nil || found.Key != key {
		t.Fatalf("find by the tenant's id: %+v %v", found, err)
	}
	// The id is the tenant's: another tenant may use it for its own payment.
	theirs := r
	theirs.TenantID, theirs.Amount = "globex", "999.00"
	if created, err := s.Record(ctx, theirs, &m, payment.StatusScheduled, "", &at); err != nil || !created {
		t.Fatalf("the same id in another tenant: %v %v", created, err)
	}
	if _, err := s.Find(ctx, "initech", r.PaymentID); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("a tenant without it: %v", err)
	}
	if all, err := s.FindAll(ctx, r.PaymentID); err != nil || len(all) != 2 {
		t.Fatalf("every tenant's: %d, %v", len(all), err)
	}

	// Guarded transitions; repeating one that happened is fine.
	steps := []struct {
		from, to payment.Status
		wantErr  error
	}{
		{payment.StatusScheduled, payment.StatusAccepted, nil},
		{payment.StatusScheduled, payment.StatusAccepted, nil}, // retried activity
		{payment.StatusScheduled, payment.StatusRejected, payment.ErrWrongStatus},
		{payment.StatusAccepted, payment.StatusProcessing, nil},
		{payment.StatusAccepted, payment.StatusFailed, payment.ErrWrongStatus},
	}
	for _, st := range steps {
		if err := s.Transition(ctx, key, st.from, st.to, ""); !errors.Is(err, st.wantErr) {
			t.Fatalf("%s → %s: %v, want %v", st.from, st.to, err, st.wantErr)
		}
	}
	if p, _ := s.Get(ctx, key); p.Status != payment.StatusProcessing {
		t.Fatalf("status %s", p.Status)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}

	// A payment rejected for being invalid is kept without an amount.
	bad := validRequest(now)
	bad.PaymentID, bad.Amount = "pay-bad", "-5"
	if _, err := s.Record(ctx, bad, nil, payment.StatusRejected, "amount: must be greater than zero", nil); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Find(ctx, "acme", "pay-bad"); err != nil || p.Money != nil || p.Status != payment.StatusRejected || p.StatusReason == "" {
		t.Fatalf("rejected: %+v %v", p, err)
	}
}

// TestInitActivitiesRules: Phase A's enrichment and rules, and its
// validation of an empty request.
func TestInitActivitiesRules(t *testing.T) {
	t.Parallel()
	rules := payment.Rules{MaxAmount: decimal.RequireFromString("1000"), BlockedCountries: []string{"KP"}}
	r := validRequest(time.Now())
	e, err := payment.Enrich(r)
	if err != nil || e.CreditorCountry != "DE" || e.CreditorIBAN != "DE89370400440532013000" {
		t.Fatalf("enrich: %+v %v", e, err)
	}
	if _, err := rules.Apply(r, decimal.RequireFromString("125.00"), e); err != nil {
		t.Fatalf("rules on a fine payment: %v", err)
	}
	if _, err := rules.Apply(r, decimal.RequireFromString("1000.01"), e); err == nil {
		t.Fatal("amount over the limit passed")
	}
	if _, err := rules.Apply(r, decimal.RequireFromString("1"), payment.Enrichment{CreditorCountry: "KP"}); err == nil {
		t.Fatal("blocked country passed")
	}
	if _, err := payment.Validate(payment.Request{}, time.Now()); err == nil {
		t.Fatal("empty request validated")
	}
}

// TestInitChunkPaced: with PAYMENT paced, a chunk's payments are enqueued
// at their slots (no window over its limit, each at or after its requested
// time), marked paced; a retried chunk gets the same slots; with the
// rate-limit config gone, payments run at their requested time.
func TestInitChunkPaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	q := queue.New(pool)
	lim := pacing.New(pacing.Config{Pool: pool})
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "payments", MaxPerWindow: 10, Window: time.Second, Headroom: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
		t.Fatal(err)
	}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	chunk := make([]payment.Request, 25)
	for i := range chunk {
		chunk[i] = validRequest(time.Now())
		chunk[i].PaymentID = fmt.Sprintf("paced-%02d", i)
		chunk[i].RequestedExecutionTime = at
	}
	slots := func() map[string]time.Time {
		rows, err := pool.Query(ctx, `SELECT item_id, scheduled_exec_time FROM exec_queue WHERE paced`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]time.Time{}
		for rows.Next() {
			var id string
			var ts time.Time
			if err := rows.Scan(&id, &ts); err != nil {
				t.Fatal(err)
			}
			out[id] = ts
		}
		return out
	}
	if res, err := a.InitChunk(ctx, chunk, "init-chunk-1"); err != nil || res.Scheduled != 25 {
		t.Fatalf("chunk: %+v %v", res, err)
	}
	first := slots()
	perSecond := map[int64]int{}
	for id, ts := range first {
		if ts.Before(at) {
			t.Errorf("%s at %s, before its requested time", id, ts)
		}
		perSecond[ts.Unix()]++
	}
	if len(first) != 25 || len(perSecond) != 3 || perSecond[at.Unix()] != 10 || perSecond[at.Unix()+2] != 5 {
		t.Fatalf("%d paced items, per second %v; want 10, 10, 5", len(first), perSecond)
	}
	if _, err := a.InitChunk(ctx, chunk, "init-chunk-1"); err != nil {
		t.Fatal(err)
	}
	for id, ts := range slots() {
		if !ts.Equal(first[id]) {
			t.Fatalf("%s moved from %s to %s on a retry", id, first[id], ts)
		}
	}

	// The config deactivated: new payments run at their requested time.
	if _, err := lim.Deactivate(ctx, "payments"); err != nil {
		t.Fatal(err)
	}
	late := validRequest(time.Now())
	late.PaymentID, late.RequestedExecutionTime = "unpaced-1", at
	slot, err := a.ExecTime(ctx, late)
	if err != nil || slot.Paced || !slot.At.Equal(at) {
		t.Fatalf("with the config inactive: %+v %v", slot, err)
	}
}

// TestInitChunkPacedPerTenant: a tenant with its own rate-limit config is
// paced by it, the others by PAYMENT's, in one chunk; with the tenant's
// config inactive, its payments fall back to PAYMENT's, still paced.
func TestInitChunkPacedPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	q := queue.New(pool)
	lim := pacing.New(pacing.Config{Pool: pool})
	for _, c := range []pacing.Limit{
		{Name: "payments", MaxPerWindow: 10, Window: time.Second, Headroom: 10},
		{Name: "acme-rail", MaxPerWindow: 2, Window: time.Second, Headroom: 10},
	} {
		if _, err := lim.PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lim.SetTenantConfig(ctx, pacing.TenantConfig{ItemType: payment.ItemType, TenantID: "acme", ConfigName: "acme-rail"}); err != nil {
		t.Fatal(err)
	}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	var chunk []payment.Request
	for i := range 20 {
		r := validRequest(time.Now())
		r.PaymentID, r.RequestedExecutionTime = fmt.Sprintf("pt-%02d", i), at
		if i%2 == 1 {
			r.TenantID, r.DebtorAccount = "globex", "ACC-G"
		}
		chunk = append(chunk, r)
	}
	if res, err := a.InitChunk(ctx, chunk, "init-chunk-tenants"); err != nil || res.Scheduled != 20 {
		t.Fatalf("chunk: %+v %v", res, err)
	}
	// acme's 10 at 2 per second take 5 windows; globex's 10 fit in one.
	type key struct {
		cfg    string
		second int64
	}
	count := func() map[key]int {
		rows, err := pool.Query(ctx, `SELECT s.config_name, floor(extract(epoch FROM q.scheduled_exec_time))::bigint
			FROM pacing_slot s JOIN exec_queue q ON q.item_id = s.event_id WHERE q.paced`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[key]int{}
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.cfg, &k.second); err != nil {
				t.Fatal(err)
			}
			out[k]++
		}
		return out
	}
	want := map[key]int{{"payments", at.Unix()}: 10}
	for s := range int64(5) {
		want[key{"acme-rail", at.Unix() + s}] = 2
	}
	if got := count(); !reflect.DeepEqual(got, want) {
		t.Fatalf("slots per config and second: %v, want %v", got, want)
	}

	// acme's config switched off: its next payment is paced by PAYMENT's.
	if _, err := lim.Deactivate(ctx, "acme-rail"); err != nil {
		t.Fatal(err)
	}
	late := validRequest(time.Now())
	late.PaymentID, late.RequestedExecutionTime = "pt-late", at
	slot, err := a.ExecTime(ctx, late)
	if err != nil || !slot.Paced {
		t.Fatalf("with the tenant's config inactive: %+v %v", slot, err)
	}
	var cfg string
	if err := pool.QueryRow(ctx, `SELECT config_name FROM pacing_slot WHERE event_id = $1`, payment.Key("acme", "pt-late")).Scan(&cfg); err != nil || cfg != "payments" {
		t.Fatalf("fell back to %q (%v), want payments", cfg, err)
	}
}

// TestReceiveKeepsTheRequest: a payment received waits in its intake row,
// its request in columns, and read back as it was sent: its amount with its currency's
// minor units, its time the same instant. Sent again, written either
// way, it is the same payment; with anything changed it is a conflict.
func TestReceiveKeepsTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := payment.NewStore(newPool(t))
	berlin := time.FixedZone("CET", 3600)
	tests := []struct {
		name       string
		change     func(*payment.Request)
		wantAmount string
		same       func(*payment.Request) // written otherwise, the same payment
	}{
		{"as sent", func(*payment.Request) {}, "125.00", func(r *payment.Request) { r.Amount = "125" }},
		{"fewer decimals", func(r *payment.Request) { r.Amount = "1.5" }, "1.50", func(r *payment.Request) { r.Amount = "1.50" }},
		{"yen", func(r *payment.Request) { r.Amount, r.Currency = "1500", "JPY" }, "1500", func(r *payment.Request) {
			r.RequestedExecutionTime = r.RequestedExecutionTime.In(berlin)
		}},
		{"no BIC, no remittance", func(r *payment.Request) { r.Creditor.BIC, r.RemittanceInfo = "", "" }, "125.00", func(*payment.Request) {}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest(time.Now().Truncate(time.Second))
			r.PaymentID = fmt.Sprintf("kept-%d", i)
			tt.change(&r)
			wf := fmt.Sprintf("init-kept-%d", i)
			rcs, err := s.Receive(ctx, []payment.Request{r}, func(int) string { return wf }, false)
			if err != nil || !rcs[0].Fresh {
				t.Fatalf("receive: %+v %v", rcs, err)
			}
			got, err := payment.IntakeOf(ctx, s, wf)
			if err != nil || len(got) != 1 {
				t.Fatalf("read back: %+v %v", got, err)
			}
			want := r
			want.Amount = tt.wantAmount
			if at := got[0].RequestedExecutionTime; !at.Equal(r.RequestedExecutionTime) || at.Location() != time.UTC {
				t.Fatalf("time %v, sent %v; want the same instant in UTC", at, r.RequestedExecutionTime)
			}
			got[0].RequestedExecutionTime = want.RequestedExecutionTime
			if got[0] != want {
				t.Fatalf("read back %+v, want %+v", got[0], want)
			}
			same, changed := r, r
			tt.same(&same)
			changed.Creditor.Name += " Jr."
			rcs, err = s.Receive(ctx, []payment.Request{same, changed}, func(int) string { return wf }, false)
			if err != nil || rcs[0].Fresh || rcs[0].Conflict || !rcs[1].Conflict {
				t.Fatalf("sent again: %+v %v", rcs, err)
			}
		})
	}
}

// TestFinish: the execution's last statement records its ref and both
// notifications and moves ACCEPTED → PROCESSING; a payment the rail
// answered for keeps its status; any other status is refused and nothing
// is written.
func TestFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	s := payment.NewStore(pool)
	now := time.Now()
	for _, tt := range []struct {
		name    string
		path    []payment.Status // from SCHEDULED
		want    payment.Status
		wantErr error
	}{
		{"accepted", []payment.Status{payment.StatusAccepted}, payment.StatusProcessing, nil},
		{"processing already (a retried activity)", []payment.Status{payment.StatusAccepted, payment.StatusProcessing}, payment.StatusProcessing, nil},
		{"delivered before", []payment.Status{payment.StatusAccepted, payment.StatusDelivered}, payment.StatusDelivered, nil},
		{"returned before", []payment.Status{payment.StatusAccepted, payment.StatusReturned}, payment.StatusReturned, nil},
		{"scheduled", nil, payment.StatusScheduled, payment.ErrWrongStatus},
		{"failed", []payment.Status{payment.StatusFailed}, payment.StatusFailed, payment.ErrWrongStatus},
	} {
		r := validRequest(now)
		r.PaymentID = "pay-finish-" + strings.Fields(tt.name)[0]
		m, err := payment.Validate(r, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Record(ctx, r, &m, payment.StatusScheduled, "", &r.RequestedExecutionTime); err != nil {
			t.Fatal(err)
		}
		key := payment.Key(r.TenantID, r.PaymentID)
		from := payment.StatusScheduled
		for _, to := range tt.path {
			if err := s.Transition(ctx, key, from, to, ""); err != nil {
				t.Fatalf("%s: %s → %s: %v", tt.name, from, to, err)
			}
			from = to
		}
		for range 2 { // twice: the second changes nothing
			if err := s.Finish(ctx, key, "exec-1/run-1"); !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s: %v, want %v", tt.name, err, tt.wantErr)
			}
		}
		p, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var notes int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_notifications WHERE payment_id = $1 AND status = 'PROCESSING'`, key).Scan(&notes); err != nil {
			t.Fatal(err)
		}
		wantNotes, wantRef := 2, "exec-1/run-1"
		if tt.wantErr != nil {
			wantNotes, wantRef = 0, ""
		}
		if p.Status != tt.want || notes != wantNotes || p.ExecutionRef != wantRef {
			t.Errorf("%s: %s, %d notifications, ref %q; want %s, %d, %q", tt.name, p.Status, notes, p.ExecutionRef, tt.want, wantNotes, wantRef)
		}
	}
}

// TestReceiveConcurrently: sixteen callers take in the same 100 payments
// at once, half of them with payment 7 changed, half in the other order. Each payment is taken in
// once (one caller's receipt is fresh), the others are replays, or
// conflicts where they differ from the one taken in; Phase A, run on
// every intake row at once, stores each payment once, and verify finds
// every payment the one its id was claimed for.
func TestReceiveConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	s := payment.NewStore(pool)
	const callers, n = 16, 100
	at := time.Now().Truncate(time.Second)
	batch := func(changed bool) []payment.Request {
		rs := make([]payment.Request, n)
		for i := range rs {
			rs[i] = validRequest(at)
			rs[i].PaymentID = fmt.Sprintf("race-%03d", i)
		}
		if changed {
			rs[7].Amount = "7.00"
		}
		return rs
	}
	receipts := make([][]payment.Receipt, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := batch(c%2 == 1)
			if c%4 >= 2 { // in the file's other order
				slices.Reverse(rs)
			}
			rcs, err := s.Receive(ctx, rs, func(int) string { return fmt.Sprintf("init-race-%d", c) }, false)
			if err != nil {
				t.Error(err)
			}
			if c%4 >= 2 {
				slices.Reverse(rcs)
			}
			receipts[c] = rcs
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i := range n {
		winner := -1
		for c := range callers {
			if receipts[c][i].Fresh {
				if winner >= 0 {
					t.Fatalf("payment %d taken in by callers %d and %d", i, winner, c)
				}
				winner = c
			}
		}
		if winner < 0 {
			t.Fatalf("payment %d taken in by no caller", i)
		}
		for c := range callers {
			differs := i == 7 && c%2 != winner%2
			if c != winner && receipts[c][i].Conflict != differs {
				t.Fatalf("payment %d, caller %d: conflict %v, want %v (caller %d took it in)", i, c, receipts[c][i].Conflict, differs, winner)
			}
		}
	}
	var waiting int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(cardinality(payment_ids)), 0) FROM payment_intake`).Scan(&waiting); err != nil || waiting != n {
		t.Fatalf("%d payments waiting in intake rows (%v), want %d", waiting, err, n)
	}
	a := payment.NewInitActivities(payment.InitConfig{Store: s, Queue: queue.New(pool)})
	var scheduled atomic.Int64
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.InitIntake(ctx, fmt.Sprintf("init-race-%d", c))
			if err != nil {
				t.Error(err)
			}
			scheduled.Add(int64(res.Scheduled))
		}()
	}
	wg.Wait()
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'SCHEDULED'`).Scan(&stored); err != nil || stored != n || scheduled.Load() != n {
		t.Fatalf("%d payments stored SCHEDULED, Phase A answered %d (%v); want %d", stored, scheduled.Load(), err, n)
	}
	if v, err := payment.Verify(ctx, pool); err != nil || len(v) > 0 {
		t.Fatalf("verify: %v, %v", v, err)
	}
}
