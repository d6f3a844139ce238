package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestEventCreatedAtIsWhenTheStatusChanged: an event's createdAt is when
// its payment's status changed, not when the transaction that changed it
// began. Ten payments are accepted in transactions begun in one second,
// at execution instants the limiter spread over two (five a second):
// their payment.accepted events, counted per second by createdAt as a
// receiver would, show five a second, each exactly its accepted_at. A
// payment then goes ACCEPTED → PROCESSING → DELIVERED in one transaction
// begun before its acceptance was dated: each later event is dated after
// the one before it (never backwards along the chain), after the
// transaction began, and not before accepted_at.
func TestEventCreatedAtIsWhenTheStatusChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-T", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000")})
	if _, _, err := (webhook.NewStore(webhook.StoreConfig{DB: s.pool, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})).Register(ctx,
		webhook.NewEndpoint{TenantID: "acme", URL: "http://127.0.0.1:9/all"}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	reqs := make([]payment.Request, 10)
	for i := range reqs {
		reqs[i] = validRequest(at)
		reqs[i].PaymentID, reqs[i].DebtorAccount = fmt.Sprintf("t-%02d", i), "ACC-T"
	}
	s.schedule(t, reqs...)

	// The limiter's instants: five in each of two seconds, both after
	// every transaction below began.
	base := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	instants := map[string]time.Time{}
	began := time.Now()
	for i, r := range reqs {
		key := payment.Key(r.TenantID, r.PaymentID)
		instants[key] = base.Add(time.Duration(i/5)*time.Second + time.Duration(i%5)*150*time.Millisecond)
		if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return payment.NewStore(tx).Accept(ctx, key, instants[key])
		}); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(began) > time.Second {
		t.Logf("the acceptances took %v (a loaded machine): their transactions' starts span more than a second", time.Since(began))
	}
	perSecond := map[int64]int{}
	for key, want := range instants {
		evs := eventsOf(t, s, key)
		if len(evs) != 2 || evs[1].Type != "payment.accepted" {
			t.Fatalf("%s: events %+v, want payment.scheduled then payment.accepted", key, evs)
		}
		if !evs[1].CreatedAt.Equal(want) {
			t.Errorf("%s: payment.accepted createdAt %s, want the limiter's instant %s", key, evs[1].CreatedAt, want)
		}
		perSecond[evs[1].CreatedAt.Unix()]++
	}
	for sec, n := range perSecond {
		if n > 5 {
			t.Errorf("second %d: %d payment.accepted by createdAt, want at most the limiter's 5", sec, n)
		}
	}

	// One transaction, begun before the changes it makes, for the chain.
	key := payment.Key("acme", "t-00")
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below; a rollback after it does nothing
	var txStart time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&txStart); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	st := payment.NewStore(tx)
	if err := st.Transition(ctx, key, payment.StatusAccepted, payment.StatusProcessing, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Transition(ctx, key, payment.StatusProcessing, payment.StatusDelivered, ""); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	evs := eventsOf(t, s, key)
	if len(evs) != 4 {
		t.Fatalf("events %+v, want scheduled, accepted, processing, delivered", evs)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].CreatedAt.Before(evs[i-1].CreatedAt) {
			t.Errorf("%s createdAt %s is before %s's %s: backwards along the chain", evs[i].Type, evs[i].CreatedAt, evs[i-1].Type, evs[i-1].CreatedAt)
		}
	}
	for _, e := range evs[2:] {
		if e.CreatedAt.Before(instants[key]) {
			t.Errorf("%s createdAt %s is before the acceptance %s", e.Type, e.CreatedAt, instants[key])
		}
		if !e.CreatedAt.After(txStart) {
			t.Errorf("%s createdAt %s is not after its transaction began (%s): the transaction's start, not the change's", e.Type, e.CreatedAt, txStart)
		}
	}
}

type timedEvent struct {
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
}

// eventsOf is a payment's events as its tenant's endpoint gets them, in
// order.
func eventsOf(t *testing.T, s *saga, key string) []timedEvent {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT payload FROM webhook_deliveries WHERE subject = $1 ORDER BY delivery_id`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []timedEvent
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var e timedEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
