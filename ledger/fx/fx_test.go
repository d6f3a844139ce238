package fx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
)

var ctx = context.Background()

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// TestQuote: direct and inverse pairs, and the rounding of the debit to
// the account currency's minor units (half-even, on the exact value).
func TestQuote(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, r := range []struct{ base, quote, rate string }{
		{"EUR", "USD", "2"},        // direct for EUR accounts paying USD
		{"USD", "JPY", "150.5"},    // inverse for JPY accounts paying USD
		{"EUR", "BHD", "0.4125"},   // inverse for BHD accounts paying EUR
		{"BHD", "GBP", "2.43"},     // direct for BHD accounts paying GBP: a non-terminating division
		{"GBP", "EUR", "1.17"},     // both directions set: the direct one wins
		{"EUR", "GBP", "0.8"},      //
		{"CHF", "JPY", "250.0001"}, // direct, from a currency without decimals
	} {
		if _, err := fx.SetRate(ctx, pool, r.base, r.quote, dec(r.rate), "test"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name                  string
		debit, credit, amount string
		wantDebit             string
		wantBase              string
		wantCode              ledger.Code
	}{
		{"direct", "EUR", "USD", "100.00", "50", "EUR", ""},
		{"direct, a tie: to even (down)", "EUR", "USD", "0.05", "0.02", "EUR", ""},        // 0.025
		{"direct, a tie: to even (up)", "EUR", "USD", "0.07", "0.04", "EUR", ""},          // 0.035
		{"inverse into JPY, a tie: to even", "JPY", "USD", "1.00", "150", "USD", ""},      // 150.5
		{"inverse into JPY, a tie: up to even", "JPY", "USD", "3.00", "452", "USD", ""},   // 451.5
		{"inverse into JPY", "JPY", "USD", "10.01", "1507", "USD", ""},                    // 1506.505
		{"inverse into BHD, three decimals", "BHD", "EUR", "10.05", "4.146", "EUR", ""},   // 4.145625
		{"inverse into BHD, a tie", "BHD", "EUR", "1.00", "0.412", "EUR", ""},             // 0.4125
		{"direct from BHD, non-terminating", "BHD", "GBP", "100.00", "41.152", "BHD", ""}, // 41.15226...
		{"direct wins over the inverse", "GBP", "EUR", "117.00", "100", "GBP", ""},
		{"direct, CHF account paying JPY", "CHF", "JPY", "1000", "4", "CHF", ""}, // 3.9999984
		{"no rate", "EUR", "SEK", "10.00", "", "", ledger.CodeFXUnavailable},
		{"same currency", "EUR", "EUR", "10.00", "", "", ledger.CodeInvalidArgument},
		{"credit amount too precise", "JPY", "USD", "1.001", "", "", ledger.CodeInvalidArgument},
		{"less than a minor unit", "JPY", "USD", "0.001", "", "", ledger.CodeInvalidArgument},
		{"converts to less than a centime", "CHF", "JPY", "1", "", "", ledger.CodeInvalidArgument}, // 0.0039999
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := fx.GetQuote(ctx, pool, tt.debit, tt.credit, dec(tt.amount))
			if ledger.CodeOf(err) != tt.wantCode {
				t.Fatalf("err %v, want %q", err, tt.wantCode)
			}
			if err != nil {
				return
			}
			if !q.DebitAmount.Equal(dec(tt.wantDebit)) || q.RateBase != tt.wantBase || !q.CreditAmount.Equal(dec(tt.amount)) {
				t.Fatalf("quote %+v, want debit %s via %s", q, tt.wantDebit, tt.wantBase)
			}
		})
	}
	rates, err := fx.Rates(ctx, pool)
	if err != nil || len(rates) != 7 || rates[0].Base != "BHD" || rates[0].SetBy != "test" {
		t.Fatalf("rates: %+v %v", rates, err)
	}
	for _, bad := range []struct{ base, quote, rate string }{{"EUR", "EUR", "1"}, {"eur", "USD", "1"}, {"EUR", "USD", "0"}, {"EUR", "USD", "1.0000000000001"}} {
		if _, err := fx.SetRate(ctx, pool, bad.base, bad.quote, dec(bad.rate), "test"); !errors.Is(err, ledger.ErrInvalidArgument) {
			t.Errorf("SetRate(%v): %v", bad, err)
		}
	}
}

// TestContract books, replays, unwinds, and unwinds again.
func TestContract(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "EUR-1", TenantID: "t", Currency: "EUR", OpeningBalance: dec("1000")}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.SetRate(ctx, pool, "EUR", "USD", dec("1.0850"), "ops"); err != nil {
		t.Fatal(err)
	}
	q, err := fx.GetQuote(ctx, pool, "EUR", "USD", dec("250.00"))
	if err != nil || !q.DebitAmount.Equal(dec("230.41")) { // 230.4147...
		t.Fatalf("quote %+v %v", q, err)
	}
	// The rate moves after the quote: the booking keeps the quote's.
	if _, err := fx.SetRate(ctx, pool, "EUR", "USD", dec("1.2"), "ops"); err != nil {
		t.Fatal(err)
	}
	tampered := q
	tampered.DebitAmount = dec("200.00")
	usd := q
	usd.DebitCurrency, usd.CreditCurrency, usd.RateBase, usd.RateQuote = "USD", "EUR", "USD", "EUR"
	steps := []struct {
		name         string
		account      string
		quote        fx.Quote
		ref          string
		wantCode     ledger.Code
		wantReplayed bool
	}{
		{"book", "EUR-1", q, "p1:BookFx", "", false},
		{"replay", "EUR-1", q, "p1:BookFx", "", true},
		{"tampered quote under a used reference", "EUR-1", tampered, "p1:BookFx", ledger.CodeInvalidQuote, false},
		{"tampered quote", "EUR-1", tampered, "p2:BookFx", ledger.CodeInvalidQuote, false},
		{"unknown account", "nope", q, "p3:BookFx", ledger.CodeAccountNotFound, false},
		{"another currency", "EUR-1", usd, "p4:BookFx", ledger.CodeCurrencyMismatch, false},
	}
	var booked fx.Contract
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			c, replayed, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: s.account, Quote: s.quote, Reference: s.ref})
			if ledger.CodeOf(err) != s.wantCode || replayed != s.wantReplayed {
				t.Fatalf("err %v replayed %v; want %q, %v", err, replayed, s.wantCode, s.wantReplayed)
			}
			if err == nil {
				if !c.Rate.Equal(dec("1.085")) || !c.DebitAmount.Equal(dec("230.41")) || c.Status != fx.StatusBooked {
					t.Fatalf("contract %+v", c)
				}
				booked = c
			}
		})
	}
	other := q
	other.CreditAmount, other.DebitAmount = dec("108.50"), dec("100")
	if _, _, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "EUR-1", Quote: other, Reference: "p1:BookFx"}); !errors.Is(err, ledger.ErrReferenceConflict) {
		t.Fatalf("reference reused for another quote: %v", err)
	}

	c, err := fx.Unwind(ctx, pool, booked.ContractID, "payment rejected by the rail")
	if err != nil || c.Status != fx.StatusUnwound || c.UnwoundAt == nil || c.UnwindReason != "payment rejected by the rail" {
		t.Fatalf("unwind: %+v %v", c, err)
	}
	if _, err := fx.Unwind(ctx, pool, booked.ContractID, "again"); !errors.Is(err, ledger.ErrFXAlreadyUnwound) {
		t.Fatalf("unwind twice: %v", err)
	}
	if got, unwound, err := fx.UnwindIfBooked(ctx, pool, "p1:BookFx", "compensation"); err != nil || unwound || got == nil || got.UnwindReason != "payment rejected by the rail" {
		t.Fatalf("unwind-if-booked of an unwound contract: %+v %v %v", got, unwound, err)
	}
	if got, unwound, err := fx.UnwindIfBooked(ctx, pool, "never:BookFx", "compensation"); err != nil || unwound || got != nil {
		t.Fatalf("unwind-if-booked of nothing: %+v %v %v", got, unwound, err)
	}
	// A compensation on a booked contract, delivered twice.
	q2, err := fx.GetQuote(ctx, pool, "EUR", "USD", dec("12.00"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "EUR-1", Quote: q2, Reference: "p5:BookFx"}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		got, unwound, err := fx.UnwindIfBooked(ctx, pool, "p5:BookFx", "compensation")
		if err != nil || unwound != want || got == nil || got.Status != fx.StatusUnwound {
			t.Fatalf("compensation %d: %+v %v %v", i, got, unwound, err)
		}
	}
	if _, err := fx.Unwind(ctx, pool, q2ContractID(t, pool), "x"); !errors.Is(err, ledger.ErrFXAlreadyUnwound) {
		t.Fatalf("unwind after the compensation: %v", err)
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

func q2ContractID(t *testing.T, db ledger.DBTX) [16]byte {
	t.Helper()
	c, err := fx.ContractByReference(ctx, db, "p5:BookFx")
	if err != nil {
		t.Fatal(err)
	}
	return c.ContractID
}

// TestHotQueriesUseIndexes: the rate pair and the contract by reference
// are found by key among 100,000 rows.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, sql := range []string{
		`INSERT INTO fx_rate (base, quote, rate, set_by)
		 SELECT b, q, 1.5, 'test' FROM (SELECT chr(65 + i / 676) || chr(65 + i / 26 % 26) || chr(65 + i % 26) AS b FROM generate_series(0, 399) i) x,
		        (SELECT chr(65 + i / 676) || chr(65 + i / 26 % 26) || chr(65 + i % 26) AS q FROM generate_series(0, 249) i) y WHERE b <> q`,
		`INSERT INTO fx_contract (contract_id, reference, account_id, debit_currency, debit_amount, credit_currency, credit_amount,
		                          rate, rate_base, rate_quote, value_date, status)
		 SELECT gen_random_uuid(), 'ref-' || g, 'A-' || (g % 1000), 'EUR', 10, 'USD', 11, 1.1, 'EUR', 'USD', current_date, 'BOOKED'
		 FROM generate_series(1, 100000) g`,
		`INSERT INTO fx_rate (base, quote, rate, set_by) VALUES ('EUR', 'USD', 1.1, 'test')`,
		`ANALYZE fx_rate; ANALYZE fx_contract`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(f func(ctx context.Context, tx pgx.Tx)) string {
		return pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { f(ctx, tx); return nil })
	}
	tests := []struct{ name, plan, index string }{
		{"rate pair", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = fx.GetQuote(ctx, tx, "EUR", "USD", decimal.NewFromInt(1)) }), "fx_rate_pkey"},
		{"contract by reference", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = fx.ContractByReference(ctx, tx, "ref-77") }), "fx_contract_reference_key"},
		{"unwind by reference", plan(func(ctx context.Context, tx pgx.Tx) { _, _, _ = fx.UnwindIfBooked(ctx, tx, "ref-77", "x") }), "fx_contract_reference_key"},
		{"unwind", plan(func(ctx context.Context, tx pgx.Tx) {
			_, _ = fx.Unwind(ctx, tx, uuid.MustParse("00000000-0000-0000-0000-000000000001"), "x")
		}), "fx_contract_pkey"},
	}
	for _, tt := range tests {
		if !strings.Contains(tt.plan, tt.index) || strings.Contains(tt.plan, "Seq Scan") {
			t.Errorf("%s does not use %s alone:\n%s", tt.name, tt.index, tt.plan)
		}
	}
}

// TestDealingSuspended: a rate published for quotes but not dealt at
// refuses a contract with FX_UNAVAILABLE; a contract booked before is
// still answered as booked.
func TestDealingSuspended(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based)
		VALUES ('A-1', 'A-1', 't', 'EUR', 100, 100, false)`); err != nil {
		t.Fatal(err)
	}
	set := func(dealable bool) {
		t.Helper()
		if _, err := fx.Set(ctx, pool, fx.Rate{Base: "EUR", Quote: "USD", Rate: dec("1.25"), Dealable: dealable, SetBy: "desk"}); err != nil {
			t.Fatal(err)
		}
	}
	set(false)
	q, err := fx.GetQuote(ctx, pool, "EUR", "USD", dec("10.00"))
	if err != nil || !q.DebitAmount.Equal(dec("8.00")) {
		t.Fatalf("a quote at a suspended rate: %+v %v", q, err)
	}
	if _, _, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "A-1", Quote: q, Reference: "p1:BookFx"}); ledger.CodeOf(err) != ledger.CodeFXUnavailable {
		t.Fatalf("book at a suspended rate: %v", err)
	}
	set(true)
	c, replayed, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "A-1", Quote: q, Reference: "p1:BookFx"})
	if err != nil || replayed {
		t.Fatalf("book: %+v %t %v", c, replayed, err)
	}
	set(false)
	again, replayed, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "A-1", Quote: q, Reference: "p1:BookFx"})
	if err != nil || !replayed || again.ContractID != c.ContractID {
		t.Fatalf("replay after the suspension: %+v %t %v", again, replayed, err)
	}
	rates, err := fx.Rates(ctx, pool)
	if err != nil || len(rates) != 1 || rates[0].Dealable {
		t.Fatalf("rates: %+v %v", rates, err)
	}
}
