package account_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// TestDebitMany: a group's debits in one statement. An account short of
// money refuses only the entries it cannot pay; every other entry posts,
// each balance follows from the one before, and a group delivered again
// replays.
func TestDebitMany(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	rich := eur("G-RICH", "100")
	rich.Fee = dec("0.50")
	mustCreate(t, pool, rich)
	mustCreate(t, pool, eur("G-POOR", "15"))
	entry := func(acct, amount, ref string) account.Entry {
		return account.Entry{AccountID: acct, Amount: dec(amount), Currency: "EUR", ChargeFee: true, Reference: ref}
	}
	group := []account.Entry{
		entry("G-RICH", "10", "p1:CreateTransaction"),
		entry("G-POOR", "10", "p2:CreateTransaction"),
		entry("G-POOR", "10", "p3:CreateTransaction"), // 5 left: refused
		entry("G-RICH", "20", "p4:CreateTransaction"),
		entry("G-NONE", "1", "p5:CreateTransaction"),
		entry("G-POOR", "5", "p6:CreateTransaction"), // exactly what is left
		entry("G-RICH", "1.001", "p7:CreateTransaction"),
	}
	wantCodes := []ledger.Code{"", "", ledger.CodeInsufficientFunds, "", ledger.CodeAccountNotFound, "", ledger.CodeInvalidArgument}
	run := func(entries []account.Entry) []account.Outcome {
		var out []account.Outcome
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			out, err = account.DebitMany(ctx, tx, entries)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := run(group)
	for i, o := range first {
		if got := ledger.CodeOf(o.Err); got != wantCodes[i] {
			t.Errorf("entry %d (%s): code %q (%v), want %q", i, group[i].Reference, got, o.Err, wantCodes[i])
		}
		if o.Err == nil && (o.Replayed || o.Reference != group[i].Reference || o.AccountID != group[i].AccountID) {
			t.Errorf("entry %d: %+v", i, o.Posted)
		}
	}
	if b := first[3].BalanceAfter; !b.Equal(dec("69")) { // 100 - 10.5 - 20.5
		t.Errorf("G-RICH's second debit left %s, want 69", b)
	}
	if s := first[5].Seq; s != 2 {
		t.Errorf("G-POOR's second posted debit has seq %d, want 2", s)
	}
	for _, c := range []struct{ id, balance string }{{"G-RICH", "69"}, {"G-POOR", "0"}} {
		a, err := account.Get(ctx, pool, c.id)
		if err != nil || !a.Balance.Equal(dec(c.balance)) {
			t.Errorf("%s: balance %v (%v), want %s", c.id, a.Balance, err, c.balance)
		}
	}
	// Delivered again: the posted ones replay, the refused ones are
	// refused again, nothing moves.
	again := run(group)
	for i, o := range again {
		if got := ledger.CodeOf(o.Err); got != wantCodes[i] {
			t.Errorf("again, entry %d: code %q, want %q", i, got, wantCodes[i])
		}
		if o.Err == nil && (!o.Replayed || o.TransactionID != first[i].TransactionID) {
			t.Errorf("again, entry %d: %+v, want the first posting replayed", i, o.Posted)
		}
	}
	// A single Debit of a reference the group posted is a replay too; one
	// posted alone is replayed by a group.
	if p, err := account.Debit(ctx, pool, group[0]); err != nil || !p.Replayed {
		t.Errorf("Debit of a group's reference: %+v %v, want a replay", p, err)
	}
	if _, err := account.Debit(ctx, pool, entry("G-RICH", "1", "p8:CreateTransaction")); err != nil {
		t.Fatal(err)
	}
	usd := entry("G-RICH", "1", "p9:CreateTransaction")
	usd.Currency = "USD"
	mixed := run([]account.Entry{entry("G-RICH", "1", "p8:CreateTransaction"), entry("G-RICH", "2", "p1:CreateTransaction"), usd})
	if !mixed[0].Replayed || ledger.CodeOf(mixed[1].Err) != ledger.CodeReferenceConflict || ledger.CodeOf(mixed[2].Err) != ledger.CodeCurrencyMismatch {
		t.Errorf("mixed: %+v", mixed)
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestDebitManyRejectsDuplicateReferences: two entries of one group under
// one reference are one step twice: the second is refused before the
// statement, and the first posts.
func TestDebitManyRejectsDuplicateReferences(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	mustCreate(t, pool, eur("DUP-1", "10"))
	e := account.Entry{AccountID: "DUP-1", Amount: dec("1"), Currency: "EUR", Reference: "p:CreateTransaction"}
	out, err := account.DebitMany(ctx, pool, []account.Entry{e, e})
	if err != nil || out[0].Err != nil || ledger.CodeOf(out[1].Err) != ledger.CodeInvalidArgument {
		t.Fatalf("%+v %v; want the first posted, the second refused", out, err)
	}
}

// TestConcurrentDebitMany: many groups at once, over overlapping
// accounts in different orders, with single debits beside them. None
// deadlocks, none overdraws, none is lost: the money that left each
// account is exactly its posted debits, and exactly as many succeed as
// the balance allows.
func TestConcurrentDebitMany(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const accounts, groups, perGroup, singles = 5, 40, 10, 50
	for i := range accounts {
		mustCreate(t, pool, eur(fmt.Sprintf("CM-%d", i), "50"))
	}
	var mu sync.Mutex
	posted := map[string]int{}
	errs := make(chan error, groups+singles)
	count := func(acct string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			posted[acct]++
		case errors.Is(err, ledger.ErrInsufficientFunds):
		default:
			errs <- err
		}
	}
	var wg sync.WaitGroup
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries := make([]account.Entry, perGroup)
			for j := range entries {
				// each group walks the accounts from its own start
				entries[j] = account.Entry{AccountID: fmt.Sprintf("CM-%d", (g+j)%accounts), Amount: dec("1"), Currency: "EUR",
					Reference: fmt.Sprintf("g%d-%d:CreateTransaction", g, j)}
			}
			var out []account.Outcome
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				out, err = account.DebitMany(ctx, tx, entries)
				return err
			})
			if err != nil {
				errs <- err
				return
			}
			for j, o := range out {
				count(entries[j].AccountID, o.Err)
			}
		}()
	}
	for s := range singles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acct := fmt.Sprintf("CM-%d", s%accounts)
			_, err := debitInTx(pool, account.Entry{AccountID: acct, Amount: dec("1"), Currency: "EUR", Reference: fmt.Sprintf("s%d:CreateTransaction", s)})
			count(acct, err)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("unexpected: %v", err)
	}
	// 40 groups × 10 + 50 singles = 450 debits of 1 over 5 accounts of 50:
	// each account pays 50 and refuses the rest.
	for i := range accounts {
		id := fmt.Sprintf("CM-%d", i)
		a, err := account.Get(ctx, pool, id)
		if err != nil {
			t.Fatal(err)
		}
		spent := dec("50").Sub(a.Balance)
		if posted[id] != 50 || !spent.Equal(decimal.NewFromInt(int64(posted[id]))) || a.TxnSeq != int64(posted[id]) {
			t.Errorf("%s: %d posted, balance %s, seq %d; want 50 posted, balance 0", id, posted[id], a.Balance, a.TxnSeq)
		}
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}
