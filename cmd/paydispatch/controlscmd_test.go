package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestControlsCommandsRefuseBadInput: approval-rules and
// control-settings refuse bad input with exit 2 and one line naming the
// RULE by its place and its key, or the flag, before any database is
// opened (the one named cannot be reached: reaching it would exit 1).
func TestControlsCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"too many approvals", []string{"approval-rules", "set", "--tenant", "acme", "name=big,approvals=2", "name=huge,approvals=11"},
			"RULE 2 (name=huge,approvals=11): approvals: want 1 to 10 approvals"},
		{"approvals not a number", []string{"approval-rules", "set", "--tenant", "acme", "name=big,approvals=two"},
			`RULE 1 (name=big,approvals=two): approvals "two": want a whole number, e.g. approvals=2`},
		{"no approvals", []string{"approval-rules", "set", "--tenant", "acme", "name=big,min=10"}, "RULE 1 (name=big,min=10): approvals: want 1 to 10 approvals"},
		{"no name", []string{"approval-rules", "set", "--tenant", "acme", "approvals=2"}, "RULE 1 (approvals=2): name: want a name of 1 to 64 characters"},
		{"bad min", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,min=1e3"}, "RULE 1 (name=a,approvals=1,min=1e3): min: want a decimal amount"},
		{"bad file total, named by key", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1", "name=b,approvals=1,file-min-total=-5"},
			"RULE 2 (name=b,approvals=1,file-min-total=-5): file-min-total: want a decimal amount"},
		{"bad currency and source", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,currency=EURO,source=FAX"},
			"RULE 1 (name=a,approvals=1,currency=EURO,source=FAX): currency: want an ISO 4217 code such as EUR, or none for any; RULE 1 (name=a,approvals=1,currency=EURO,source=FAX): source: want API, FILE or KAFKA"},
		{"a file's rule from the API", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,file-min-count=10,source=API"},
			"RULE 1 (name=a,approvals=1,file-min-count=10,source=API): source: a rule on a file's total or count matches only files"},
		{"bad debtor", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,debtor=" + strings.Repeat("x", 65)},
			"debtor: want an account id of at most 64 characters"},
		{"two rules, one name", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1", "name=a,approvals=2"},
			"RULE 2 (name=a,approvals=2): name: also the name of"},
		{"unknown key", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,speed=fast"}, `RULE 1 (name=a,approvals=1,speed=fast): unknown key "speed": want name, approvals, min`},
		{"key twice", []string{"approval-rules", "set", "--tenant", "acme", "name=a,approvals=1,name=b"}, "RULE 1 (name=a,approvals=1,name=b): name appears twice"},
		{"not key=value", []string{"approval-rules", "set", "--tenant", "acme", "big"}, `RULE 1 (big): "big": want key=value`},
		{"no tenant", []string{"approval-rules", "set", "name=a,approvals=1"}, "--tenant: required"},
		{"bad tenant", []string{"approval-rules", "set", "--tenant", "a b", "name=a,approvals=1"}, `--tenant "a b": want a tenant id`},
		{"no RULE", []string{"approval-rules", "set", "--tenant", "acme"}, "want at least one RULE"},
		{"RULE and --empty", []string{"approval-rules", "set", "--tenant", "acme", "--empty", "name=a,approvals=1"}, "--empty clears the tenant's rules: give no RULE with it"},
		{"list without tenant", []string{"approval-rules", "list"}, "--tenant: required"},
		{"list with a word", []string{"approval-rules", "list", "--tenant", "acme", "all"}, "want 'paydispatch approval-rules list --tenant T'"},
		{"unknown subcommand", []string{"approval-rules", "show"}, `unknown subcommand "show": want set or list`},

		{"nothing to set", []string{"control-settings", "set", "--tenant", "acme"},
			"want --duplicate-action, --duplicate-window-days or --screening-on-error"},
		{"no tenant for settings", []string{"control-settings", "set", "--duplicate-action", "HOLD"}, "--tenant: required, the tenant whose settings they are"},
		{"bad action and window", []string{"control-settings", "set", "--tenant", "acme", "--duplicate-action", "maybe", "--duplicate-window-days", "91"},
			"--duplicate-action: want WARN, HOLD, REJECT or OFF; --duplicate-window-days: want a whole number of days from 1 to 90"},
		{"window zero", []string{"control-settings", "set", "--tenant", "acme", "--duplicate-window-days", "0"}, "--duplicate-window-days: want a whole number of days from 1 to 90"},
		{"bad screening", []string{"control-settings", "set", "--tenant", "acme", "--screening-on-error", "skip"}, "--screening-on-error: want HOLD, REJECT or ALLOW"},
		{"window not a number", []string{"control-settings", "set", "--tenant", "acme", "--duplicate-window-days", "week"},
			`--duplicate-window-days "week": want a whole number of days, e.g. 14`},
		{"settings with a word", []string{"control-settings", "set", "--tenant", "acme", "--duplicate-action", "HOLD", "now"}, "want 'paydispatch control-settings set --tenant T"},
		{"unknown settings subcommand", []string{"control-settings", "get"}, `unknown subcommand "get": want set or list`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(tt.args, env)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tt.args, code, stdout, stderr, tt.want)
			}
		})
	}
}

// TestControlsCommands: what approval-rules and control-settings set is
// what they list, what the HTTP API's GETs answer, and what the API set
// is what they list; each change is one audit entry naming the user and
// the tenant.
func TestControlsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Pacer: pacing.New(pacing.Config{Pool: pool}),
		Rails: routing.NewResolver(pool, routing.ResolverConfig{})})
	rt, err := httpapi.NewRouter(httpapi.RouterConfig{Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}), Payments: svc,
		Rails: httpapi.RailStore{DB: pool}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(v) != nil {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	env := map[string]string{"DATABASE_URL": url, "USER": "anna"}
	cli := func(want string, args ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(args, env)
		ok := stdout == want
		if part, cut := strings.CutSuffix(want, "…"); cut {
			ok = strings.HasPrefix(stdout, part)
		}
		if code != 0 || !ok {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want exit 0 and stdout %q", args, code, stdout, stderr, want)
		}
	}

	// Approval rules: set, list, and the API's GET.
	rules := "1 name=big-usd,approvals=3,min=500,currency=USD\n" +
		"2 name=large-files,approvals=2,source=FILE,file-min-total=250000.5,file-min-count=100\n" +
		"3 name=treasury,approvals=1,source=API,debtor=ACC-T,rail=SEPA\n"
	cli(rules, "approval-rules", "set", "name=big-usd,approvals=3,min=500.00,currency=usd", "--tenant", "acme",
		"name=large-files,approvals=2,file-min-total=250000.50,file-min-count=100,source=file",
		"name=treasury,approvals=1,debtor=ACC-T,source=API,rail=SEPA")
	cli(rules, "approval-rules", "list", "--tenant", "acme")
	cli("", "approval-rules", "list", "--tenant", "globex")
	var got struct {
		TenantID string                 `json:"tenantId"`
		Rules    []payment.ApprovalRule `json:"rules"`
	}
	getJSON("/admin/approval-rules?tenantId=acme", &got)
	want := []payment.ApprovalRule{{Name: "big-usd", MinAmount: "500", Currency: "USD", Approvals: 3},
		{Name: "large-files", Source: "FILE", FileMinTotal: "250000.5", FileMinCount: 100, Approvals: 2},
		{Name: "treasury", Source: "API", DebtorAccount: "ACC-T", Rail: "SEPA", Approvals: 1}}
	if got.TenantID != "acme" || !reflect.DeepEqual(got.Rules, want) {
		t.Fatalf("GET /admin/approval-rules after the CLI's set: %+v, want %+v", got, want)
	}
	// The API's set is what the CLI lists.
	resp, err := http.Post(srv.URL+"/admin/approval-rules", "application/json",
		strings.NewReader(`{"tenantId":"globex","rules":[{"name":"files","fileMinCount":2,"approvals":2}]}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /admin/approval-rules: %v %v", resp, err)
	}
	resp.Body.Close()
	cli("1 name=files,approvals=2,file-min-count=2\n", "approval-rules", "list", "--tenant", "globex")
	cli("", "approval-rules", "set", "--tenant", "acme", "--empty")
	cli("", "approval-rules", "list", "--tenant", "acme")
	getJSON("/admin/approval-rules?tenantId=acme", &got)
	if len(got.Rules) != 0 {
		t.Fatalf("GET /admin/approval-rules after --empty: %+v", got)
	}

	// Control settings: the flags given set, the others kept.
	cli("acme duplicate-action=HOLD duplicate-window-days=14 screening-on-error=HOLD updated-at=…",
		"control-settings", "set", "--tenant", "acme", "--duplicate-action", "hold", "--duplicate-window-days", "14")
	cli("acme duplicate-action=HOLD duplicate-window-days=14 screening-on-error=ALLOW updated-at=…",
		"control-settings", "set", "--tenant", "acme", "--screening-on-error", "ALLOW")
	resp, err = http.Post(srv.URL+"/admin/control-settings", "application/json", strings.NewReader(`{"tenantId":"globex","duplicateAction":"OFF"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /admin/control-settings: %v %v", resp, err)
	}
	resp.Body.Close()
	code, stdout, stderr := runCLI([]string{"control-settings", "list"}, env)
	lines := strings.Split(stdout, "\n")
	if code != 0 || len(lines) != 4 || lines[0] != "* duplicate-action=WARN duplicate-window-days=7 screening-on-error=HOLD" ||
		!strings.HasPrefix(lines[1], "acme duplicate-action=HOLD duplicate-window-days=14 screening-on-error=ALLOW updated-at=") ||
		!strings.HasPrefix(lines[2], "globex duplicate-action=OFF duplicate-window-days=7 screening-on-error=HOLD updated-at=") {
		t.Fatalf("control-settings list: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var settings struct {
		Default  httpapi.ControlSettingsJSON   `json:"default"`
		Settings []httpapi.ControlSettingsJSON `json:"settings"`
	}
	getJSON("/admin/control-settings", &settings)
	if len(settings.Settings) != 2 || settings.Settings[0].TenantID != "acme" || settings.Settings[0].DuplicateAction != payment.DuplicateHold ||
		settings.Settings[0].DuplicateWindowDays != 14 || settings.Settings[0].ScreeningOnError != payment.ScreeningAllow ||
		settings.Default.DuplicateAction != payment.DuplicateWarn {
		t.Fatalf("GET /admin/control-settings after the CLI's set: %+v", settings)
	}
	// Phase A reads them through the store's read.
	of, err := payment.NewStore(pool).ControlSettings(ctx, []string{"acme"})
	if err != nil || of["acme"].DuplicateAction != payment.DuplicateHold || of["acme"].DuplicateWindowDays != 14 || of["acme"].ScreeningOnError != payment.ScreeningAllow {
		t.Fatalf("the store's read of acme's settings: %+v, %v", of, err)
	}

	// One entry a change, naming the user and the tenant, with what was set.
	var entries []string
	rows, err := pool.Query(ctx, `SELECT actor || ' ' || action || ' ' || target || ' ' || detail::text FROM admin_audit
		WHERE action IN ('approval-rules set', 'control-settings set') ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wantEntries := []string{
		`cli:anna approval-rules set acme {"rules": [{"name": "big-usd", "currency": "USD", "approvals": 3, "minAmount": "500"}, ` +
			`{"name": "large-files", "source": "FILE", "approvals": 2, "fileMinCount": 100, "fileMinTotal": "250000.5"}, ` +
			`{"name": "treasury", "rail": "SEPA", "source": "API", "approvals": 1, "debtorAccount": "ACC-T"}]}`,
		`cli:anna approval-rules set acme {"rules": []}`,
		`cli:anna control-settings set acme {"duplicateAction": "HOLD", "screeningOnError": "HOLD", "duplicateWindowDays": 14}`,
		`cli:anna control-settings set acme {"duplicateAction": "HOLD", "screeningOnError": "ALLOW", "duplicateWindowDays": 14}`,
	}
	if !reflect.DeepEqual(entries, wantEntries) {
		t.Fatalf("audit entries:\n%s\nwant:\n%s", strings.Join(entries, "\n"), strings.Join(wantEntries, "\n"))
	}
}
