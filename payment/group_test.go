package payment_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
)

// groupSaga is a saga with the accounts of TestSubmitPaymentGroup and its
// payments scheduled: plenty on ACC-A; ACC-P can pay one of its two;
// ACC-U is kept in USD (its EUR payment needs FX); ACC-L is limit-based.
// It returns the payments' ids, in order, and their contexts.
func groupSaga(t *testing.T) (*saga, []string, map[string]payment.Context) {
	t.Helper()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-A", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("0.50")})
	s.account(t, account.Spec{AccountID: "ACC-P", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("150")})
	s.account(t, account.Spec{AccountID: "ACC-U", TenantID: "acme", Currency: "USD", OpeningBalance: dec("500")})
	s.account(t, account.Spec{AccountID: "ACC-L", TenantID: "acme", Currency: "EUR", LimitBased: true},
		limit.Limit{Period: limit.Day, Amount: dec("1000")})
	s.rate(t, "EUR", "USD", "1.25", true)
	ids := []string{"ok-1", "ok-2", "ok-3", "poor-1", "poor-2", "fx-1", "lim-1", "cancelled-1"}
	accts := []string{"ACC-A", "ACC-A", "ACC-A", "ACC-P", "ACC-P", "ACC-U", "ACC-L", "ACC-A"}
	var rs []payment.Request
	for i, id := range ids {
		rs = append(rs, paymentTo(id, accts[i], "100.00", "EUR"))
	}
	contexts := s.schedule(t, rs...)
	// A cancel won the race with the execution.
	if _, err := s.pool.Exec(context.Background(), `UPDATE payments SET status = 'CANCELLED' WHERE payment_id = $1`,
		payment.Key("acme", "cancelled-1")); err != nil {
		t.Fatal(err)
	}
	return s, ids, contexts
}

// groupWant is how each payment of groupSaga ends, and ACC-*'s balances.
var groupWant = map[string]struct {
	status process.Status
	code   string
}{
	"ok-1": {process.StatusSucceeded, ""}, "ok-2": {process.StatusSucceeded, ""}, "ok-3": {process.StatusSucceeded, ""},
	"poor-1": {process.StatusSucceeded, ""}, "poor-2": {process.StatusFailed, "INSUFFICIENT_FUNDS"},
	"fx-1": {process.StatusSucceeded, ""}, "lim-1": {process.StatusSucceeded, ""},
	"cancelled-1": {process.StatusFailed, payment.CodeCancelled},
}

var groupBalances = map[string]string{"ACC-A": "698.50", "ACC-P": "50.00", "ACC-U": "375.00", "ACC-L": "-100.00"}

// TestSubmitPaymentGroup: payments of a group go through SubmitPayment
// together (process.AdvanceGroup): each ends as it would alone — one
// account short of money fails only its payment, a cancelled one fails
// CANCELLED, an FX payment and a limit-based account's go through the
// steps the group cannot do alone — and the debits the group could do
// are one transaction. Run again, the group changes nothing.
func TestSubmitPaymentGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ids, contexts := groupSaga(t)
	ins := make([]process.StartInput, len(ids))
	now := time.Now()
	for i, id := range ids {
		key := payment.Key("acme", id)
		ins[i] = process.StartInput{Type: payment.SubmitPaymentType, BusinessKey: key, WorkflowID: "group-test",
			Data: mustJSON(t, payment.SubmitData(key, contexts[id], now))}
	}
	check := func(out []process.GroupOutcome) {
		t.Helper()
		for i, o := range out {
			want := groupWant[ids[i]]
			code := ""
			if o.State.Outcome != nil {
				code = o.State.Outcome.ErrorCode
			}
			if o.Err != nil || o.State.Status != want.status || code != want.code {
				t.Errorf("%s: %+v (%v), want %s %q", ids[i], o.State, o.Err, want.status, want.code)
			}
		}
		for acct, want := range groupBalances {
			if b := s.balance(t, acct); b.StringFixed(2) != want {
				t.Errorf("%s: balance %s, want %s", acct, b, want)
			}
		}
		s.verify(t)
	}
	check(s.acts.AdvanceGroup(ctx, ins))
	store := payment.NewStore(s.pool)
	for _, id := range ids {
		p, err := store.Find(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		_, _, outboxErr := outbox.Lookup(ctx, s.pool, p.Key, p.Key)
		ok := groupWant[id].status == process.StatusSucceeded
		wantStatus := payment.StatusAccepted
		switch {
		case id == "cancelled-1":
			wantStatus = payment.StatusCancelled // a cancel that won stays
		case !ok:
			wantStatus = payment.StatusFailed
		}
		if p.Status != wantStatus || (outboxErr == nil) != ok || (wantStatus == payment.StatusFailed && !strings.HasPrefix(p.StatusReason, groupWant[id].code)) {
			t.Errorf("%s: %s (%q), rail instruction enqueued %t", id, p.Status, p.StatusReason, outboxErr == nil)
		}
		inst, err := process.Get(ctx, s.pool, process.ID(payment.SubmitPaymentType, p.Key))
		if err != nil {
			t.Fatal(err)
		}
		log, err := process.Log(ctx, s.pool, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := process.Replay(log); err != nil || r.Status != inst.Status {
			t.Errorf("%s: the log replays to %+v, %v; the instance is %s", id, r, err, inst.Status)
		}
	}
	// ok-1..3, poor-1 and lim-1 were debited by one statement in one
	// transaction: their transaction rows share it.
	var xids int
	if err := s.pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM account_transaction
		WHERE description = ANY($1)`, []string{"payment " + payment.Key("acme", "ok-1"), "payment " + payment.Key("acme", "ok-2"),
		"payment " + payment.Key("acme", "ok-3"), "payment " + payment.Key("acme", "poor-1"), "payment " + payment.Key("acme", "lim-1")}).Scan(&xids); err != nil {
		t.Fatal(err)
	}
	if xids != 1 {
		t.Errorf("the group's debits were committed by %d transactions, want 1", xids)
	}
	// Run again (a group run again after a worker was lost): nothing moves.
	before := s.ledgerRows(t)
	check(s.acts.AdvanceGroup(ctx, ins))
	if after := s.ledgerRows(t); after != before {
		t.Errorf("the group run again changed the ledger: %s, was %s", after, before)
	}
}

// TestGroupExecutor: a batch execution's group of payments through
// GroupExecutor ends as BatchExecutor would end each: executed and
// finished (PROCESSING), failed with its code, and done either way (of
// ACC-P's two, whichever its limiter let go first is paid). Run again,
// it answers the same and changes nothing.
func TestGroupExecutor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ids, _ := groupSaga(t)
	a := payment.NewExecActivities(payment.ExecConfig{Store: payment.NewStore(s.pool), Process: s.acts})
	items := make([]dispatch.BatchItem, len(ids))
	for i, id := range ids {
		items[i] = dispatch.BatchItem{ID: payment.Key("acme", id), At: time.Now()}
	}
	run := dispatch.Run{WorkflowID: "exec-batch-payment-test", RunID: "run-1"}
	exec := payment.GroupExecutor(a)
	for round := range 2 {
		before := s.ledgerRows(t)
		out := exec(ctx, items, run)
		if len(out) != len(items) {
			t.Fatalf("%d outcomes for %d items", len(out), len(items))
		}
		poor := map[payment.Status]int{}
		for i, o := range out {
			if !o.Done || o.Err != nil {
				t.Errorf("round %d, %s: %+v, want done", round, ids[i], o)
			}
			p, err := payment.NewStore(s.pool).Get(ctx, items[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			want := payment.StatusProcessing
			switch {
			case ids[i] == "cancelled-1":
				want = payment.StatusCancelled // a cancel that won stays
			case strings.HasPrefix(ids[i], "poor-"):
				// ACC-P pays the first of its two let go: either
				poor[p.Status]++
				continue
			case groupWant[ids[i]].status != process.StatusSucceeded:
				want = payment.StatusFailed
			}
			if p.Status != want {
				t.Errorf("round %d, %s: %s, want %s", round, ids[i], p.Status, want)
			}
			if want == payment.StatusProcessing && p.ExecutionRef != run.String() {
				t.Errorf("%s: execution %q, want %q", ids[i], p.ExecutionRef, run.String())
			}
		}
		if poor[payment.StatusProcessing] != 1 || poor[payment.StatusFailed] != 1 {
			t.Errorf("round %d: ACC-P's payments %v, want one executed and one failed", round, poor)
		}
		for acct, want := range groupBalances {
			if b := s.balance(t, acct); b.StringFixed(2) != want {
				t.Errorf("round %d, %s: balance %s, want %s", round, acct, b, want)
			}
		}
		if round == 1 {
			if after := s.ledgerRows(t); after != before {
				t.Errorf("run again: the ledger changed: %s, was %s", after, before)
			}
		}
		s.verify(t)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestContextsAndStatuses: a group's one read gives each payment the
// context and status its own read gives, and leaves out one not stored.
func TestContextsAndStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ids, _ := groupSaga(t)
	store := payment.NewStore(s.pool)
	keys := []string{payment.Key("acme", "no-such-payment")}
	for _, id := range ids {
		keys = append(keys, payment.Key("acme", id))
	}
	got, err := store.ContextsAndStatuses(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d contexts for %d stored payments (and one missing)", len(got), len(ids))
	}
	for _, k := range keys[1:] {
		pc, st, err := store.ContextAndStatus(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if g := got[k]; g.Status != st || !reflect.DeepEqual(g.Context, pc) {
			t.Errorf("%s: %+v, %s read together; %+v, %s alone", k, g.Context, g.Status, pc, st)
		}
	}
}
