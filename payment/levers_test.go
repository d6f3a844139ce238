package payment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// TestRepaceFollowsTheLimit: 300 payments waiting at 10 a second follow
// their rail's limit when it changes: lowered to 5, raised to 20, each
// time in their order, every window within the limit in force, and the
// payments' scheduled times and their queue items' in agreement.
func TestRepaceFollowsTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	rs := railPayments("acme", 300, at)
	if res, err := f.s.init.InitChunk(ctx, rs, "init-acme"); err != nil || res.Scheduled != 300 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	for _, tc := range []struct {
		max  int
		span time.Duration
	}{{5, 60 * time.Second}, {20, 15 * time.Second}} {
		if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "sepa", MaxPerWindow: tc.max, Window: time.Second, Headroom: 100}); err != nil {
			t.Fatal(err)
		}
		res, err := svc.Repace(ctx, payment.WaitingFilter{Rails: []string{"SEPA"}}, nil)
		if err != nil || res.Moved != 300 || res.Claimed != 0 || res.FirstSlot == nil {
			t.Fatalf("max %d: %+v, %v", tc.max, res, err)
		}
		if got := res.LastSlot.Sub(at); got < tc.span-time.Second || got > tc.span {
			t.Errorf("max %d: the last slot %v after the instant, want within %v", tc.max, got, tc.span)
		}
		var prev time.Time
		for _, r := range rs {
			p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			it, err := queue.New(f.s.pool).Get(ctx, payment.ItemType, p.Key)
			if err != nil || it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) {
				t.Fatalf("max %d: %s at %s, its item %+v %v", tc.max, r.PaymentID, p.ScheduledExecutionTime, it, err)
			}
			if p.ScheduledExecutionTime.Before(prev) || p.ScheduledExecutionTime.Before(at) {
				t.Fatalf("max %d: %s at %s, after one at %s (the instant %s)", tc.max, r.PaymentID, p.ScheduledExecutionTime, prev, at)
			}
			prev = *p.ScheduledExecutionTime
		}
		f.windowsWithin(t, tc.max)
	}
}

// TestRepacePastTheCutoff: a limit lowered at 15:59 leaves room for fewer
// of the waiting payments before the 16:00 cut-off: those past it meet
// their tenants' rules (acme's roll to the next business day, beta's are
// held, gamma's rejected, their queue items parked and completed), and no
// money moves.
func TestRepacePastTheCutoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 15*time.Hour+59*time.Minute)
	var rs []payment.Request
	for _, tenant := range []string{"acme", "beta", "gamma"} {
		rs = append(rs, railPayments(tenant, 100, at)...)
	}
	if res, err := f.s.init.InitChunk(ctx, rs, "init-all"); err != nil || res.Scheduled != 300 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "sepa", MaxPerWindow: 2, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	records := 0
	res, err := svc.Repace(ctx, payment.WaitingFilter{Rails: []string{"SEPA"}}, func(context.Context, pgx.Tx, int) error { records++; return nil })
	// 58 s before the guard at 2 a second: 116 make it, acme's 100 first.
	if err != nil || res.Moved != 116 || res.Rolled != 0 || res.Held != 84 || res.Rejected != 100 || records != 1 {
		t.Fatalf("%+v, %v (%d records)", res, err, records)
	}
	count := map[string]int{}
	for _, r := range rs {
		p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		it, _ := queue.New(f.s.pool).Get(ctx, payment.ItemType, p.Key)
		count[fmt.Sprintf("%s %s %s", r.TenantID, p.Status, it.Status)]++
	}
	want := map[string]int{"acme SCHEDULED READY": 100, "beta SCHEDULED READY": 16, "beta HELD PARKED": 84, "gamma REJECTED COMPLETED": 100}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("%v, want %v", count, want)
	}
	if errs, err := payment.Verify(ctx, f.s.pool); err != nil || len(errs) > 0 {
		t.Errorf("verify: %v %v", errs, err)
	}
}

// TestPauseAndResume: a tenant paused: its waiting payments stay
// SCHEDULED in their order, their items parked and their slots free for
// the others, those waiting behind them moving up; those that come while it is paused wait too, unqueued; an
// execution not begun parks its item. Resumed, they are paced again at
// the rate, in their order, the late-comers after, never a window over.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	first := railPayments("acme", 100, at)
	if res, err := f.s.init.InitChunk(ctx, first, "init-acme-1"); err != nil || res.Scheduled != 100 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	// gamma's file waits behind acme's.
	gammas := railPayments("gamma", 30, at)
	if res, err := f.s.init.InitChunk(ctx, gammas, "init-gamma"); err != nil || res.Scheduled != 30 {
		t.Fatalf("gamma: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	paused, err := svc.Pause(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, nil)
	if err != nil || paused.Payments != 100 || paused.Parked != 100 || paused.Repaced.Moved != 30 {
		t.Fatalf("pause: %+v, %v", paused, err)
	}
	// gamma's move up into the places acme's gave back; beta's file for
	// the same instant takes the next ones.
	beta := railPayments("beta", 50, at)
	if res, err := f.s.init.InitChunk(ctx, beta, "init-beta"); err != nil || res.Scheduled != 50 {
		t.Fatalf("beta: %+v, %v", res, err)
	}
	for _, r := range gammas {
		p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if !p.ScheduledExecutionTime.Before(at.Add(4 * time.Second)) {
			t.Errorf("gamma's %s at %s: behind acme's paused payments", r.PaymentID, p.ScheduledExecutionTime)
		}
	}
	late := railPayments("acme", 20, at)
	for i := range late {
		late[i].PaymentID = fmt.Sprintf("late-%d", i)
	}
	if res, err := f.s.init.InitChunk(ctx, late, "init-acme-2"); err != nil || res.Scheduled != 20 {
		t.Fatalf("acme while paused: %+v, %v", res, err)
	}
	q := queue.New(f.s.pool)
	for _, r := range append(first[:1:1], late[0]) {
		p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		it, err := q.Get(ctx, payment.ItemType, p.Key)
		if p.Status != payment.StatusScheduled || (err == nil && it.Status != queue.StatusParked) {
			t.Errorf("%s while paused: %s, item %+v %v", r.PaymentID, p.Status, it, err)
		}
	}
	for _, r := range beta {
		p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if !p.ScheduledExecutionTime.Before(at.Add(9 * time.Second)) {
			t.Errorf("beta's %s at %s: behind acme's paused payments", r.PaymentID, p.ScheduledExecutionTime)
		}
	}
	if _, err := svc.Resume(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "beta"}, nil); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("resume a scope not paused: %v", err)
	}
	res, err := svc.Resume(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, nil)
	if err != nil || res.Moved != 120 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	var prev time.Time
	for _, r := range append(first, late...) {
		p, _ := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		it, err := q.Get(ctx, payment.ItemType, p.Key)
		if err != nil || it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) || p.ScheduledExecutionTime.Before(prev) {
			t.Fatalf("%s resumed: %s at %s (after %s), item %+v %v", r.PaymentID, p.Status, p.ScheduledExecutionTime, prev, it, err)
		}
		prev = *p.ScheduledExecutionTime
	}
	f.windowsWithin(t, 10)
	if ps, err := svc.Pauses(ctx); err != nil || len(ps) != 0 {
		t.Errorf("pauses after the resume: %+v, %v", ps, err)
	}
}

// TestHighPaymentsGoFirst: 100 NORMAL payments wait at 10 a second; 20
// HIGH ones sent after them for the same instant are put ahead of them
// (Phase A asks, Reorder moves them once the file is quiet), the NORMAL
// ones keeping their order behind; a NORMAL one raised to HIGH joins
// them, one lowered to LOW goes last; every window within the limit.
// A payment no longer waiting is refused, an unknown one not found.
func TestHighPaymentsGoFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	normal := railPayments("acme", 100, at)
	if res, err := f.s.init.InitChunk(ctx, normal, "init-acme-1"); err != nil || res.Scheduled != 100 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	high := railPayments("beta", 20, at)
	for i := range high {
		high[i].Priority = payment.PriorityHigh
	}
	if res, err := f.s.init.InitChunk(ctx, high, "init-beta-1"); err != nil || res.Scheduled != 20 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	if res, err := svc.Reorder(ctx); err != nil || res.Moved != 0 {
		t.Fatalf("a reorder before the file is quiet: %+v, %v", res, err)
	}
	time.Sleep(700 * time.Millisecond) // the file's quiet time (reorderQuiet)
	res, err := svc.Reorder(ctx)
	if err != nil || res.Moved != 120 {
		t.Fatalf("reorder: %+v, %v", res, err)
	}
	if res, err := svc.Reorder(ctx); err != nil || res.Moved != 0 {
		t.Fatalf("a second reorder: %+v, %v", res, err)
	}
	raised, err := svc.SetPriority(ctx, "acme", "acme-050", payment.PriorityHigh, nil)
	if err != nil || raised.Changed != 1 || raised.Repaced.Moved != 120 {
		t.Fatalf("raise: %+v, %v", raised, err)
	}
	lowered, err := svc.SetPriority(ctx, "acme", "acme-000", payment.PriorityLow, nil)
	if err != nil || lowered.Changed != 1 {
		t.Fatalf("lower: %+v, %v", lowered, err)
	}
	order := make([]payment.Request, 0, 120)
	order = append(order, normal[50])
	order = append(order, high...)
	order = append(order, normal[1:50]...)
	order = append(order, normal[51:]...)
	order = append(order, normal[0])
	var prev time.Time
	for _, r := range order {
		p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		it, err := queue.New(f.s.pool).Get(ctx, payment.ItemType, p.Key)
		if err != nil || !it.ScheduledExecTime.Equal(*p.ScheduledExecutionTime) || !p.ScheduledExecutionTime.After(prev) {
			t.Fatalf("%s (%s) at %s, after %s; item %+v %v", r.PaymentID, p.Priority, p.ScheduledExecutionTime, prev, it, err)
		}
		prev = *p.ScheduledExecutionTime
	}
	f.windowsWithin(t, 10)
	page, err := svc.List(ctx, payment.ListFilter{TenantID: "acme", Priority: payment.PriorityHigh}, "", 10)
	if err != nil || len(page.Payments) != 1 || page.Payments[0].PaymentID != "acme-050" || page.Payments[0].Priority != payment.PriorityHigh {
		t.Errorf("acme's HIGH payments: %+v, %v", page, err)
	}
	if _, err := svc.SetPriority(ctx, "acme", "nobody", payment.PriorityHigh, nil); !errors.Is(err, payment.ErrNotFound) {
		t.Errorf("an unknown payment: %v", err)
	}
	if _, _, err := svc.Cancel(ctx, "acme", "acme-001", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetPriority(ctx, "acme", "acme-001", payment.PriorityHigh, nil); !errors.Is(err, payment.ErrNotWaiting) {
		t.Errorf("a cancelled payment: %v", err)
	}
	var invalid *field.Invalid
	if _, err := svc.SetPriority(ctx, "acme", "acme-002", "URGENT", nil); !errors.As(err, &invalid) {
		t.Errorf("an unknown priority: %v", err)
	}
}

// TestResumeLeavesClaimedItemsToTheirExecutions: items claimed before a
// pause keep their slots through the pause and its resume (their
// executions run at them, or park); one whose execution parked it after
// the resume is paced by SettleResumed, the others left as they are.
func TestResumeLeavesClaimedItemsToTheirExecutions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 10*time.Hour)
	rs := railPayments("acme", 50, at)
	if res, err := f.s.init.InitChunk(ctx, rs, "init-acme"); err != nil || res.Scheduled != 50 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	q := queue.New(f.s.pool)
	claimed, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: payment.ItemType, BatchSize: 3, PreStartBuffer: 60 * 24 * time.Hour, MaxRetries: 3})
	if err != nil || len(claimed.Items) != 3 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	scope := payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}
	if p, err := svc.Pause(ctx, scope, nil); err != nil || p.Payments != 50 || p.Parked != 47 {
		t.Fatalf("pause: %+v, %v", p, err)
	}
	res, err := svc.Resume(ctx, scope, nil)
	if err != nil || res.Moved != 47 || res.Claimed != 3 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	// The first execution read the pause before the resume: it parks.
	first := claimed.Items[0]
	if _, err := q.Defer(ctx, payment.ItemType, claimed.ID, []queue.Deferral{{ItemID: first.ID}}); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.SettleResumed(ctx); err != nil || n != 1 {
		t.Fatalf("settle: %d, %v", n, err)
	}
	it, err := q.Get(ctx, payment.ItemType, first.ID)
	if err != nil || it.Status != queue.StatusReady || !it.ScheduledExecTime.After(first.ScheduledExecTime) {
		t.Errorf("the parked one: %+v, %v (claimed at %s)", it, err, first.ScheduledExecTime)
	}
	for _, c := range claimed.Items[1:] {
		it, err := q.Get(ctx, payment.ItemType, c.ID)
		if err != nil || it.Status != queue.StatusClaimed || !it.ScheduledExecTime.Equal(c.ScheduledExecTime) {
			t.Errorf("%s: %+v, %v", c.ID, it, err)
		}
	}
	if n, err := svc.SettleResumed(ctx); err != nil || n != 0 {
		t.Errorf("settle again: %d, %v", n, err)
	}
	f.windowsWithin(t, 10)
}

// TestResumePastTheCutoff: payments paused before their rail's 16:00
// cut-off and resumed after it meet their tenants' rules at the resume:
// acme's roll to the next business day (Thursday is closed: Friday's
// opening), beta's are held, gamma's rejected; none is sent late.
func TestResumePastTheCutoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 15*time.Hour+59*time.Minute+50*time.Second)
	tenants := []string{"acme", "beta", "gamma"}
	var rs []payment.Request
	for _, tenant := range tenants {
		rs = append(rs, railPayments(tenant, 10, at)...)
	}
	if res, err := f.s.init.InitChunk(ctx, rs, "init-all"); err != nil || res.Scheduled != 30 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	for _, tenant := range tenants {
		if p, err := svc.Pause(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: tenant}, nil); err != nil || p.Parked != 10 {
			t.Fatalf("pause %s: %+v, %v", tenant, p, err)
		}
	}
	svc = payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim,
		Now: func() time.Time { return f.at(0, 16*time.Hour+30*time.Second) }})
	want := map[string]payment.Repaced{"acme": {Rolled: 10}, "beta": {Held: 10}, "gamma": {Rejected: 10}}
	friday := f.at(2, 7*time.Hour)
	for _, tenant := range tenants {
		res, err := svc.Resume(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: tenant}, nil)
		res.FirstSlot, res.LastSlot = nil, nil
		if err != nil || res != want[tenant] {
			t.Errorf("resume %s: %+v, %v; want %+v", tenant, res, err, want[tenant])
		}
	}
	q := queue.New(f.s.pool)
	for _, r := range rs {
		p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		it, _ := q.Get(ctx, payment.ItemType, p.Key)
		switch r.TenantID {
		case "acme":
			if p.Status != payment.StatusScheduled || p.ScheduledExecutionTime.Before(friday) || it.Status != queue.StatusReady {
				t.Errorf("acme's %s: %s at %s, item %s; want Friday's opening %s", r.PaymentID, p.Status, p.ScheduledExecutionTime, it.Status, friday)
			}
		case "beta":
			if p.Status != payment.StatusHeld || it.Status != queue.StatusParked {
				t.Errorf("beta's %s: %s, item %s", r.PaymentID, p.Status, it.Status)
			}
		case "gamma":
			if p.Status != payment.StatusRejected || it.Status != queue.StatusCompleted {
				t.Errorf("gamma's %s: %s, item %s", r.PaymentID, p.Status, it.Status)
			}
		}
	}
	if errs, err := payment.Verify(ctx, f.s.pool); err != nil || len(errs) > 0 {
		t.Errorf("verify: %v %v", errs, err)
	}
}

// TestHighPaymentsTakeAFullDay: HIGH payments that find the day full
// up to its cut-off do not meet their tenants' rules at once: the reorder
// their file asks for puts them ahead of the NORMAL ones waiting, which
// meet their own tenants' rules in their place. Those rolled for want
// of room come back when the reorder finds room on their first day.
func TestHighPaymentsTakeAFullDay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRailsFixture(t)
	at := f.at(0, 15*time.Hour+59*time.Minute)
	// 10 a second for the 58 s before the guard: beta's (HOLD) 580 fill it.
	normal := railPayments("beta", 580, at)
	if res, err := f.s.init.InitChunk(ctx, normal, "init-beta"); err != nil || res.Scheduled != 580 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	// gamma (REJECT) and acme (ROLL) send HIGH payments late.
	var high []payment.Request
	for _, tenant := range []string{"gamma", "acme"} {
		rs := railPayments(tenant, 10, at)
		for i := range rs {
			rs[i].Priority = payment.PriorityHigh
		}
		high = append(high, rs...)
	}
	if res, err := f.s.init.InitChunk(ctx, high, "init-high"); err != nil || res.Scheduled != 20 {
		t.Fatalf("Phase A of the HIGH ones: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: f.s.store, Queue: f.s.queue, Rails: f.res, Pacer: f.lim})
	time.Sleep(700 * time.Millisecond) // the file's quiet time (reorderQuiet)
	res, err := svc.Reorder(ctx)
	if err != nil || res.Held != 20 || res.Rejected != 0 {
		t.Fatalf("reorder: %+v, %v", res, err)
	}
	count := map[string]int{}
	day := at.Format(time.DateOnly)
	for _, r := range append(normal, high...) {
		p, err := f.s.store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		on := "next day"
		if p.ExecutionDate.Format(time.DateOnly) == day {
			on = "that day"
		}
		count[fmt.Sprintf("%s %s %s %s", r.TenantID, p.Priority, p.Status, on)]++
	}
	want := map[string]int{"acme HIGH SCHEDULED that day": 10, "gamma HIGH SCHEDULED that day": 10,
		"beta NORMAL SCHEDULED that day": 560, "beta NORMAL HELD that day": 20}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("%v, want %v", count, want)
	}
	f.windowsWithin(t, 10)
	if errs, err := payment.Verify(ctx, f.s.pool); err != nil || len(errs) > 0 {
		t.Errorf("verify: %v %v", errs, err)
	}
}
