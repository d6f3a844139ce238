package account_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// TestPostings runs one account through debits, credits and reversals,
// each step checked against the balance it must leave.
func TestPostings(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	spec := eur("P-1", "100.00")
	spec.Fee = dec("0.50")
	mustCreate(t, pool, spec)
	mustCreate(t, pool, eur("P-2", "5"))
	ids := map[string]uuid.UUID{} // reference → transaction id, for reversals

	type step struct {
		name        string
		kind        string // debit, credit, reverse
		account     string
		amount      string
		currency    string
		fee         bool
		ref         string
		reverses    string // reference of the transaction reversed
		wantCode    ledger.Code
		wantBalance string // P-1's balance after the step
		wantSeq     int64  // the posting's seq (0: not checked)
		wantReplay  bool
	}
	steps := []step{
		{name: "debit", kind: "debit", amount: "30.00", ref: "p1:CreateTransaction", wantBalance: "70", wantSeq: 1},
		{name: "debit with fee", kind: "debit", amount: "10", fee: true, ref: "p2:CreateTransaction", wantBalance: "59.5", wantSeq: 2},
		{name: "replay of a debit", kind: "debit", amount: "30.00", ref: "p1:CreateTransaction", wantBalance: "59.5", wantSeq: 1, wantReplay: true},
		{name: "same reference, other amount", kind: "debit", amount: "31", ref: "p1:CreateTransaction", wantCode: ledger.CodeReferenceConflict, wantBalance: "59.5"},
		{name: "same reference, other account", kind: "debit", account: "P-2", amount: "1", ref: "p1:CreateTransaction", wantCode: ledger.CodeReferenceConflict, wantBalance: "59.5"},
		{name: "insufficient funds", kind: "debit", amount: "59.51", ref: "p3:CreateTransaction", wantCode: ledger.CodeInsufficientFunds, wantBalance: "59.5"},
		{name: "fee makes it insufficient", kind: "debit", amount: "59.01", fee: true, ref: "p3b:CreateTransaction", wantCode: ledger.CodeInsufficientFunds, wantBalance: "59.5"},
		{name: "exactly the balance", kind: "debit", amount: "59.00", fee: true, ref: "p4:CreateTransaction", wantBalance: "0", wantSeq: 3},
		{name: "nothing left", kind: "debit", amount: "0.01", ref: "p5:CreateTransaction", wantCode: ledger.CodeInsufficientFunds, wantBalance: "0"},
		{name: "credit", kind: "credit", amount: "20", ref: "in-1", wantBalance: "20", wantSeq: 4},
		{name: "reverse a debit", kind: "reverse", reverses: "p2:CreateTransaction", ref: "p2:ReverseTransaction", wantBalance: "30.5", wantSeq: 5},
		{name: "reverse it again, same reference", kind: "reverse", reverses: "p2:CreateTransaction", ref: "p2:ReverseTransaction", wantBalance: "30.5", wantSeq: 5, wantReplay: true},
		{name: "reverse it again, other reference", kind: "reverse", reverses: "p2:CreateTransaction", ref: "other:ReverseTransaction", wantCode: ledger.CodeAlreadyReversed, wantBalance: "30.5"},
		{name: "reverse a reversal", kind: "reverse", reverses: "p2:ReverseTransaction", ref: "x:Reverse", wantCode: ledger.CodeNotReversible, wantBalance: "30.5"},
		{name: "reverse a credit", kind: "reverse", reverses: "in-1", ref: "in-1:Reverse", wantBalance: "10.5", wantSeq: 6},
		{name: "reverse an unknown transaction", kind: "reverse", reverses: "none", ref: "y:Reverse", wantCode: ledger.CodeTransactionNotFound, wantBalance: "10.5"},
		{name: "currency mismatch", kind: "debit", amount: "1", currency: "USD", ref: "p6:CreateTransaction", wantCode: ledger.CodeCurrencyMismatch, wantBalance: "10.5"},
		{name: "unknown account", kind: "debit", account: "nope", amount: "1", ref: "p7:CreateTransaction", wantCode: ledger.CodeAccountNotFound, wantBalance: "10.5"},
		{name: "too many decimals", kind: "debit", amount: "1.001", ref: "p8:CreateTransaction", wantCode: ledger.CodeInvalidArgument, wantBalance: "10.5"},
		{name: "zero amount", kind: "debit", amount: "0", ref: "p9:CreateTransaction", wantCode: ledger.CodeInvalidArgument, wantBalance: "10.5"},
		{name: "no reference", kind: "debit", amount: "1", ref: "", wantCode: ledger.CodeInvalidArgument, wantBalance: "10.5"},
		{name: "credit with a fee", kind: "credit", amount: "1", fee: true, ref: "in-2", wantCode: ledger.CodeInvalidArgument, wantBalance: "10.5"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.account == "" {
				s.account = "P-1"
			}
			if s.currency == "" {
				s.currency = "EUR"
			}
			var p account.Posted
			var err error
			switch s.kind {
			case "reverse":
				p, err = account.Reverse(ctx, pool, account.Reversal{TransactionID: ids[s.reverses], Reference: s.ref})
				if s.reverses == "none" {
					p, err = account.Reverse(ctx, pool, account.Reversal{TransactionID: uuid.New(), Reference: s.ref})
				}
			default:
				var amount = dec("0")
				if s.amount != "" {
					amount = dec(s.amount)
				}
				e := account.Entry{AccountID: s.account, Amount: amount, Currency: s.currency, ChargeFee: s.fee, Reference: s.ref}
				if s.kind == "debit" {
					p, err = account.Debit(ctx, pool, e)
				} else {
					p, err = account.Credit(ctx, pool, e)
				}
			}
			if ledger.CodeOf(err) != s.wantCode {
				t.Fatalf("err %v, want code %q", err, s.wantCode)
			}
			if err == nil {
				ids[s.ref] = p.TransactionID
				if p.Replayed != s.wantReplay || (s.wantSeq != 0 && p.Seq != s.wantSeq) {
					t.Fatalf("posted %+v: want seq %d, replay %v", p, s.wantSeq, s.wantReplay)
				}
			}
			a, err := account.Get(ctx, pool, "P-1")
			if err != nil || !a.Balance.Equal(dec(s.wantBalance)) {
				t.Fatalf("balance %s (%v), want %s", a.Balance, err, s.wantBalance)
			}
		})
	}
	// The fee is recorded as part of the debit.
	txns, err := account.Transactions(ctx, pool, "P-1", 100)
	if err != nil || len(txns) != 6 {
		t.Fatalf("transactions: %d %v", len(txns), err)
	}
	byRef := map[string]account.Transaction{}
	for _, tx := range txns {
		byRef[tx.Reference] = tx
	}
	if d := byRef["p2:CreateTransaction"]; !d.Amount.Equal(dec("10.5")) || !d.Fee.Equal(dec("0.5")) || d.Type != account.TypeDebit {
		t.Fatalf("debit with fee: %+v", d)
	}
	if r := byRef["p2:ReverseTransaction"]; r.Type != account.TypeReversal || r.Reverses == nil || *r.Reverses != ids["p2:CreateTransaction"] || !r.Amount.Equal(dec("10.5")) {
		t.Fatalf("reversal: %+v", r)
	}
	if txns[0].Seq != 6 || !txns[0].BalanceAfter.Equal(dec("10.5")) {
		t.Fatalf("newest first: %+v", txns[0])
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestLimitBasedAccount: a limit-based account goes below zero; its
// control is its limits.
func TestLimitBasedAccount(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	spec := account.Spec{AccountID: "LB", TenantID: "acme", Currency: "JPY", OpeningBalance: dec("1000"), LimitBased: true, Fee: dec("100")}
	mustCreate(t, pool, spec)
	tests := []struct {
		amount, ref, wantBalance string
		wantCode                 ledger.Code
	}{
		{"900", "a", "0", ""}, // 900 + 100 fee
		{"5000", "b", "-5100", ""},
		{"1.5", "c", "-5100", ledger.CodeInvalidArgument}, // JPY has no minor unit
	}
	for _, tt := range tests {
		p, err := account.Debit(ctx, pool, account.Entry{AccountID: "LB", Amount: dec(tt.amount), Currency: "JPY", ChargeFee: true, Reference: tt.ref})
		if ledger.CodeOf(err) != tt.wantCode {
			t.Fatalf("debit %s: %v", tt.amount, err)
		}
		if err == nil && !p.Balance.Equal(dec(tt.wantBalance)) {
			t.Fatalf("debit %s: balance %s, want %s", tt.amount, p.Balance, tt.wantBalance)
		}
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestRefusalKeepsTransactionUsable: a refusal is a result, not an SQL
// error, so the step's transaction can go on (record the failure, say).
func TestRefusalKeepsTransactionUsable(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	mustCreate(t, pool, eur("R-1", "10"))
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := account.Debit(ctx, tx, account.Entry{AccountID: "R-1", Amount: dec("11"), Currency: "EUR", Reference: "r1"}); !errors.Is(err, ledger.ErrInsufficientFunds) {
			t.Fatalf("want insufficient funds: %v", err)
		}
		if _, err := account.Debit(ctx, tx, account.Entry{AccountID: "R-1", Amount: dec("1"), Currency: "GBP", Reference: "r2"}); !errors.Is(err, ledger.ErrCurrencyMismatch) {
			t.Fatalf("want currency mismatch: %v", err)
		}
		_, err := account.Debit(ctx, tx, account.Entry{AccountID: "R-1", Amount: dec("10"), Currency: "EUR", Reference: "r3"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A rolled-back debit leaves nothing: not the balance, not the seq.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.Credit(ctx, tx, account.Entry{AccountID: "R-1", Amount: dec("5"), Currency: "EUR", Reference: "r4"}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	a, err := account.Get(ctx, pool, "R-1")
	if err != nil || !a.Balance.IsZero() || a.TxnSeq != 1 {
		t.Fatalf("after rollback: %+v %v", a, err)
	}
	// The rolled-back reference is free again.
	if p, err := account.Credit(ctx, pool, account.Entry{AccountID: "R-1", Amount: dec("5"), Currency: "EUR", Reference: "r4"}); err != nil || p.Replayed || p.Seq != 2 {
		t.Fatalf("credit after rollback: %+v %v", p, err)
	}
}

// TestReverseIfPosted: the compensation by the debit step's reference.
func TestReverseIfPosted(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	mustCreate(t, pool, eur("RP-1", "50"))
	if _, err := account.Debit(ctx, pool, account.Entry{AccountID: "RP-1", Amount: dec("20"), Currency: "EUR", Reference: "p1:CreateTransaction"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, posted string
		wantReversed bool
		wantReplayed bool
		wantBalance  string
	}{
		{"reverse the debit", "p1:CreateTransaction", true, false, "50"},
		{"delivered again", "p1:CreateTransaction", true, true, "50"},
		{"nothing was posted", "p2:CreateTransaction", false, false, "50"},
	}
	for _, tt := range tests {
		p, reversed, err := account.ReverseIfPosted(ctx, pool, tt.posted, account.Reversal{Reference: "p1:ReverseTransaction"})
		if err != nil || reversed != tt.wantReversed || p.Replayed != tt.wantReplayed {
			t.Fatalf("%s: %+v %v %v", tt.name, p, reversed, err)
		}
		if a, _ := account.Get(ctx, pool, "RP-1"); !a.Balance.Equal(dec(tt.wantBalance)) {
			t.Fatalf("%s: balance %s", tt.name, a.Balance)
		}
	}
}
