package payment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestDelivery: executed payments reach the rail simulator through the
// outbox's relayer and the JSON rail adapter: the one the rail takes is
// DELIVERED, received once; the one it refuses for good is RETURNED with
// the rail's code, its debit given back to the cent.
func TestDelivery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-D", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("1")})
	refused := paymentTo("refused", "ACC-D", "200.00", "EUR")
	refused.RemittanceInfo = "RAIL-REJECT:AC04"
	contexts := s.schedule(t, paymentTo("taken", "ACC-D", "100.00", "EUR"), refused)
	for _, id := range []string{"taken", "refused"} {
		if out, err := s.execute(ctx, id, contexts[id]); err != nil || out.Status != "SUCCEEDED" {
			t.Fatalf("%s: %+v %v", id, out, err)
		}
	}
	sim := startRail(ctx, t, s)
	store := payment.NewStore(s.pool)
	for {
		a, _ := store.Find(ctx, "acme", "taken")
		b, _ := store.Find(ctx, "acme", "refused")
		if a.Status == payment.StatusDelivered && b.Status == payment.StatusReturned {
			if b.StatusReason[:4] != "AC04" {
				t.Fatalf("returned with %q, want the rail's AC04", b.StatusReason)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("taken %s, refused %s (%q)", a.Status, b.Status, b.StatusReason)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// 1000 − (100 + 1): the refused payment's 201 came back.
	if bal := s.balance(t, "ACC-D"); !bal.Equal(dec("899")) {
		t.Fatalf("balance %s, want 899", bal)
	}
	if l := sim.Ledger(); l.Unique != 1 || l.Refused != 1 || l.Duplicates != 0 || l.Gaps != 0 {
		t.Fatalf("rail ledger %+v", l)
	}
	s.verify(t)
}

// TestRedrive: a payment the rail refused is RETURNED, its money given
// back; an operator requeues its dead instruction through a rate-limit
// config. Refused again (the cause not fixed), it is returned again, to
// the cent; once the rail lifts the refusal, the next requeue debits it
// once more and it is DELIVERED, received by the rail once. A requeue
// the account cannot pay for is refused and changes nothing. verify is
// clean at every stop.
func TestRedrive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-R", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("1")})
	s.account(t, account.Spec{AccountID: "ACC-P", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("300"), Fee: dec("0")})
	refused := paymentTo("refused", "ACC-R", "200.00", "EUR")
	refused.RemittanceInfo = "RAIL-REJECT:AC04"
	poor := paymentTo("poor", "ACC-P", "250.00", "EUR")
	poor.RemittanceInfo = "RAIL-REJECT:AC04"
	contexts := s.schedule(t, refused, poor)
	for _, id := range []string{"refused", "poor"} {
		if out, err := s.execute(ctx, id, contexts[id]); err != nil || out.Status != "SUCCEEDED" {
			t.Fatalf("%s: %+v %v", id, out, err)
		}
	}
	sim := startRail(ctx, t, s)
	store := payment.NewStore(s.pool)
	await := func(id string, want payment.Status) {
		t.Helper()
		for {
			p, _ := store.Find(ctx, "acme", id)
			if p.Status == want {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s is %s, want %s", id, p.Status, want)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	await("refused", payment.StatusReturned)
	await("poor", payment.StatusReturned)
	s.verify(t)

	limiter := pacing.New(pacing.Config{Pool: s.pool})
	if _, err := limiter.PutConfig(ctx, pacing.Limit{Name: "redrive", MaxPerWindow: 50, Window: time.Second, Headroom: 10}); err != nil {
		t.Fatal(err)
	}
	dl := deadletter.New(deadletter.Config{DB: s.pool, Queue: queue.New(s.pool), Limiter: limiter, OutboxHooks: payment.OutboxHooks()})
	letterOf := func(paymentID string) string {
		t.Helper()
		p, err := store.Find(ctx, "acme", paymentID)
		if err != nil {
			t.Fatal(err)
		}
		page, err := dl.List(ctx, deadletter.Filter{Source: deadletter.SourceOutbox}, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Letters {
			if l.ItemID == p.Key {
				return l.ID
			}
		}
		t.Fatalf("no dead letter for %s in %+v", paymentID, page.Letters)
		return ""
	}
	requeue := func(paymentID string) deadletter.Result {
		t.Helper()
		res, err := dl.Requeue(ctx, deadletter.Request{IDs: []string{letterOf(paymentID)}, Config: "redrive", Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// Not fixed at the rail: refused again, returned again.
	if res := requeue("refused"); res.Requeued != 1 {
		t.Fatalf("requeue: %+v", res)
	}
	await("refused", payment.StatusReturned) // the requeue made it PROCESSING: this is the rail's second refusal
	if bal := s.balance(t, "ACC-R"); !bal.Equal(dec("1000")) {
		t.Fatalf("balance %s after two returns, want 1000", bal)
	}
	s.verify(t)

	// Fixed: delivered, debited once more.
	if p, _ := store.Find(ctx, "acme", "refused"); !sim.Lift(p.Key) { // the rail's key is the payment's id
		t.Fatal("the rail had no refusal to lift")
	}
	id := letterOf("refused")
	res := requeue("refused")
	if res.Requeued != 1 || res.FirstSlot.IsZero() {
		t.Fatalf("requeue: %+v", res)
	}
	await("refused", payment.StatusDelivered)
	if bal := s.balance(t, "ACC-R"); !bal.Equal(dec("799")) {
		t.Fatalf("balance %s after delivery, want 1000 − 201 = 799", bal)
	}
	if l := sim.Ledger(); l.Unique != 1 || l.Duplicates != 0 {
		t.Fatalf("rail ledger %+v, want the payment received once", l)
	}
	// It is no longer dead: a second requeue of it is refused.
	if _, err := dl.Requeue(ctx, deadletter.Request{IDs: []string{id}, Config: "redrive"}); !errors.Is(err, deadletter.ErrNotDead) {
		t.Fatalf("requeue of a delivered letter: %v, want ErrNotDead", err)
	}
	s.verify(t)

	// An account that cannot pay: the requeue is refused, nothing moves.
	if _, err := account.Debit(ctx, s.pool, account.Entry{AccountID: "ACC-P", Amount: dec("100"), Currency: "EUR", Reference: "drain"}); err != nil {
		t.Fatal(err)
	}
	_, err := dl.Requeue(ctx, deadletter.Request{IDs: []string{letterOf("poor")}, Config: "redrive"})
	if !errors.Is(err, deadletter.ErrNotDead) || !strings.Contains(err.Error(), "INSUFFICIENT_FUNDS") && !strings.Contains(err.Error(), "available") {
		t.Fatalf("requeue without the money: %v", err)
	}
	if bal := s.balance(t, "ACC-P"); !bal.Equal(dec("200")) {
		t.Fatalf("balance %s, want 200: nothing taken", bal)
	}
	letterOf("poor") // still dead
	s.verify(t)
}

// startRail starts a rail simulator and a relayer delivering the saga's
// outbox to it with the payments' hooks, both stopped when the test ends.
func startRail(ctx context.Context, t *testing.T, s *saga) *railsim.Simulator {
	t.Helper()
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	json, err := rail.NewHTTPRail(rail.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	router, err := rail.NewRouter(rail.RouterConfig{Rails: []rail.Rail{json}})
	if err != nil {
		t.Fatal(err)
	}
	relayer, err := outbox.New(outbox.Config{Pool: s.pool, Sender: router, Hooks: payment.OutboxHooks(), PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRelay := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relayer.Run(runCtx) }()
	t.Cleanup(func() {
		stopRelay()
		if err := <-done; err != nil && err != context.Canceled {
			t.Error(err)
		}
	})
	return sim
}

// TestDeliveriesAndFinishesShareALockOrder: the relayer recording a
// batch of deliveries and a group's finish lock the same payments side by
// side; both lock them in key order, so neither is chosen as a deadlock's
// victim, whatever the order the rail's answers came in or the rows lie
// in. Every round ends with every payment DELIVERED.
func TestDeliveriesAndFinishesShareALockOrder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-L", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("0")})
	rs := make([]payment.Request, 200)
	for i := range rs {
		rs[i] = paymentTo(fmt.Sprintf("lock-%03d", i), "ACC-L", "1.00", "EUR")
	}
	s.schedule(t, rs...)
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = payment.Key(r.TenantID, r.PaymentID)
	}
	answered := make([]outbox.Delivery, len(keys)) // the rail's order: not the keys'
	for i := range answered {
		answered[i].Message.InstructionID = keys[len(keys)-1-i]
	}
	store := payment.NewStore(s.pool)
	onDelivered := payment.OutboxHooks().OnDelivered
	for round := range 10 {
		if _, err := s.pool.Exec(ctx, `UPDATE payments SET status = 'ACCEPTED' WHERE payment_id = ANY($1)`, keys); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for g := range errs {
			wg.Go(func() {
				if g%2 == 0 {
					_, errs[g] = store.FinishMany(ctx, keys, fmt.Sprintf("exec-%d", g))
					return
				}
				errs[g] = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return onDelivered(ctx, tx, answered) })
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var delivered int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE payment_id = ANY($1) AND status = 'DELIVERED'`, keys).Scan(&delivered); err != nil {
			t.Fatal(err)
		}
		if delivered != len(keys) {
			t.Fatalf("round %d: %d of %d DELIVERED", round, delivered, len(keys))
		}
	}
}

// TestReturnsAndFinishesShareALockOrder: the relayer recording the
// rail's refusals (returning payments one by one, each with its money
// given back) and a group's finish lock the same payments side by side;
// the refusals came in the reverse of the keys' order. Both lock in key
// order, so neither is a deadlock's victim, and every payment ends
// RETURNED with its debit reversed once.
func TestReturnsAndFinishesShareALockOrder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-T", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("10000"), Fee: dec("0")})
	store := payment.NewStore(s.pool)
	onDead := payment.OutboxHooks().OnDead
	for round := range 4 {
		rs := make([]payment.Request, 30)
		for i := range rs {
			rs[i] = paymentTo(fmt.Sprintf("ret-%d-%03d", round, i), "ACC-T", "1.00", "EUR")
		}
		contexts := s.schedule(t, rs...)
		keys := make([]string, len(rs))
		for i, r := range rs {
			if out, err := s.execute(ctx, r.PaymentID, contexts[r.PaymentID]); err != nil || out.Status != "SUCCEEDED" {
				t.Fatalf("%s: %+v %v", r.PaymentID, out, err)
			}
			keys[i] = payment.Key(r.TenantID, r.PaymentID)
		}
		slices.Sort(keys)
		dead := make([]outbox.DeadLetter, len(keys)) // the rail's order: not the keys'
		for i := range dead {
			dead[i] = outbox.DeadLetter{Message: outbox.Message{InstructionID: keys[len(keys)-1-i]}, ErrorCode: outbox.CodeRailTerminal,
				Result: outbox.Result{Code: "AC04", Message: "account closed"}}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() { errs[0] = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return onDead(ctx, tx, dead) }) })
		wg.Go(func() { _, errs[1] = store.FinishMany(ctx, keys, fmt.Sprintf("exec-%d", round)) })
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var returnedN int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE payment_id = ANY($1) AND status = 'RETURNED'`, keys).Scan(&returnedN); err != nil {
			t.Fatal(err)
		}
		if returnedN != len(keys) {
			t.Fatalf("round %d: %d of %d RETURNED", round, returnedN, len(keys))
		}
	}
	s.verify(t)
}
