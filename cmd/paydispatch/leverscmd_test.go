package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// leverPayments is a database with acme's payments acme-000 to acme-002
// waiting on the rail SEPA, acme-000 and acme-001 the file b-1; its URL.
func leverPayments(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.URL(t)
	ctx := context.Background()
	pool, err := postgres.NewPool(ctx, url, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	must(payment.RegisterItemType(ctx, q))
	_, err = lim.PutConfig(ctx, pacing.Limit{Name: "sepa", MaxPerWindow: 10, Window: time.Second, Headroom: 1000})
	must(err)
	_, err = routing.PutRail(ctx, pool, routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, PacingConfig: "sepa", Active: true})
	must(err)
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: account.Key("acme", "ACC-1"), ExternalID: "ACC-1", TenantID: "acme",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
	must(err)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	rs := make([]payment.Request, 3)
	for i := range rs {
		rs[i] = payment.Request{PaymentID: fmt.Sprintf("acme-%03d", i), TenantID: "acme", DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: at, Rail: "SEPA"}
	}
	init := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim, Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
	if res, err := init.InitChunk(ctx, rs, "init-acme"); err != nil || res.Scheduled != 3 {
		t.Fatalf("acme's payments: %+v, %v", res, err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks) VALUES ('b-1', '{acme}', 2, 1)`)
	must(err)
	_, err = pool.Exec(ctx, `INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES ('b-1', 0, $1)`,
		[]string{payment.Key("acme", "acme-000"), payment.Key("acme", "acme-001")})
	must(err)
	return url, pool
}

// TestLeversCommand: payments pause, resume, pauses and priority refuse
// input they cannot act on (exit 2, one error line naming the flag,
// nothing changed), and otherwise act on the database as the API does, print
// what they did, and record it in the audit log as cli:<user>.
func TestLeversCommand(t *testing.T) {
	t.Parallel()
	url, pool := leverPayments(t)
	env := map[string]string{"DATABASE_URL": url, "USER": "anna"}
	one := func(sql string) string {
		t.Helper()
		var v string
		if err := pool.QueryRow(context.Background(), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	state := func() string {
		return one(`SELECT coalesce((SELECT string_agg(scope || ':' || scope_id, ',') FROM payment_pause), '') || ' ' ||
			(SELECT string_agg(external_id || '=' || priority || '/' || coalesce(paused_by, '-'), ',' ORDER BY external_id) FROM payments) || ' ' ||
			(SELECT count(*) FROM admin_audit)`)
	}
	before := state()
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"payments", "pause"}, "--tenant, --batch or --rail: name the tenant, the file or the rail to pause"},
		{[]string{"payments", "pause", "--tenant", "acme", "--rail", "SEPA"}, "--tenant, --batch and --rail: name one of them"},
		{[]string{"payments", "pause", "--tenant", "ac me"}, `--tenant "ac me": want a tenant id`},
		{[]string{"payments", "pause", "--rail", "SEPA/1"}, `--rail "SEPA/1": a rail's name is`},
		{[]string{"payments", "pause", "--batch", "b-nope"}, `--batch "b-nope": no such file`},
		{[]string{"payments", "pause", "acme"}, "want 'paydispatch payments pause (--tenant T | --batch B | --rail R)'"},
		{[]string{"payments", "resume"}, "--tenant, --batch or --rail: name the tenant, the file or the rail to resume"},
		{[]string{"payments", "resume", "--tenant", "acme"}, `--tenant "acme": not paused`},
		{[]string{"payments", "pauses", "acme"}, "want 'paydispatch payments pauses '"},
		{[]string{"payments", "priority", "--tenant", "acme", "--id", "acme-000"}, "--priority: name the new priority: HIGH, NORMAL or LOW"},
		{[]string{"payments", "priority", "--priority", "URGENT", "--tenant", "acme", "--id", "acme-000"}, `--priority "URGENT": want HIGH, NORMAL or LOW`},
		{[]string{"payments", "priority", "--priority", "HIGH"}, "--id or --batch: name a payment (--tenant and --id) or a file (--batch)"},
		{[]string{"payments", "priority", "--priority", "HIGH", "--id", "acme-000"}, "--id: ids are a tenant's own: name the tenant with --tenant"},
		{[]string{"payments", "priority", "--priority", "HIGH", "--tenant", "acme", "--id", "acme-000", "--batch", "b-1"}, "--id and --batch: name a payment or a file, not both"},
		{[]string{"payments", "priority", "--priority", "HIGH", "--tenant", "acme", "--id", "acme 0"}, `--id "acme 0": want a payment id`},
		{[]string{"payments", "priority", "--priority", "HIGH", "--tenant", "acme", "--id", "acme-999"}, `--id "acme-999": tenant acme has no such payment`},
		{[]string{"payments", "priority", "--priority", "HIGH", "--batch", "b-nope"}, `--batch "b-nope": no such file`},
		{[]string{"payments", "hurry"}, `unknown subcommand "hurry": want cancel or release or reject or pause or resume or pauses or priority`},
	} {
		code, out, stderr := runCLI(bad.args, env)
		if code != 2 || out != "" || !strings.Contains(stderr, bad.want) || strings.Count("\n"+stderr, "\npaydispatch payments: ") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", bad.args, code, out, stderr, bad.want)
		}
		if got := state(); got != before {
			t.Fatalf("%v changed %s to %s", bad.args, before, got)
		}
	}

	slots := regexp.MustCompile(`slots: \S+ to \S+\n`)
	for _, step := range []struct {
		args       []string
		out, state string
	}{
		{[]string{"payments", "pauses"}, "", ""},
		{[]string{"payments", "pause", "--tenant", "acme"}, "paused: TENANT acme\npayments: 3\nparked: 3\n",
			"TENANT:acme acme-000=NORMAL/TENANT:acme,acme-001=NORMAL/TENANT:acme,acme-002=NORMAL/TENANT:acme 1"},
		{[]string{"payments", "pauses"}, "TENANT acme paused_at=", ""},
		{[]string{"payments", "resume", "--tenant", "acme"}, "resumed: TENANT acme\nmoved: 3\nrolled: 0\nheld: 0\nrejected: 0\nclaimed: 0\nslots: ",
			" acme-000=NORMAL/-,acme-001=NORMAL/-,acme-002=NORMAL/- 2"},
		{[]string{"payments", "priority", "--tenant", "acme", "--id", "acme-002", "--priority", "high"}, "changed: 1\nmoved: 3\n",
			" acme-000=NORMAL/-,acme-001=NORMAL/-,acme-002=HIGH/- 3"},
		{[]string{"payments", "priority", "--batch", "b-1", "--priority", "LOW"}, "changed: 2\nmoved: 3\n",
			" acme-000=LOW/-,acme-001=LOW/-,acme-002=HIGH/- 4"},
	} {
		code, out, stderr := runCLI(step.args, env)
		if code != 0 || !strings.HasPrefix(out, step.out) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want %q", step.args, code, out, stderr, step.out)
		}
		if strings.Contains(step.out, "moved: ") && !slots.MatchString(out) {
			t.Errorf("%v: %q, want the slots given", step.args, out)
		}
		if got := state(); step.state != "" && got != step.state {
			t.Errorf("%v: state %s, want %s", step.args, got, step.state)
		}
	}
	if got := one(`SELECT string_agg(actor || ' ' || action || ' ' || target, ', ' ORDER BY seq) FROM admin_audit`); got !=
		"cli:anna payments pause TENANT:acme, cli:anna payments resume TENANT:acme, cli:anna payments priority acme/acme-002, cli:anna payments priority b-1" {
		t.Errorf("audit log: %s", got)
	}
}
