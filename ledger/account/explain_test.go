package account_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// TestHotQueriesUseIndexes checks the plans of the hot statements: the
// bulk lookup, the recent transactions, and every statement inside
// ledger_post (read from auto_explain, which sees the nested statements
// with the plans plpgsql really uses), on 200,000 accounts and as many
// transactions, where a scan would show.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, sql := range []string{
		`INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based)
		 SELECT 'B-' || g, 'B-' || g, 't', 'EUR', 1000000, 1000000, false FROM generate_series(1, 200000) g`,
		`UPDATE account SET txn_seq = 10`,
		`INSERT INTO account_transaction (transaction_id, account_id, seq, type, amount, balance_after, reference, value_date)
		 SELECT gen_random_uuid(), 'B-' || (g % 200000 + 1), g / 200000 + 1, 'DEBIT', 1, 0, 'bulk-' || g, current_date
		 FROM generate_series(0, 199999) g`,
		`ANALYZE account; ANALYZE account_transaction`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]account.Ref, 1000)
	for i := range ids {
		ids[i] = account.Ref{TenantID: "t", ExternalID: fmt.Sprintf("B-%d", 1+i*17)}
	}
	plan := func(f func(ctx context.Context, tx pgx.Tx)) string {
		return pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { f(ctx, tx); return nil })
	}
	tests := []struct {
		name, plan, index string
	}{
		{"bulk lookup", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = account.Lookup(ctx, tx, ids) }), "account_external_key"},
		{"find by the tenant's id", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = account.Find(ctx, tx, "t", "B-1") }), "account_external_key"},
		{"find in every tenant", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = account.Find(ctx, tx, "", "B-1") }), "account_external_key"},
		{"get account", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = account.Get(ctx, tx, "B-1") }), "account_pkey"},
		{"recent transactions", plan(func(ctx context.Context, tx pgx.Tx) { _, _ = account.Transactions(ctx, tx, "B-1", 20) }), "account_transaction_seq_key"},
	}

	// The statements inside ledger_post, as executed: auto_explain reports
	// each nested statement's plan to the client as a notice.
	cfg := pool.Config().ConnConfig.Copy()
	var mu sync.Mutex
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LOAD 'auto_explain'`); err != nil {
		t.Skipf("auto_explain not available (needs a superuser): %v", err)
	}
	for _, set := range []string{"auto_explain.log_min_duration = 0", "auto_explain.log_nested_statements = on",
		"auto_explain.log_level = notice", "client_min_messages = notice"} {
		if _, err := conn.Exec(ctx, "SET "+set); err != nil {
			t.Fatal(err)
		}
	}
	// Enough calls that plpgsql settles on its cached (generic) plans.
	var last account.Posted
	for i := range 8 {
		p, err := account.Debit(ctx, conn, account.Entry{AccountID: "B-42", Amount: dec("1"), Currency: "EUR", Reference: "explain-" + uuid.NewString()})
		if err != nil {
			t.Fatalf("debit %d: %v", i, err)
		}
		last = p
	}
	if _, err := account.Reverse(ctx, conn, account.Reversal{TransactionID: last.TransactionID, Reference: "explain-reverse"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	nested := strings.Join(notices, "\n----\n")
	mu.Unlock()
	tests = append(tests,
		struct{ name, plan, index string }{"ledger_post: lock the account", nested, "account_pkey"},
		struct{ name, plan, index string }{"ledger_post: replay by reference", nested, "account_transaction_reference_key"},
		struct{ name, plan, index string }{"ledger_post: the reversed transaction", nested, "account_transaction_pkey"},
		struct{ name, plan, index string }{"ledger_post: reversed once", nested, "account_transaction_reverses_key"},
	)
	for _, tt := range tests {
		if !strings.Contains(tt.plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.name, tt.index, short(tt.plan))
		}
		if strings.Contains(tt.plan, "Seq Scan on account") {
			t.Errorf("%s scans a table:\n%s", tt.name, short(tt.plan))
		}
	}
	if len(notices) < 8*4 {
		t.Errorf("auto_explain reported %d plans; want every nested statement", len(notices))
	}
}

// short keeps a failure message readable: plans quote 1,000 ids.
func short(plan string) string {
	var out []string
	for _, line := range strings.Split(plan, "\n") {
		if len(line) > 160 {
			line = line[:160] + "..."
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
