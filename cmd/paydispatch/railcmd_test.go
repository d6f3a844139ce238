package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestRailCommands: rail, calendar, routing and config tenant-cutoff
// set what they are told and print it; a field changed alone keeps the
// rail's others; bad input exits 2 with one line naming the flag (or
// word) and the fix, and stores nothing; show and list print what is
// stored.
func TestRailCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []pacing.Limit{{Name: "sepa", MaxPerWindow: 10, Window: time.Second, Headroom: 100}, {Name: "inst", MaxPerWindow: 4, Window: 2 * time.Second, Headroom: 100}} {
		if _, err := pacing.New(pacing.Config{Pool: pool}).PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"DATABASE_URL": url}
	year := time.Now().UTC().Year()
	steps := []struct {
		args       []string
		code       int
		out, errOf string // out: stdout, or a part of it when it ends in "…"
	}{
		{[]string{"rail", "set", "SEPA", "--rate-limit-config", "sepa"}, 2, "", "--type: rail SEPA is new: name its type, SEPA_JSON or PACS008"},
		{[]string{"rail", "set", "SEPA", "--type", "SEPA_JSON", "--rate-limit-config", "sepa", "--time-zone", "Europe/Berlin", "--opens", "07:00", "--cutoff", "16:00", "--calendar", "TARGET2"}, 0,
			"SEPA type=SEPA_JSON endpoint= rate-limit-config=sepa time-zone=Europe/Berlin opens=07:00:00 cutoff=16:00:00 calendar=TARGET2 active=true version=1\n", ""},
		{[]string{"rail", "set", "SEPA", "--cutoff", "17:30"}, 0,
			"SEPA type=SEPA_JSON endpoint= rate-limit-config=sepa time-zone=Europe/Berlin opens=07:00:00 cutoff=17:30:00 calendar=TARGET2 active=true version=2\n", ""},
		{[]string{"rail", "set", "SEPA", "--cutoff", "25:00"}, 2, "", `--cutoff "25:00": want a time of day HH:MM:SS`},
		{[]string{"rail", "set", "SEPA", "--cutoff", "06:00"}, 2, "", "--cutoff: want a time of day after opens"},
		{[]string{"rail", "set", "SEPA", "--type", "FAX", "--time-zone", "Mars/Olympus"}, 2, "", "--type: want one of SEPA_JSON, PACS008; --time-zone: want an IANA time zone name"},
		{[]string{"rail", "set", "INST", "--type", "PACS008", "--rate-limit-config", "sepa"}, 2, "", "--rate-limit-config: rail SEPA paces by it already"},
		{[]string{"rail", "set", "INST", "--type", "PACS008", "--calendar", "NOPE"}, 2, "", "--calendar: no calendar of that name"},
		{[]string{"rail", "set", "bad name", "--type", "PACS008"}, 2, "", `NAME "bad name": a rail's name is 1 to 64 letters`},
		{[]string{"rail", "set", "INST", "--type", "PACS008", "--endpoint", "https://rail\x01.example"}, 2, "", "--endpoint: text without control characters"},
		{[]string{"rail", "set"}, 2, "", "want 'paydispatch rail set NAME"},
		{[]string{"rail", "fly"}, 2, "", `unknown subcommand "fly": want set or list or show`},
		{[]string{"rail", "list"}, 0, "DEFAULT type=SEPA_JSON endpoint= rate-limit-config= time-zone=UTC opens=00:00:00 cutoff= calendar= active=true version=1\n" +
			"SEPA type=SEPA_JSON endpoint= rate-limit-config=sepa time-zone=Europe/Berlin opens=07:00:00 cutoff=17:30:00 calendar=TARGET2 active=true version=2\n", ""},
		{[]string{"rail", "show", "NOPE"}, 2, "", `no rail "NOPE"`},

		{[]string{"calendar", "set", "BANK", "--weekend", "sat,SUNDAY", "--closing", "2026-12-31,2026-12-24"}, 0, "BANK weekend=SAT,SUN closing-days=2\n", ""},
		{[]string{"calendar", "set", "BANK", "--weekend", "Caturday"}, 2, "", `--weekend "Caturday": want days of the week`},
		{[]string{"calendar", "set", "BANK", "--closing", "2026-02-30"}, 2, "", `--closing "2026-02-30": want dates YYYY-MM-DD`},
		{[]string{"calendar", "set", "BANK", "--weekend", "MON,TUE,WED,THU,FRI,SAT,SUN"}, 2, "", "--weekend: at most 6 days"},
		{[]string{"calendar", "set", "Target2"}, 2, "", `NAME "Target2": TARGET2 and WEEKDAYS are built in and cannot be changed`},
		{[]string{"calendar", "list"}, 0, "TARGET2 built-in weekend=SAT,SUN closing-days=12\nWEEKDAYS built-in weekend=SAT,SUN closing-days=0\nBANK operator's weekend=SAT,SUN closing-days=2\n", ""},
		{[]string{"calendar", "show", "TARGET2"}, 0, fmt.Sprintf(`…"%d-12-25",`, year), ""},
		{[]string{"calendar", "show", "NOPE"}, 2, "", `no calendar "NOPE"`},
		{[]string{"rail", "set", "INST", "--type", "PACS008", "--rate-limit-config", "inst", "--calendar", "BANK", "--cutoff", "24:00"}, 0,
			"INST type=PACS008 endpoint= rate-limit-config=inst time-zone=UTC opens=00:00:00 cutoff=24:00:00 calendar=BANK active=true version=1\n", ""},

		{[]string{"routing", "set", "rail=SEPA,tenant=acme,currency=eur,min=0,max=99999.99,source=file", "rail=INST,source=API", "rail=DEFAULT"}, 0,
			"1 rail=SEPA,tenant=acme,currency=EUR,min=0,max=99999.99,source=FILE\n2 rail=INST,source=API\n3 rail=DEFAULT\n", ""},
		{[]string{"routing", "set", "rail=SEPA,min=1e3"}, 2, "", `RULE 1 (rail=SEPA,min=1e3): min: not a plain decimal number: "1e3": no exponent`},
		{[]string{"routing", "set", "rail=DEFAULT", "tenant=acme"}, 2, "", "RULE 2 (tenant=acme): rail=NAME is required"},
		{[]string{"routing", "set", "rail=DEFAULT", "rail=SEPA,speed=fast"}, 2, "", `RULE 2 (rail=SEPA,speed=fast): unknown key "speed"`},
		{[]string{"routing", "set", "rail=SEPA,min=10,max=5,source=FAX"}, 2, "", "RULE 1 (rail=SEPA,min=10,max=5,source=FAX): source: want API, FILE or KAFKA, or none for any; RULE 1 (rail=SEPA,min=10,max=5,source=FAX): maxAmount"},
		{[]string{"routing", "set", "rail=GHOST"}, 2, "", "RULE 1 (rail=GHOST): rail: no rail of that name"},
		{[]string{"routing", "set"}, 2, "", "want at least one RULE"},
		{[]string{"routing", "list"}, 0, "1 rail=SEPA,tenant=acme,currency=EUR,min=0,max=99999.99,source=FILE\n2 rail=INST,source=API\n3 rail=DEFAULT\n", ""},

		{[]string{"config", "tenant-cutoff", "acme"}, 0, "acme cutoff_rule=ROLL\n", ""},
		{[]string{"config", "tenant-cutoff", "acme", "hold"}, 0, "acme cutoff_rule=HOLD\n", ""},
		{[]string{"config", "tenant-cutoff", "acme", "skip"}, 2, "", `tenant-cutoff acme "skip": want ROLL`},
		{[]string{"config", "tenant-cutoff", "<img>", "HOLD"}, 2, "", `tenant-cutoff "<img>": want a tenant id`},
		{[]string{"config", "tenant-cutoff", "acme"}, 0, "acme cutoff_rule=HOLD\n", ""},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(s.args, env)
		outOK := stdout == s.out
		if part, ok := strings.CutPrefix(s.out, "…"); ok {
			outOK = strings.Contains(stdout, part)
		}
		last := strings.TrimSpace(stderr)
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		if code != s.code || !outOK || (s.errOf != "" && !strings.Contains(last, s.errOf)) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr's last line with %q",
				s.args, code, stdout, stderr, s.code, s.out, s.errOf)
		}
	}
	for sql, want := range map[string]int{
		`SELECT count(*) FROM rail`: 3, `SELECT count(*) FROM calendars`: 1, `SELECT count(*) FROM routing_rule`: 3,
		// rail set ×3, calendar set, routing set, config tenant-cutoff
		`SELECT count(*) FROM admin_audit`: 6,
	} {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d (%v), want %d", sql, n, err, want)
		}
	}

	// rail show: what waits for the rail, as GET /admin/rails/{name}.
	code, stdout, stderr := runCLI([]string{"rail", "show", "INST"}, env)
	var st httpapi.RailStatus
	if code != 0 || json.Unmarshal([]byte(stdout), &st) != nil || st.Name != "INST" || st.Rate == nil || st.Rate.PerSecond != 2 ||
		st.BusinessDay == nil || st.BusinessDay.Cutoff == nil || st.Backlog.Waiting != 0 {
		t.Errorf("rail show: exit %d, stdout %s, stderr %q", code, stdout, stderr)
	}
}

// TestPaymentsRelease: payments release refuses a selection it cannot
// act on (exit 2, one line naming the flag), releases a tenant's HELD
// payments, and prints how many with their slots.
func TestPaymentsRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	if err := payment.RegisterItemType(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "noon", MaxPerWindow: 10, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, pool, routing.Rail{Name: "NOON", Type: routing.TypeSEPAJSON, PacingConfig: "noon", Cutoff: 12 * time.Hour, Active: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.SetTenantCutoffRule(ctx, pool, "holdco", routing.Hold); err != nil {
		t.Fatal(err)
	}
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: account.Key("holdco", "ACC-1"), ExternalID: "ACC-1", TenantID: "holdco",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)}); err != nil {
		t.Fatal(err)
	}
	noon := time.Now().UTC().AddDate(0, 0, 2).Truncate(24 * time.Hour).Add(12 * time.Hour)
	var rs []payment.Request
	for i := range 3 {
		rs = append(rs, payment.Request{PaymentID: fmt.Sprintf("h-%d", i), TenantID: "holdco", DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: noon.Add(-time.Second), Rail: "NOON"})
	}
	init := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim, Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
	if res, err := init.InitChunk(ctx, rs, "init-holdco"); err != nil || res.Held != 3 {
		t.Fatalf("Phase A: %+v, %v", res, err)
	}
	env := map[string]string{"DATABASE_URL": url}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"payments", "release"}, "--tenant, --batch or --rail: name whose held payments to release"},
		{[]string{"payments", "release", "--ids", "h-0"}, "--ids: ids are a tenant's own: name the tenant with --tenant"},
		{[]string{"payments", "release", "--tenant", "a b"}, `--tenant "a b": want a tenant id`},
		{[]string{"payments", "release", "--rail", "bad rail"}, `--rail "bad rail": a rail's name`},
		{[]string{"payments", "release", "--tenant", "holdco", "--ids", "h-0,bad id"}, `--ids: "bad id" is no payment id`},
		{[]string{"payments", "release", "--batch", "batch-nope"}, `--batch "batch-nope": no such file`},
		{[]string{"payments", "release", "--tenant", "holdco", "extra"}, "want 'paydispatch payments release"},
	} {
		if code, out, stderr := runCLI(bad.args, env); code != 2 || out != "" || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", bad.args, code, out, stderr, bad.want)
		}
	}
	if code, out, stderr := runCLI([]string{"payments", "cancel", "--tenant", "holdco", "--status", "held", "--dry-run"}, env); code != 0 ||
		out != "would cancel (dry run, nothing changed): 3\n" {
		t.Fatalf("a dry-run cancel of the held: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runCLI([]string{"payments", "release", "--tenant", "holdco", "--ids", "h-0", "--rail", "NOON"}, env); code != 0 ||
		!strings.HasPrefix(out, "released: 1\nstill held: 0\nslots: ") {
		t.Fatalf("release one: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runCLI([]string{"payments", "release", "--rail", "NOON"}, env); code != 0 || !strings.HasPrefix(out, "released: 2\n") {
		t.Fatalf("release the rest: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runCLI([]string{"payments", "release", "--rail", "NOON"}, env); code != 0 || out != "released: 0\nstill held: 0\n" {
		t.Fatalf("release none: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	var held, entries int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'HELD'), (SELECT count(*) FROM admin_audit WHERE action = 'payments release')`).Scan(&held, &entries); err != nil ||
		held != 0 || entries != 2 {
		t.Errorf("%d still held, %d audit entries (%v); want 0 and 2", held, entries, err)
	}
}
