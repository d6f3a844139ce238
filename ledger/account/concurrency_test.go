package account_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// debitInTx runs one debit as a process step would: in a transaction of
// its own that commits after it.
func debitInTx(pool *pgxpool.Pool, e account.Entry) (account.Posted, error) {
	var p account.Posted
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		p, err = account.Debit(ctx, tx, e)
		return err
	})
	return p, err
}

// TestConcurrentDebits: many debits at once on accounts whose balances
// cover only part of them. None overdraws, none is lost, and exactly as
// many succeed as the balance allows.
func TestConcurrentDebits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		accounts int
		debits   int
		opening  string // per account
		amount   string
		fee      string
		wantOK   int    // per account
		wantLeft string // per account
	}{
		{"one account, 200 debits", 1, 200, "123.45", "1.00", "0", 123, "0.45"},
		{"one account with a fee", 1, 200, "100.00", "0.75", "0.25", 100, "0"},
		{"ten accounts, 400 debits", 10, 400, "25.50", "1.00", "0", 25, "0.50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			for i := range tt.accounts {
				s := eur(fmt.Sprintf("C-%d", i), tt.opening)
				s.Fee = dec(tt.fee)
				mustCreate(t, pool, s)
			}
			var mu sync.Mutex
			ok, refused := map[string]int{}, map[string]int{}
			var wg sync.WaitGroup
			errs := make(chan error, tt.debits)
			for i := range tt.debits {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("C-%d", i%tt.accounts)
					_, err := debitInTx(pool, account.Entry{AccountID: id, Amount: dec(tt.amount), Currency: "EUR",
						ChargeFee: true, Reference: fmt.Sprintf("proc-%d:CreateTransaction", i)})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok[id]++
					case errors.Is(err, ledger.ErrInsufficientFunds):
						refused[id]++
					default:
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("unexpected: %v", err)
			}
			for i := range tt.accounts {
				id := fmt.Sprintf("C-%d", i)
				a, err := account.Get(ctx, pool, id)
				if err != nil {
					t.Fatal(err)
				}
				if ok[id] != tt.wantOK || a.TxnSeq != int64(tt.wantOK) || !a.Balance.Equal(dec(tt.wantLeft)) || a.Balance.IsNegative() {
					t.Errorf("%s: %d debits (%d refused), seq %d, balance %s; want %d debits, balance %s",
						id, ok[id], refused[id], a.TxnSeq, a.Balance, tt.wantOK, tt.wantLeft)
				}
			}
			// Every resulting balance follows from the one before, no gaps.
			if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
				t.Fatalf("verify: %v %v", v, err)
			}
		})
	}
}

// TestReferenceAppliedTwice: the same step delivered many times at once
// debits once; every delivery gets that one posting back.
func TestReferenceAppliedTwice(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	mustCreate(t, pool, eur("D-1", "100"))
	const n = 20
	var wg sync.WaitGroup
	results := make(chan account.Posted, n)
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := debitInTx(pool, account.Entry{AccountID: "D-1", Amount: dec("10"), Currency: "EUR", Reference: "proc-1:CreateTransaction"})
			if err != nil {
				errs <- err
				return
			}
			results <- p
		}()
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Fatalf("a delivery failed: %v", err)
	}
	fresh, ids := 0, map[string]bool{}
	for p := range results {
		if !p.Replayed {
			fresh++
		}
		ids[p.TransactionID.String()] = true
	}
	a, err := account.Get(ctx, pool, "D-1")
	if err != nil || fresh != 1 || len(ids) != 1 || !a.Balance.Equal(dec("90")) || a.TxnSeq != 1 {
		t.Fatalf("%d fresh postings, %d transaction ids, balance %s, seq %d (%v); want one debit", fresh, len(ids), a.Balance, a.TxnSeq, err)
	}
}
