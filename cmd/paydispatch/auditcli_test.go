package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestCLIChangesCommitWithTheirEntry: every command that changes admin
// state records it in the audit log inside the change's transaction. A
// USER that could not be recorded as it is is refused (exit 2) before
// anything is done; when the entry cannot be written (a trigger refuses
// it) the command fails and nothing changed; otherwise the change is made
// with one entry naming the user.
func TestCLIChangesCommitWithTheirEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	c := queue.DefaultSettings("JOB", "JobWorkflow", "jobs")
	c.MaxDispatchRetries = 1
	_, err = q.RegisterItemType(ctx, c)
	must(err)
	_, err = lim.PutConfig(ctx, pacing.Limit{Name: "fifty", MaxPerWindow: 50, Window: time.Second, Headroom: 100})
	must(err)
	_, err = q.SetTenantCapacity(ctx, queue.TenantCapacity{ItemType: "JOB", TenantID: "globex", MaxInFlight: 4})
	must(err)
	_, _, err = lim.SetTenantConfig(ctx, pacing.TenantConfig{ItemType: "JOB", TenantID: "globex", ConfigName: "fifty"})
	must(err)
	must(outbox.SetOrdering(ctx, pool, "globex", outbox.Strict))
	_, tok, err := auth.NewStore(pool).Create(ctx, auth.NewToken{Name: "old", Scopes: []auth.Scope{auth.Admin}})
	must(err)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	_, err = payment.NewStore(pool).Record(ctx, payment.Request{PaymentID: "p-1", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
		Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: at},
		&payment.Money{Amount: decimal.RequireFromString("10.00"), Currency: "EUR"}, payment.StatusScheduled, "", &at)
	must(err)
	// A rail cutting off at noon, and holdco's payment past it, HELD by
	// holdco's rule.
	must(payment.RegisterItemType(ctx, q))
	_, err = routing.PutRail(ctx, pool, routing.Rail{Name: "NOON", Type: routing.TypeSEPAJSON, PacingConfig: "fifty", Cutoff: 12 * time.Hour, Active: true})
	must(err)
	_, err = routing.SetTenantCutoffRule(ctx, pool, "holdco", routing.Hold)
	must(err)
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: account.Key("holdco", "ACC-1"), ExternalID: "ACC-1", TenantID: "holdco",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
	must(err)
	noon := time.Now().UTC().AddDate(0, 0, 2).Truncate(24 * time.Hour).Add(12 * time.Hour)
	held := payment.Request{PaymentID: "h-1", TenantID: "holdco", DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
		Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: noon.Add(-time.Second), Rail: "NOON"}
	init := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim, Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
	if res, err := init.InitChunk(ctx, []payment.Request{held}, "init-holdco"); err != nil || res.Held != 1 {
		t.Fatalf("holdco's payment: %+v, %v", res, err)
	}

	item := "job-" + uuid.NewString()
	tx, err := pool.Begin(ctx)
	must(err)
	_, err = q.EnqueueBatchTx(ctx, tx, []queue.EnqueueParams{{ItemType: "JOB", ItemID: item, TenantID: "acme", ScheduledExecTime: time.Now().Add(-time.Minute)}})
	must(err)
	must(tx.Commit(ctx))
	b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "JOB", BatchSize: 1, PreStartBuffer: time.Minute, MaxRetries: 1})
	must(err)
	_, err = q.ReleaseForRetryBatch(ctx, "JOB", b.ID, []queue.Failure{{ItemID: item, Error: "engine down"}}, 1)
	must(err)

	one := func(sql string, args ...any) string {
		t.Helper()
		var v string
		if err := pool.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	capacity := `SELECT coalesce((SELECT max_in_flight::text FROM tenant_capacity WHERE item_type = 'JOB' AND tenant_id = $1), '')`
	paced := `SELECT coalesce((SELECT config_name FROM pacing_tenant_config WHERE item_type = 'JOB' AND tenant_id = $1), '')`
	ordering := `SELECT coalesce((SELECT ordering_mode FROM outbox_participant_settings WHERE participant_id = $1), '')`
	for _, tt := range []struct {
		args  []string
		state string
		of    []any
	}{
		{[]string{"config", "set", "JOB", "batch_size=7"}, `SELECT batch_size::text FROM exec_rate_config WHERE item_type = 'JOB'`, nil},
		{[]string{"config", "tenant", "JOB", "acme", "max_in_flight=3"}, capacity, []any{"acme"}},
		{[]string{"config", "tenant-delete", "JOB", "globex"}, capacity, []any{"globex"}},
		{[]string{"config", "tenant-pacing", "JOB", "acme", "fifty"}, paced, []any{"acme"}},
		{[]string{"config", "tenant-pacing-delete", "JOB", "globex"}, paced, []any{"globex"}},
		{[]string{"config", "delivery-order", "acme", "STRICT"}, ordering, []any{"acme"}},
		{[]string{"config", "delivery-order-delete", "globex"}, ordering, []any{"globex"}},
		{[]string{"fx-rate", "set", "EUR", "USD", "1.0850"}, `SELECT count(*)::text FROM fx_rate`, nil},
		{[]string{"token", "create", "--scopes", "admin", "--name", "new"}, `SELECT count(*)::text FROM api_tokens`, nil},
		{[]string{"token", "revoke", tok.ID}, `SELECT (revoked_at IS NOT NULL)::text FROM api_tokens WHERE token_id = $1`, []any{tok.ID}},
		{[]string{"dead-letters", "requeue", "dispatch:JOB:" + item, "--config", "fifty"}, `SELECT queue_status FROM exec_queue WHERE item_id = $1`, []any{item}},
		{[]string{"payments", "cancel", "--tenant", "acme"}, `SELECT status FROM payments WHERE payment_id = $1`, []any{payment.Key("acme", "p-1")}},
		{[]string{"payments", "release", "--tenant", "holdco"}, `SELECT status FROM payments WHERE payment_id = $1`, []any{payment.Key("holdco", "h-1")}},
		{[]string{"rail", "set", "NEW", "--type", "PACS008", "--active=false"}, `SELECT string_agg(rail_name, ',' ORDER BY rail_name) FROM rail`, nil},
		{[]string{"calendar", "set", "BANK", "--weekend", "SAT,SUN"}, `SELECT count(*)::text FROM calendars`, nil},
		{[]string{"routing", "set", "rail=NOON,currency=EUR", "rail=DEFAULT"}, `SELECT string_agg(rail_name, ',' ORDER BY position) FROM routing_rule`, nil},
		{[]string{"config", "tenant-cutoff", "acme", "REJECT"}, `SELECT string_agg(tenant_id || '=' || cutoff_rule, ',' ORDER BY tenant_id) FROM tenant_cutoff_rule`, nil},
		{[]string{"approval-rules", "set", "--tenant", "acme", "name=big,approvals=2,min=10000"}, `SELECT coalesce(string_agg(name, ',' ORDER BY position), '') FROM approval_rules WHERE tenant_id = $1`, []any{"acme"}},
		{[]string{"control-settings", "set", "--tenant", "acme", "--duplicate-action", "HOLD"}, `SELECT coalesce((SELECT duplicate_action FROM tenant_control_settings WHERE tenant_id = $1), '')`, []any{"acme"}},
	} {
		name := strings.Join(tt.args[:2], " ")
		entries := func() string { return one(`SELECT count(*)::text FROM admin_audit`) }
		before, entriesBefore := one(tt.state, tt.of...), entries()

		code, out, stderr := runCLI(tt.args, map[string]string{"DATABASE_URL": url, "USER": "ops-\xc3"})
		if code != 2 || out != "" || !strings.Contains(stderr, "USER") {
			t.Fatalf("%s, a USER that is no text: exit %d, stdout %q, stderr %q; want exit 2 naming USER", name, code, out, stderr)
		}
		if got := one(tt.state, tt.of...); got != before || entries() != entriesBefore {
			t.Fatalf("%s, a USER that is no text: state %q → %q, entries %s → %s", name, before, got, entriesBefore, entries())
		}

		_, err := pool.Exec(ctx, `CREATE FUNCTION refuse_entries() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the audit log is full'; END $$;
			CREATE TRIGGER refuse_entries BEFORE INSERT ON admin_audit FOR EACH ROW EXECUTE FUNCTION refuse_entries()`)
		must(err)
		code, out, stderr = runCLI(tt.args, map[string]string{"DATABASE_URL": url, "USER": "anna"})
		if code == 0 || !strings.Contains(stderr, "the audit log is full") {
			t.Fatalf("%s, the entry refused: exit %d, stdout %q, stderr %q; want a failure naming it", name, code, out, stderr)
		}
		if got := one(tt.state, tt.of...); got != before {
			t.Fatalf("%s, the entry refused, but the change is made: %q → %q", name, before, got)
		}
		_, err = pool.Exec(ctx, `DROP TRIGGER refuse_entries ON admin_audit; DROP FUNCTION refuse_entries()`)
		must(err)

		if code, out, stderr := runCLI(tt.args, map[string]string{"DATABASE_URL": url, "USER": "anna"}); code != 0 {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", name, code, out, stderr)
		}
		if got := one(tt.state, tt.of...); got == before {
			t.Fatalf("%s changed nothing: %q", name, got)
		}
		if n := one(`SELECT (count(*) - $1::bigint)::text FROM admin_audit`, entriesBefore); n != "1" {
			t.Fatalf("%s: %s new entries, want 1", name, n)
		}
		if actor := one(`SELECT actor FROM admin_audit ORDER BY seq DESC LIMIT 1`); actor != "cli:anna" {
			t.Fatalf("%s: the entry's actor %q", name, actor)
		}
	}
}
