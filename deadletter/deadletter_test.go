package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

// TestList: both sources merged, oldest death first, every filter, and
// pages that neither skip nor repeat a letter.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pgtest.NewPool(t))
	f.kill(t, "acme", "engine unavailable", 5)
	f.kill(t, "beta", "start refused: boom", 3)
	// Two outbox dead letters (a rail's refusals), dead now.
	for i, code := range []string{"AC04", "AM04"} {
		if _, err := f.pool.Exec(ctx, `INSERT INTO payment_outbox_dead_letters (outbox_id, instruction_id, participant_id, sequence_id,
			idempotency_key, rail_type, payload, attempt_count, enqueued_at, strict, error_code, rail_code, error_message)
			VALUES ($1, $2, 'acme', $3, $2, 'SEPA_JSON', '{}', 1, now(), false, 'RAIL_TERMINAL', $4, 'refused')`,
			uuid.New(), fmt.Sprintf("pay-%d", i), i+1, code); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter deadletter.Filter
		want   int
	}{
		{"all", deadletter.Filter{}, 10},
		{"dispatch", deadletter.Filter{Source: deadletter.SourceDispatch}, 8},
		{"outbox", deadletter.Filter{Source: deadletter.SourceOutbox}, 2},
		{"tenant", deadletter.Filter{TenantID: "acme"}, 7},
		{"reason any case", deadletter.Filter{Reason: "ENGINE"}, 5},
		{"rail code", deadletter.Filter{Reason: "am04"}, 1},
		{"item type", deadletter.Filter{ItemType: "SEPA_JSON"}, 2},
		{"died later", deadletter.Filter{DiedFrom: time.Now().Add(time.Hour)}, 0},
		{"died before", deadletter.Filter{DiedTo: time.Now().Add(time.Hour)}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []deadletter.Letter
			var after *deadletter.Position
			for pages := 0; ; pages++ {
				p, err := f.svc.List(ctx, tt.filter, after, 3)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Letters...)
				if p.Next == nil {
					break
				}
				if pages > 10 {
					t.Fatal("the pages do not end")
				}
				// The cursor survives its text form.
				pos, ok := deadletter.ParsePosition(p.Next.String())
				if !ok {
					t.Fatalf("position %q does not parse", p.Next.String())
				}
				after = &pos
			}
			if len(got) != tt.want {
				t.Fatalf("%d letters, want %d: %+v", len(got), tt.want, got)
			}
			seen := map[string]bool{}
			for i, l := range got {
				if seen[l.ID] {
					t.Fatalf("%s listed twice", l.ID)
				}
				seen[l.ID] = true
				if i > 0 && l.DiedAt.Before(got[i-1].DiedAt) {
					t.Fatalf("%s died before the letter listed ahead of it", l.ID)
				}
			}
		})
	}
}

// TestRequeueByID: the items named go back READY at slots of the config
// named, paced, their retries anew, each with a REQUEUE audit row; a
// request naming one that is no longer dead changes nothing.
func TestRequeueByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pgtest.NewPool(t))
	ids := f.kill(t, "acme", "engine unavailable", 4)
	if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "trickle", MaxPerWindow: 1, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	letter := func(id string) string { return "dispatch:JOB:" + id }
	var told []string
	f.svc = deadletter.New(deadletter.Config{DB: f.pool, Queue: f.q, Limiter: f.lim, OutboxItemType: "JOB",
		OnRequeue: map[string]func(context.Context, pgx.Tx, []string, string) error{
			"JOB": func(_ context.Context, _ pgx.Tx, ids []string, config string) error {
				for _, id := range ids {
					told = append(told, id+"@"+config)
				}
				return nil
			}}})
	before := time.Now()
	res, err := f.svc.Requeue(ctx, deadletter.Request{IDs: []string{letter(ids[0]), letter(ids[1])}, Config: "trickle", Reason: "engine back"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requeued != 2 || !slices.Equal(res.Configs, []string{"trickle"}) {
		t.Fatalf("result %+v", res)
	}
	slices.Sort(told)
	want := []string{ids[0] + "@trickle", ids[1] + "@trickle"}
	slices.Sort(want)
	if !slices.Equal(told, want) {
		t.Fatalf("the item type's hook was told %v, want %v", told, want)
	}
	var slots []time.Time
	for _, id := range ids[:2] {
		it, err := f.q.Get(ctx, "JOB", id)
		if err != nil {
			t.Fatal(err)
		}
		if it.Status != queue.StatusReady || !it.Paced || it.RetryCount != 0 || it.ScheduledExecTime.Before(before.Truncate(time.Second)) {
			t.Fatalf("requeued item %+v", it)
		}
		slots = append(slots, it.ScheduledExecTime)
	}
	// One a second: the two are a window apart.
	if d := slots[1].Sub(slots[0]).Abs(); d < 500*time.Millisecond {
		t.Fatalf("slots %v: %s apart, want a window (1 s)", slots, d)
	}
	var audits int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_audit_log WHERE action = 'REQUEUE' AND detail LIKE '%engine back'`).Scan(&audits); err != nil || audits != 2 {
		t.Fatalf("%d REQUEUE audit rows (%v), want 2", audits, err)
	}

	// ids[0] is READY now: a request naming it and a dead one moves neither.
	_, err = f.svc.Requeue(ctx, deadletter.Request{IDs: []string{letter(ids[0]), letter(ids[2])}, Config: "trickle"})
	var nd *deadletter.NotDeadError
	if !errors.As(err, &nd) || len(nd.Why) != 1 || nd.Why[letter(ids[0])] == "" {
		t.Fatalf("requeue of a READY item: %v, want ErrNotDead naming it", err)
	}
	if it, _ := f.q.Get(ctx, "JOB", ids[2]); it.Status != queue.StatusDeadLetter {
		t.Fatalf("the dead item of a refused request is %s", it.Status)
	}

	// The item type's own config when none is named.
	res, err = f.svc.Requeue(ctx, deadletter.Request{IDs: []string{letter(ids[2])}})
	if err != nil || !slices.Equal(res.Configs, []string{"own"}) {
		t.Fatalf("requeue under the type's own config: %+v, %v", res, err)
	}
}

// TestRequeueRefusals: what the caller got wrong changes nothing and
// says what.
func TestRequeueRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pgtest.NewPool(t))
	ids := f.kill(t, "acme", "boom", 1)
	letter := "dispatch:JOB:" + ids[0]
	tests := []struct {
		name string
		req  deadletter.Request
		want error
	}{
		{"nothing named", deadletter.Request{}, deadletter.ErrInvalid},
		{"ids and filter", deadletter.Request{IDs: []string{letter}, Filter: &deadletter.Filter{}}, deadletter.ErrInvalid},
		{"malformed id", deadletter.Request{IDs: []string{"queue:1"}}, deadletter.ErrInvalid},
		{"bad outbox id", deadletter.Request{IDs: []string{"outbox:not-a-uuid"}}, deadletter.ErrInvalid},
		{"twice", deadletter.Request{IDs: []string{letter, letter}}, deadletter.ErrInvalid},
		{"bad source", deadletter.Request{Filter: &deadletter.Filter{Source: "inbox"}}, deadletter.ErrInvalid},
		{"no such config", deadletter.Request{IDs: []string{letter}, Config: "nope"}, deadletter.ErrNoConfig},
		{"no such item", deadletter.Request{IDs: []string{"dispatch:JOB:ghost"}}, deadletter.ErrNotDead},
		{"no such outbox letter", deadletter.Request{IDs: []string{"outbox:" + uuid.NewString()}}, deadletter.ErrNotDead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.svc.Requeue(ctx, tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("%v, want %v", err, tt.want)
			}
		})
	}
	if it, _ := f.q.Get(ctx, "JOB", ids[0]); it.Status != queue.StatusDeadLetter {
		t.Fatalf("after refused requeues the item is %s", it.Status)
	}
}

// TestConcurrentRequeuesKeepTheLimit: operators requeueing overlapping
// filters at once move each item once, and the slots they give never
// put more than the config's limit in one window.
func TestConcurrentRequeuesKeepTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pgtest.NewPool(t))
	const perWindow = 25
	if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "redrive", MaxPerWindow: perWindow, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	tenants := []string{"a", "b", "c", "d"}
	total := 0
	for _, tn := range tenants {
		total += len(f.kill(t, tn, "engine unavailable", 60))
	}
	filters := []deadletter.Filter{{}, {TenantID: "a"}, {TenantID: "b"}, {Reason: "engine"}, {}, {TenantID: "c"}, {TenantID: "d"}, {}}
	var wg sync.WaitGroup
	moved := make([]int, len(filters))
	errs := make([]error, len(filters))
	for i, fl := range filters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.svc.Requeue(ctx, deadletter.Request{Filter: &fl, Config: "redrive"})
			moved[i], errs[i] = res.Requeued, err
		}()
	}
	wg.Wait()
	sum := 0
	for i := range filters {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		sum += moved[i]
	}
	if sum != total {
		t.Fatalf("requeued %d in all, want each of %d once", sum, total)
	}
	rows, err := f.pool.Query(ctx, `SELECT date_trunc('second', scheduled_exec_time), count(*) FROM exec_queue
		WHERE item_type = 'JOB' GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ready := 0
	for rows.Next() {
		var sec time.Time
		var n int
		if err := rows.Scan(&sec, &n); err != nil {
			t.Fatal(err)
		}
		if n > perWindow {
			t.Fatalf("%d items in the second from %s, over the limit of %d", n, sec, perWindow)
		}
		ready += n
	}
	if ready != total {
		t.Fatalf("%d items, want %d", ready, total)
	}
	var dead int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE queue_status <> 'READY'`).Scan(&dead); err != nil || dead != 0 {
		t.Fatalf("%d items not READY (%v)", dead, err)
	}
}

// TestRequeueRecordsEachTransaction: a requeue's Record runs inside each
// transaction that moves letters, with what that one moved: a filter's
// 1,001 letters are two transactions, two records. A Record that fails
// rolls its transaction back and stops the requeue; what committed
// before stays requeued, with its record.
func TestRequeueRecordsEachTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, pgtest.NewPool(t))
	if _, err := f.pool.Exec(ctx, `CREATE TABLE requeue_record (requeued int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	f.kill(t, "acme", "engine unavailable", 1001)
	fail := errors.New("the audit log is full")
	var calls []int
	record := func(failAt int) func(context.Context, pgx.Tx, deadletter.Result) error {
		return func(ctx context.Context, tx pgx.Tx, page deadletter.Result) error {
			calls = append(calls, page.Requeued)
			if len(page.Configs) != 1 || page.Configs[0] != "own" || page.FirstSlot.IsZero() {
				t.Errorf("page %+v", page)
			}
			if len(calls) == failAt {
				return fail
			}
			_, err := tx.Exec(ctx, `INSERT INTO requeue_record VALUES ($1)`, page.Requeued)
			return err
		}
	}
	dead := func() int {
		t.Helper()
		var n int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE item_type = 'JOB' AND queue_status = 'DEAD_LETTER'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	recorded := func() string {
		t.Helper()
		var s string
		if err := f.pool.QueryRow(ctx, `SELECT coalesce(string_agg(requeued::text, ',' ORDER BY requeued DESC), '') FROM requeue_record`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	res, err := f.svc.Requeue(ctx, deadletter.Request{Filter: &deadletter.Filter{}, Record: record(2)})
	if !errors.Is(err, fail) || res.Requeued != 1000 || dead() != 1 || recorded() != "1000" {
		t.Fatalf("the second record failed: requeued %d, %v; %d still dead, recorded %q; want 1000, 1 dead, recorded 1000", res.Requeued, err, dead(), recorded())
	}
	calls = nil
	res, err = f.svc.Requeue(ctx, deadletter.Request{Filter: &deadletter.Filter{}, Record: record(0)})
	if err != nil || res.Requeued != 1 || dead() != 0 || recorded() != "1000,1" || len(calls) != 1 {
		t.Fatalf("the rest: requeued %d, %v; %d dead, recorded %q, %d calls", res.Requeued, err, dead(), recorded(), len(calls))
	}
	// By ids: one transaction, one record; a failing one moves nothing.
	more := f.kill(t, "acme", "engine unavailable", 2)
	letters := []string{"dispatch:JOB:" + more[0], "dispatch:JOB:" + more[1]}
	calls = nil
	if _, err := f.svc.Requeue(ctx, deadletter.Request{IDs: letters, Record: record(1)}); !errors.Is(err, fail) || dead() != 2 {
		t.Fatalf("by ids, the record failed: %v, %d dead", err, dead())
	}
}
