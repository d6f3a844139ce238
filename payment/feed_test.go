package payment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// feed runs one feed up to dueBy (the first on a database sets the mark
// and writes nothing) and returns how many items it wrote.
func (f *railsFixture) feed(t *testing.T, dueBy time.Time) int {
	t.Helper()
	n, err := payment.NewFeeder(f.s.pool, f.s.queue).Feed(context.Background(), dueBy)
	if err != nil {
		t.Fatalf("feed to %s: %v", dueBy, err)
	}
	return n
}

// queueHoldsTheMark checks the feeder's rule and the items' agreement
// with their payments: every SCHEDULED payment not paused whose slot is
// before the mark has a READY item at its slot, and every READY item of
// a SCHEDULED payment is at its slot. It returns how many waiting
// payments have no item.
func (f *railsFixture) queueHoldsTheMark(t *testing.T) int {
	t.Helper()
	var missing, astray, unqueued int
	if err := f.s.pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE q.item_id IS NULL AND p.scheduled_execution_time < m.mark),
		       count(*) FILTER (WHERE q.queue_status = 'READY' AND q.scheduled_exec_time <> p.scheduled_execution_time),
		       count(*) FILTER (WHERE q.item_id IS NULL)
		FROM payments p CROSS JOIN payment_queue_mark m
		LEFT JOIN exec_queue q ON q.item_type = $1 AND q.item_id = p.payment_id
		WHERE p.status = 'SCHEDULED' AND p.paused_by IS NULL`, payment.ItemType).Scan(&missing, &astray, &unqueued); err != nil {
		t.Fatal(err)
	}
	if missing > 0 || astray > 0 {
		t.Errorf("%d waiting payments before the mark without queue items, %d items not at their payments' slots", missing, astray)
	}
	return unqueued
}

// TestFeederWritesItemsAsSlotsComeNear: with the mark before a file's
// slots, Phase A stores its 300 payments (10 a second: 30 s of slots)
// without queue items; each feed writes the items of the slots before
// its time, once, at their slots, audited; a feed to a time before the
// mark writes nothing; and with no mark (no feeder yet) Phase A enqueues
// every payment.
func TestFeederWritesItemsAsSlotsComeNear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	if res, err := f.s.init.InitChunk(ctx, railPayments("beta", 10, at.Add(-time.Hour)), "init-early"); err != nil || res.Scheduled != 10 {
		t.Fatalf("Phase A before any feed: %+v, %v", res, err)
	}
	if n := f.queueHoldsTheMark(t); n != 0 {
		t.Fatalf("no mark yet: %d payments unqueued", n)
	}
	if n := f.feed(t, at.Add(-time.Minute)); n != 0 {
		t.Fatalf("the first feed wrote %d items", n)
	}
	if res, err := f.s.init.InitChunk(ctx, railPayments("acme", 300, at), "init-acme"); err != nil || res.Scheduled != 300 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	if n := f.queueHoldsTheMark(t); n != 300 {
		t.Fatalf("after Phase A: %d payments unqueued, want 300", n)
	}
	// The items a feed writes are those of the slots from the mark to its
	// time: 10 a second, spread within each second.
	slotsFrom := func(from, to time.Time) int {
		var n int
		if err := f.s.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE tenant_id = 'acme'
			AND scheduled_execution_time >= $1 AND scheduled_execution_time < $2`, from, to).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	mark := at.Add(-time.Minute)
	for _, dueBy := range []time.Duration{-time.Hour, 10 * time.Second, 10 * time.Second, 20*time.Second + 50*time.Millisecond, time.Hour} {
		want := slotsFrom(mark, at.Add(dueBy))
		if n := f.feed(t, at.Add(dueBy)); n != want {
			t.Errorf("feed to the instant %+v: %d items, want %d", dueBy, n, want)
		}
		mark = later(mark, at.Add(dueBy))
		if n, want := f.queueHoldsTheMark(t), slotsFrom(mark, at.Add(24*time.Hour)); n != want {
			t.Errorf("fed to the instant %+v: %d payments unqueued, want those after the mark, %d", dueBy, n, want)
		}
	}
	if n := slotsFrom(at, at.Add(10*time.Second)); n != 100 {
		t.Errorf("%d slots in the first 10 s, want 100", n)
	}
	var audited int
	if err := f.s.pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_audit_log
		WHERE item_type = $1 AND action = 'ENQUEUED' AND status_after = 'READY' AND item_id IN (SELECT payment_id FROM payments WHERE tenant_id = 'acme')`, payment.ItemType).Scan(&audited); err != nil || audited != 300 {
		t.Errorf("%d ENQUEUED audit entries, want 300 (%v)", audited, err)
	}
	f.windowsWithin(t, 10)
}

// TestLeversMovePaymentsWithoutItems: a limit raised, then lowered, and a
// tenant paused and resumed, with the queue's mark before, among and
// after a file's slots: the payments without queue items move as those
// with them do (none counted as claimed), those given slots before the
// mark get their items, a pause holds them all and gives their slots
// back, and every window stays within its limit.
func TestLeversMovePaymentsWithoutItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mark time.Duration // after the instant
	}{{"before the slots", -time.Hour}, {"among them", 15 * time.Second}, {"after them", time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newRailsFixture(t)
			at := f.at(0, 10*time.Hour)
			f.feed(t, at.Add(tc.mark))
			acme, gamma := railPayments("acme", 200, at), railPayments("gamma", 100, at)
			for tenant, rs := range map[string][]payment.Request{"acme": acme, "gamma": gamma} {
				if res, err := f.s.init.InitChunk(ctx, rs, "init-"+tenant); err != nil || res.Scheduled != len(rs) {
					t.Fatalf("Phase A %s: %+v, %v", tenant, res, err)
				}
			}
			f.queueHoldsTheMark(t)
			svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
			for _, max := range []int{20, 5} {
				if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "sepa", MaxPerWindow: max, Window: time.Second, Headroom: 100}); err != nil {
					t.Fatal(err)
				}
				res, err := svc.Repace(ctx, payment.WaitingFilter{Rails: []string{"SEPA"}}, nil)
				if err != nil || res.Moved != 300 || res.Claimed != 0 {
					t.Fatalf("max %d: %+v, %v", max, res, err)
				}
				f.queueHoldsTheMark(t)
				f.windowsWithin(t, max)
			}
			paused, err := svc.Pause(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, nil)
			if err != nil || paused.Payments != 200 || paused.Parked != 200 || paused.Repaced.Moved != 100 {
				t.Fatalf("pause: %+v, %v", paused, err)
			}
			f.queueHoldsTheMark(t)
			for _, r := range gamma {
				p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
				if !p.ScheduledExecutionTime.Before(at.Add(20 * time.Second)) {
					t.Fatalf("gamma's %s at %s: behind acme's paused payments", r.PaymentID, p.ScheduledExecutionTime)
				}
			}
			resumed, err := svc.Resume(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, nil)
			if err != nil || resumed.Moved != 200 {
				t.Fatalf("resume: %+v, %v", resumed, err)
			}
			f.queueHoldsTheMark(t)
			f.windowsWithin(t, 5)
			f.feed(t, at.Add(24*time.Hour))
			if n := f.queueHoldsTheMark(t); n != 0 {
				t.Errorf("fed to the next day: %d payments unqueued", n)
			}
			if errs, err := payment.Verify(ctx, f.s.pool); err != nil || len(errs) > 0 {
				t.Errorf("verify: %v %v", errs, err)
			}
		})
	}
}

// TestFeederRacesPhaseAAndLevers: eight Phase A chunks, a feeder moving
// its mark through their slots a second at a time and a lever moving
// them all, at once: the feeder's rule holds at every feed and at the
// end, each payment has one item at its slot once fed past them all, and
// no window is over its limit.
func TestFeederRacesPhaseAAndLevers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	f.feed(t, at)
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for c := range 8 {
		wg.Go(func() {
			rs := railPayments("acme", 60, at)
			for i := range rs {
				rs[i].PaymentID = fmt.Sprintf("c%d-%03d", c, i)
			}
			if res, err := f.s.init.InitChunk(ctx, rs, fmt.Sprintf("init-%d", c)); err != nil || res.Scheduled != 60 {
				errs <- fmt.Errorf("chunk %d: %+v, %v", c, res, err)
			}
		})
	}
	wg.Go(func() {
		for s := range 60 {
			if _, err := payment.NewFeeder(f.s.pool, f.s.queue).Feed(ctx, at.Add(time.Duration(s)*time.Second)); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range 3 {
			if _, err := svc.Repace(ctx, payment.WaitingFilter{Rails: []string{"SEPA"}}, nil); err != nil {
				errs <- fmt.Errorf("repace: %w", err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f.queueHoldsTheMark(t)
	f.feed(t, at.Add(time.Hour))
	if n := f.queueHoldsTheMark(t); n != 0 {
		t.Errorf("fed past every slot: %d payments unqueued", n)
	}
	var items int
	if err := f.s.pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE item_type = $1 AND queue_status = 'READY'`, payment.ItemType).Scan(&items); err != nil || items != 480 {
		t.Errorf("%d READY items, want 480 (%v)", items, err)
	}
	f.windowsWithin(t, 10)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestFeederQueryUsesTheIndex: on 200,000 payments, most waiting over a
// day on three rails and some without a rail, the feeder's look for a
// minute's slots walks payments_rail_waiting_idx, a rail at a time, and
// finds them all.
func TestFeederQueryUsesTheIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	day := time.Date(2031, 3, 5, 0, 0, 0, 0, time.UTC)
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, scheduled_execution_time, status, request, context, rail)
		SELECT 'k-' || g, 'p-' || g, 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', $1::timestamptz,
		       $1::timestamptz + (g * interval '400 ms'), CASE WHEN g % 10 = 0 THEN 'DELIVERED' ELSE 'SCHEDULED' END,
		       '{}', '{"pacingConfig":"sepa"}', CASE WHEN g % 20 = 1 THEN NULL ELSE (ARRAY['SEPA', 'INSTANT', 'SWIFT'])[g % 3 + 1] END
		FROM generate_series(1, 200000) g`, day); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE payments`); err != nil {
		t.Fatal(err)
	}
	from := day.Add(10 * time.Hour)
	var n int
	plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) (err error) {
		n, err = payment.WaitingBetweenOf(ctx, payment.NewStore(tx), from, from.Add(time.Minute))
		return err
	})
	if testing.Verbose() {
		t.Logf("%s", plan)
	}
	// A rail's range of the index each ("rail = r.rail" in its
	// condition), not the whole index filtered by time.
	if !strings.Contains(plan, "Index Cond: ((rail = r.rail) AND (scheduled_execution_time >=") || strings.Contains(plan, "Seq Scan on payments") {
		t.Errorf("no walk of payments_rail_waiting_idx a rail at a time in\n%s", plan)
	}
	if n != 135 { // 150 slots in the minute, a tenth of them DELIVERED
		t.Errorf("%d payments found, want 135", n)
	}
}
