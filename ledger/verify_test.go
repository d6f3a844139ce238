package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
)

var ctx = context.Background()

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// goodLedger writes a small ledger through the ledger's own operations:
// account A (EUR 100: debit, credit, debit and its reversal: 80), a
// limit-based account L with a DAY limit and one booking, an FX contract
// on A and an unwound one.
func goodLedger(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := account.Create(ctx, pool, account.Spec{AccountID: "A", TenantID: "t", Currency: "EUR", OpeningBalance: dec("100")})
	must(err)
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: "L", TenantID: "t", Currency: "EUR", OpeningBalance: dec("0"), LimitBased: true})
	must(err)
	entry := func(ref, amount string) account.Entry {
		return account.Entry{AccountID: "A", Amount: dec(amount), Currency: "EUR", Reference: ref}
	}
	_, err = account.Debit(ctx, pool, entry("d1", "30"))
	must(err)
	_, err = account.Credit(ctx, pool, entry("c1", "10"))
	must(err)
	d2, err := account.Debit(ctx, pool, entry("d2", "5"))
	must(err)
	_, err = account.Reverse(ctx, pool, account.Reversal{TransactionID: d2.TransactionID, Reference: "r1"})
	must(err)
	must(limit.Set(ctx, pool, "L", "EUR", []limit.Limit{{Period: limit.Day, Amount: dec("1000")}}, time.Now()))
	_, err = limit.Book(ctx, pool, limit.BookRequest{AccountID: "L", Amount: dec("100"), Currency: "EUR", At: time.Now(), Reference: "b1"})
	must(err)
	_, err = fx.SetRate(ctx, pool, "EUR", "USD", dec("1.1"), "test")
	must(err)
	for _, ref := range []string{"k1", "k2"} {
		q, err := fx.GetQuote(ctx, pool, "EUR", "USD", dec("11.00"))
		must(err)
		_, _, err = fx.Book(ctx, pool, fx.BookRequest{AccountID: "A", Quote: q, Reference: ref})
		must(err)
	}
	_, _, err = fx.UnwindIfBooked(ctx, pool, "k2", "test")
	must(err)
	return pool
}

// TestVerify: a ledger written by the ledger's operations is clean, and
// each rule fails on a database corrupted to break it, naming the row.
// Some corruptions first drop the constraint that would have refused them
// (what a hand edit, a restore or an older schema could leave).
func TestVerify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		corrupt  string
		wantRule ledger.Rule
		wantRow  string // a substring of the violation's row
		wantText string // a substring of its detail
	}{
		{"clean", ``, "", "", ""},
		{"balance changed by hand", `UPDATE account SET balance = balance + 1 WHERE account_id = 'A'`,
			ledger.RuleBalanceEquation, "account_id=A", "but the balance is 81"},
		{"a resulting balance changed", `UPDATE account_transaction SET balance_after = balance_after + 1 WHERE reference = 'c1'`,
			ledger.RuleBalanceChain, "seq=2", "balance_after 81"},
		{"a gap in the sequence", `UPDATE account_transaction SET seq = 10 WHERE reference = 'r1'`,
			ledger.RuleBalanceChain, "seq=10", "seq 10 follows seq 3"},
		{"a transaction of no account", `UPDATE account_transaction SET account_id = 'ghost' WHERE reference = 'r1'`,
			ledger.RuleBalanceChain, "account_id=ghost", "no such account"},
		{"overdrawn", `ALTER TABLE account DROP CONSTRAINT account_not_overdrawn;
		               UPDATE account SET balance = -1 WHERE account_id = 'A'`,
			ledger.RuleNonNegative, "account_id=A", "balance -1"},
		{"overdrawn in the past", `UPDATE account_transaction SET balance_after = -3 WHERE reference = 'd1'`,
			ledger.RuleNonNegative, "seq=1", "balance_after -3"},
		{"reversal of another amount", `UPDATE account_transaction SET amount = 4 WHERE reference = 'r1'`,
			ledger.RuleReversal, "seq=4", "amount 4.0000, but"},
		{"reversal of nothing", `UPDATE account_transaction SET reverses = gen_random_uuid() WHERE reference = 'r1'`,
			ledger.RuleReversal, "seq=4", "does not exist"},
		{"reversal of another account's transaction", `UPDATE account_transaction SET account_id = 'L' WHERE reference = 'd2'`,
			ledger.RuleReversal, "seq=4", "of account L"},
		{"reversed twice", `DROP INDEX account_transaction_reverses_key;
		                    INSERT INTO account_transaction (transaction_id, account_id, seq, type, amount, balance_after, reverses, reference, value_date)
		                    SELECT gen_random_uuid(), account_id, 5, type, amount, balance_after + amount, reverses, 'r2', value_date
		                    FROM account_transaction WHERE reference = 'r1';
		                    UPDATE account SET balance = balance + 5, txn_seq = 5 WHERE account_id = 'A'`,
			ledger.RuleReversal, "seq=5", "reversed 2 times"},
		{"utilization without bookings", `UPDATE limit_window SET utilized = utilized + 1`,
			ledger.RuleLimitUtilization, "limit_window account_id=L period=DAY", "utilized 101"},
		{"a booking in no window", `DELETE FROM limit_window`,
			ledger.RuleLimitUtilization, "limit_booking reference=b1", "does not exist"},
		{"over the limit", `ALTER TABLE limit_window DROP CONSTRAINT limit_window_within_limit;
		                    UPDATE limit_window SET limit_amount = 50`,
			ledger.RuleLimitWithin, "limit_window account_id=L", "utilized 100.0000 of a limit of 50"},
		{"unwound without a record", `ALTER TABLE fx_contract DROP CONSTRAINT fx_contract_unwind_record;
		                              UPDATE fx_contract SET unwound_at = NULL WHERE reference = 'k2'`,
			ledger.RuleFXUnwindRecord, "reference=k2", "UNWOUND with unwound_at none"},
		{"booked with an unwind record", `ALTER TABLE fx_contract DROP CONSTRAINT fx_contract_unwind_record;
		                                  UPDATE fx_contract SET unwind_reason = 'x' WHERE reference = 'k1'`,
			ledger.RuleFXUnwindRecord, "reference=k1", "BOOKED"},
		{"a zero amount", `ALTER TABLE fx_contract DROP CONSTRAINT fx_contract_credit_positive;
		                   UPDATE fx_contract SET credit_amount = 0 WHERE reference = 'k1'`,
			ledger.RulePositiveAmount, "reference=k1", "credit_amount 0"},
		{"a negative transaction", `ALTER TABLE account_transaction DROP CONSTRAINT account_transaction_amount_positive,
		                                                DROP CONSTRAINT account_transaction_fee_within;
		                            UPDATE account_transaction SET amount = -30 WHERE reference = 'd1'`,
			ledger.RulePositiveAmount, "seq=1", "amount -30"},
		{"a fraction of a cent", `UPDATE fx_contract SET credit_amount = 11.005 WHERE reference = 'k1'`,
			ledger.RuleMinorUnits, "reference=k1", "credit_amount 11.0050 USD (2 decimals)"},
		{"a fraction of a yen", `UPDATE account SET currency = 'JPY' WHERE account_id = 'L';
		                         UPDATE account SET opening_balance = 0.5, balance = 0.5 WHERE account_id = 'L'`,
			ledger.RuleMinorUnits, "account_id=L", "opening_balance 0.5000 JPY (0 decimals)"},
		{"a currency the ledger does not know", `UPDATE account SET currency = 'XAU' WHERE account_id = 'L'`,
			ledger.RuleMinorUnits, "account_id=L", "not a currency the ledger knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := goodLedger(t)
			if tt.corrupt != "" {
				if _, err := pool.Exec(ctx, tt.corrupt); err != nil {
					t.Fatalf("corrupt: %v", err)
				}
			}
			vs, err := ledger.Verify(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRule == "" {
				if len(vs) != 0 {
					t.Fatalf("a good ledger has violations: %v", vs)
				}
				return
			}
			for _, v := range vs {
				if v.Rule == tt.wantRule && strings.Contains(v.Row, tt.wantRow) && strings.Contains(v.Detail, tt.wantText) {
					return
				}
			}
			t.Fatalf("no %s violation of %q (%q) among:\n%s", tt.wantRule, tt.wantRow, tt.wantText, list(vs))
		})
	}
}

func list(vs []ledger.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}
