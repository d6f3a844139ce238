package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }

// catalog describes a database's schema, one sorted line per column,
// constraint, index, trigger and function (paydispatch's bookkeeping
// tables left out), so two databases can be compared.
func catalog(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	const q = `
	SELECT format('column %s.%s #%s %s null=%s default=%s', c.relname, a.attname,
	              row_number() OVER (PARTITION BY c.relname ORDER BY a.attnum),
	              format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
	FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT format('table %s options=%s', c.relname, c.reloptions)
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'
	UNION ALL
	SELECT format('constraint %s %s %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
	FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = 'public'
	UNION ALL
	SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public'
	UNION ALL
	SELECT format('trigger %s', pg_get_triggerdef(t.oid))
	FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'public' AND NOT t.tgisinternal
	UNION ALL
	SELECT format('function %s', pg_get_functiondef(p.oid))
	FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`
	rows, err := pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	lines = slices.DeleteFunc(lines, func(l string) bool {
		return strings.Contains(l, postgres.MigrationsTable) || strings.Contains(l, postgres.ScriptsTable)
	})
	slices.Sort(lines)
	return lines
}

// functions lists the database's functions, trigger functions among
// them, with their definitions: not a column's default (outbox_uuidv7),
// which is part of its table's DDL and stays in the migration creating
// the table.
func functions(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', pg_get_functiondef(p.oid)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public'
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.refobjid = p.oid AND d.classid = 'pg_attrdef'::regclass)`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var sig, def string
		if err := rows.Scan(&sig, &def); err != nil {
			t.Fatal(err)
		}
		out[sig] = def
	}
	return out
}

// fromScripts is what the repeatable scripts alone define: they are run
// on an empty database (bodies unchecked, since the tables are missing).
func fromScripts(t *testing.T) map[string]string {
	t.Helper()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	for _, s := range schema.Schema().Scripts {
		if _, err := pool.Exec(ctx, "SET check_function_bodies = off;\n"+s.SQL); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	return functions(t, pool)
}

func equalFunctions(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for sig, def := range want {
		if got[sig] == "" {
			t.Errorf("%s: function %s of the scripts is missing", what, sig)
		} else if got[sig] != def {
			t.Errorf("%s: function %s differs from its script:\n%s\nwant\n%s", what, sig, got[sig], def)
		}
	}
	for sig := range got {
		if _, ok := want[sig]; !ok {
			t.Errorf("%s: function %s is in no script (left over: drop it in its script)", what, sig)
		}
	}
}

// TestFunctionsMatchTheirFiles: the functions of a migrated database are
// exactly those of the repeatable scripts (pacing/migrations/functions.sql and the like): none
// missing, none different, none left over.
func TestFunctionsMatchTheirFiles(t *testing.T) {
	t.Parallel()
	want := fromScripts(t)
	if len(want) < 7 {
		t.Fatalf("the scripts define %d functions", len(want))
	}
	equalFunctions(t, "fresh database", functions(t, pgtest.NewPool(t)), want)
}

// oldDatabase builds a database the way the last release before the
// per-package layout did (its 16 migrations, in testdata/v16), with data
// in every table an operator cares about.
func oldDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), os.DirFS("testdata/v16"),
		goose.WithTableName(postgres.MigrationsTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if res, err := p.Up(ctx); err != nil || len(res) != 16 {
		t.Fatalf("old migrations: %d applied, %v", len(res), err)
	}
	for _, stmt := range []string{
		`UPDATE exec_rate_config SET batch_size = 700, pacing_config = 'payments' WHERE item_type = 'PAYMENT'`,
		`INSERT INTO tenant_capacity (item_type, tenant_id, max_in_flight, tier) VALUES ('PAYMENT', 'acme', 5, 'GOLD')`,
		`INSERT INTO pacing_config (config_name, max_per_window, window_ms) VALUES ('payments', 10, 1000), ('acme-rail', 2, 1000)`,
		`INSERT INTO tenant_pacing (item_type, tenant_id, pacing_config) VALUES ('PAYMENT', 'acme', 'acme-rail')`,
		`SELECT * FROM pacing_assign('payments', 1000, 10, 100, '2030-01-01T16:00:00Z', ARRAY['old-1'], ARRAY[0.5])`,
		`INSERT INTO payments (payment_id, tenant_id, debtor_account, amount, currency, creditor_name, creditor_iban,
		        requested_execution_time, scheduled_execution_time, status, request)
		 VALUES ('old-1', 'acme', 'ACC-1', 125.00, 'EUR', 'Jane Doe', 'DE89370400440532013000',
		        '2030-01-01T16:00:00Z', '2030-01-01T16:00:00Z', 'SCHEDULED',
		        '{"paymentId":"old-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"125.00","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T16:00:00Z"}')`,
		`INSERT INTO exec_context (item_type, item_id, context) VALUES ('PAYMENT', 'old-1', '{"v":1}')`,
		`INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time, paced) VALUES ('PAYMENT', 'old-1', 'acme', now() - interval '1 minute', true)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return pool
}

// TestUpgradeFromTheOldLayout: a database made by the old single
// migration directory migrates to the per-package layout with its data
// and settings, ends with the schema a fresh database has, and serves its
// payments, queue items, slots and tenant configs.
func TestUpgradeFromTheOldLayout(t *testing.T) {
	t.Parallel()
	pool := oldDatabase(t)
	ctx := context.Background()
	applied, err := migrate(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Scripts) != len(schema.Schema().Scripts) {
		t.Fatalf("scripts applied: %v", applied.Scripts)
	}
	for _, m := range applied.Migrations {
		if m.Version <= 16 {
			t.Errorf("migration %d re-applied on an old database", m.Version)
		}
	}
	if again, err := migrate(ctx, pool, nil); err != nil || !again.Empty() {
		t.Fatalf("second run: %+v, %v", again, err)
	}

	if got, want := catalog(t, pool), catalog(t, pgtest.NewPool(t)); !slices.Equal(got, want) {
		for _, l := range got {
			if !slices.Contains(want, l) {
				t.Errorf("upgraded only: %s", l)
			}
		}
		for _, l := range want {
			if !slices.Contains(got, l) {
				t.Errorf("fresh only:    %s", l)
			}
		}
	}
	equalFunctions(t, "upgraded database", functions(t, pool), fromScripts(t))

	// The operator's settings stayed; registration did not reset them.
	// The former defaults became the current ones (the execution
	// workflow, the cycle, the executions in flight).
	q := queue.New(pool)
	cfg, err := q.GetConfig(ctx, payment.ItemType)
	if err != nil || cfg.BatchSize != 700 || cfg.PacingConfig != "payments" || cfg.MaxInFlight != 4000 || cfg.PacedLead != 6*time.Second ||
		cfg.ExecWorkflowType != payment.ExecWorkflowName || cfg.DispatchInterval != 2*time.Second {
		t.Fatalf("PAYMENT config after the upgrade: %+v, %v", cfg, err)
	}
	caps, err := q.ListTenantCapacity(ctx, payment.ItemType)
	if err != nil || len(caps) != 1 || caps[0].MaxInFlight != 5 || caps[0].Tier != "GOLD" {
		t.Fatalf("tenant caps: %+v, %v", caps, err)
	}
	lim := pacing.New(pacing.Config{Pool: pool})
	tenants, err := lim.TenantConfigs(ctx, payment.ItemType, []string{"acme"})
	if err != nil || tenants["acme"] != "acme-rail" {
		t.Fatalf("tenant pacing: %v, %v", tenants, err)
	}
	slot, err := lim.Assign(ctx, "payments", "old-1", time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC))
	if err != nil || slot.Status != pacing.StatusExisting {
		t.Fatalf("the old slot: %+v, %v", slot, err)
	}
	if _, err := lim.Assign(ctx, "payments", "new-1", time.Date(2030, 1, 1, 16, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("a new slot: %v", err)
	}
	// The old payment keeps its id as its key, and is found by its
	// tenant's id; the id is now acme's: globex may use it, and acme may
	// not use it again for another payment.
	store := payment.NewStore(pool)
	p, err := store.Find(ctx, "acme", "old-1")
	if err != nil || p.Key != "old-1" || p.Status != payment.StatusScheduled || p.Money == nil || p.Money.Amount.String() != "125" {
		t.Fatalf("the old payment: %+v, %v", p, err)
	}
	if byKey, err := store.Get(ctx, "old-1"); err != nil || byKey.PaymentID != "old-1" {
		t.Fatalf("the old payment by its key: %+v, %v", byKey, err)
	}
	theirs := p.Request
	theirs.TenantID = "globex"
	if created, err := store.Record(ctx, theirs, p.Money, payment.StatusScheduled, "", p.ScheduledExecutionTime); err != nil || !created {
		t.Fatalf("globex's payment old-1: %v, %v", created, err)
	}
	if _, err := store.Find(ctx, "globex", "old-1"); err != nil {
		t.Fatalf("globex's payment old-1: %v", err)
	}
	again := p.Request
	again.Amount = "1.00"
	if _, err := store.Record(ctx, again, p.Money, payment.StatusScheduled, "", p.ScheduledExecutionTime); !errors.Is(err, payment.ErrConflict) {
		t.Fatalf("acme's old-1 used again for another payment: %v", err)
	}
	b, err := q.ClaimBatch(ctx, cfg.ClaimParams())
	if err != nil || len(b.Items) != 1 || b.Items[0].ID != "old-1" || !b.Items[0].Paced || !json.Valid(b.Items[0].Context) {
		t.Fatalf("claim of the old item: %+v, %v", b, err)
	}
}

// TestPaymentItemTypeRegistered: a new database has PAYMENT's own
// configuration, from the payment package's constants.
func TestPaymentItemTypeRegistered(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	if _, err := migrate(context.Background(), pool, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := queue.New(pool).GetConfig(context.Background(), payment.ItemType)
	if err != nil {
		t.Fatal(err)
	}
	want := payment.ItemTypeConfig()
	want.CreatedAt, want.UpdatedAt = cfg.CreatedAt, cfg.UpdatedAt
	if cfg != want {
		t.Fatalf("PAYMENT config = %+v\nwant %+v", cfg, want)
	}
	if cfg.ExecWorkflowType != payment.ExecWorkflowName || cfg.ExecTaskQueue != payment.ExecTaskQueue || cfg.MaxInFlight != 4000 {
		t.Fatalf("PAYMENT runs %s on %s, max in flight %d", cfg.ExecWorkflowType, cfg.ExecTaskQueue, cfg.MaxInFlight)
	}
}

// TestEveryDownUndoesItsUp: from the newest version down to each older one
// and up again, so that every Down section runs against the schema it
// meant to undo and leaves one the later Ups apply on.
func TestEveryDownUndoesItsUp(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	if _, err := migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	want := catalog(t, pool)
	p := migrations(t, pool)
	sources := p.ListSources()
	for i := len(sources) - 2; i >= -1; i-- {
		to := int64(0)
		if i >= 0 {
			to = sources[i].Version
		}
		if _, err := p.DownTo(ctx, to); err != nil {
			t.Fatalf("down to %d: %v", to, err)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("up again from %d: %v", to, err)
		}
	}
	if got := catalog(t, pool); !slices.Equal(got, want) {
		t.Fatalf("the schema after the round trips differs from the first (%d lines, want %d)", len(got), len(want))
	}
	// The functions work on the tables the Ups recreated.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pacing_assign('c', 4000, 100, 3, now(), ARRAY['a','b'], ARRAY[0.5,0.5], NULL)`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("pacing_assign after the round trips: %d rows, %v", n, err)
	}
}

// TestUpgradeKeepsAccountsAndPayments: accounts and payments stored before
// ids were scoped to tenants (the schema up to migration 30) keep their
// ids as their keys: found by their tenant's ids, posted to, and their
// ids are their tenants' own from then on.
func TestUpgradeKeepsAccountsAndPayments(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	p := migrations(t, pool)
	if _, err := p.UpTo(ctx, 30); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO account (account_id, tenant_id, currency, opening_balance, balance, limit_based) VALUES ('OLD-1', 'acme', 'EUR', 100, 100, false)`,
		`INSERT INTO payments (payment_id, tenant_id, debtor_account, amount, currency, creditor_name, requested_execution_time, status, request)
		 VALUES ('old-p', 'acme', 'OLD-1', 1, 'EUR', 'Jane Doe', '2030-01-01T16:00:00Z', 'REJECTED', '{"paymentId":"old-p","tenantId":"acme"}')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}

	a, err := account.Find(ctx, pool, "acme", "OLD-1")
	if err != nil || a.AccountID != "OLD-1" || a.External() != "OLD-1" {
		t.Fatalf("the old account by acme's id: %+v, %v", a, err)
	}
	if _, err := account.Find(ctx, pool, "globex", "OLD-1"); ledger.CodeOf(err) != ledger.CodeAccountNotFound {
		t.Fatalf("the old account for globex: %v", err)
	}
	found, err := account.Lookup(ctx, pool, []account.Ref{{TenantID: "acme", ExternalID: "OLD-1"}})
	if s := found[account.Ref{TenantID: "acme", ExternalID: "OLD-1"}]; err != nil || s.AccountID != "OLD-1" {
		t.Fatalf("Phase A's lookup of the old account: %+v, %v", found, err)
	}
	if _, err := account.Debit(ctx, pool, account.Entry{AccountID: "OLD-1", Amount: decimal.RequireFromString("10"), Currency: "EUR", Reference: "p:CreateTransaction"}); err != nil {
		t.Fatalf("a debit of the old account: %v", err)
	}
	svc := service.New(pool)
	same := service.NewAccount{Spec: account.Spec{AccountID: "OLD-1", TenantID: "acme", Currency: "EUR", OpeningBalance: decimal.RequireFromString("100")}}
	if v, created, err := svc.CreateAccount(ctx, same); err != nil || created || v.AccountID != "OLD-1" || !v.Balance.Equal(decimal.RequireFromString("90")) {
		t.Fatalf("the old account created again: %+v, %v, %v", v, created, err)
	}
	theirs := same
	theirs.TenantID = "globex"
	if v, created, err := svc.CreateAccount(ctx, theirs); err != nil || !created || v.AccountID == "OLD-1" {
		t.Fatalf("globex's OLD-1: %+v, %v, %v", v, created, err)
	}
	if pay, err := payment.NewStore(pool).Find(ctx, "acme", "old-p"); err != nil || pay.Key != "old-p" {
		t.Fatalf("the old payment by acme's id: %+v, %v", pay, err)
	}
}

// migrations is a goose provider of the whole schema's migrations on pool,
// to take it to a given version.
func migrations(t *testing.T, pool *pgxpool.Pool) *goose.Provider {
	t.Helper()
	files, err := schema.Schema().Files()
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), files,
		goose.WithTableName(postgres.MigrationsTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestUpgradeStagesReceivedPayments: payments stored RECEIVED before a
// payment's row was written once move into their intake rows, found by
// their tenant's id as before, and back again on the way down.
func TestUpgradeStagesReceivedPayments(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	p := migrations(t, pool)
	if _, err := p.UpTo(ctx, 37); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                       creditor_iban, requested_execution_time, status)
		 VALUES ('k-1', 'p-1', 'acme', 'ACC-1', 12.5, 'EUR', 'Jane Doe', 'DE89370400440532013000', '2030-01-01T16:00:00Z', 'RECEIVED'),
		        ('k-2', 'p-2', 'acme', 'ACC-1', 7, 'EUR', 'John Doe', NULL, '2030-01-01T16:00:00Z', 'SCHEDULED')`,
		`INSERT INTO payment_intake (init_workflow_id, payment_ids) VALUES ('init-1', '{k-1}')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	store := payment.NewStore(pool)
	for _, tt := range []struct {
		id     string
		status payment.Status
	}{{"p-1", payment.StatusReceived}, {"p-2", payment.StatusScheduled}} {
		got, err := store.Find(ctx, "acme", tt.id)
		if err != nil || got.Status != tt.status || got.Money == nil {
			t.Fatalf("%s after the upgrade: %+v, %v; want %s", tt.id, got, err, tt.status)
		}
	}
	if got, _ := store.Find(ctx, "acme", "p-1"); got.Key != "k-1" || got.Amount != "12.50" || got.Creditor.IBAN != "DE89370400440532013000" {
		t.Fatalf("the staged payment: %+v", got)
	}
	var received int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'RECEIVED'`).Scan(&received); err != nil || received != 0 {
		t.Fatalf("%d payments still RECEIVED in payments (%v)", received, err)
	}
	if _, err := p.DownTo(ctx, 37); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM payments WHERE payment_id = 'k-1' AND creditor_bic IS NULL`).Scan(&status); err != nil || status != "RECEIVED" {
		t.Fatalf("k-1 after the way down: %q, %v", status, err)
	}
}

// migrate applies paydispatch's schema and registers the payments' item
// type, as serve does at start.
func migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (postgres.Applied, error) {
	applied, err := postgres.Migrate(ctx, pool, schema.Schema(), logger)
	if err != nil {
		return applied, err
	}
	return applied, payment.RegisterItemType(ctx, queue.New(pool))
}
