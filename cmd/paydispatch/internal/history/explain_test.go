package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/history"
	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// explainPayments is the history TestPlansWithHistory loads:
// PAYDISPATCH_EXPLAIN_PAYMENTS, or a size a CI run on 2 cores loads in
// about a minute (10,000,000 took 18 minutes on 2 shared cores). docs/operating.md gives the plans and times at
// 10,000,000.
func explainPayments(t *testing.T) int {
	if v := os.Getenv("PAYDISPATCH_EXPLAIN_PAYMENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("PAYDISPATCH_EXPLAIN_PAYMENTS=%q: want a number of payments of at least 1000", v)
		}
		return n
	}
	return 1_000_000
}

// The tables the explained statements read; the rest of the history
// changes none of their plans.
var explainTables = []string{"payments", "payment_keys", "exec_queue", "account_transaction"}

// TestPlansWithHistory: with a long history in payments, the queue and
// the ledger, the hot statements as the code sends them are read through
// their indexes, never a scan of a big table, and plan as they do with
// a short history: the claim, the enqueue (one item, and Phase A's
// batch), the debit's ledger_post, the payment list with each of its
// filters and a second page, and the cancel by filter.
func TestPlansWithHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	big, small := pgtest.NewPool(t), pgtest.NewPool(t)
	n := explainPayments(t)
	at := time.Now()
	loaded, err := history.Load(ctx, big, history.Options{Payments: n, Tables: explainTables})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history of %d payments (%d rows) loaded in %.1f s", n, loaded.Total(), time.Since(at).Seconds())
	if _, err := history.Load(ctx, small, history.Options{Payments: 2000, Tables: explainTables}); err != nil {
		t.Fatal(err)
	}
	names, bigPlans := hotPlans(t, big)
	_, smallPlans := hotPlans(t, small)
	for _, name := range names {
		p := bigPlans[name]
		if testing.Verbose() {
			t.Logf("%s at %d payments:\n%s", name, n, p.text)
		}
		for _, table := range []string{"payments", "payment_keys", "exec_queue", "exec_context", "account_transaction", "dispatch_audit_log"} {
			if strings.Contains(p.text, "Seq Scan on "+table+"\n") || strings.HasSuffix(p.text, "Seq Scan on "+table) ||
				strings.Contains(p.text, "Seq Scan on "+table+" ") {
				t.Errorf("%s scans %s:\n%s", name, table, p.text)
			}
		}
		for _, index := range p.indexes {
			if !strings.Contains(p.text, index) {
				t.Errorf("%s does not use %s:\n%s", name, index, p.text)
			}
		}
		if p.most > 0 {
			for _, m := range rowsOut.FindAllStringSubmatch(p.text, -1) {
				if n, _ := strconv.Atoi(m[1]); n > p.most {
					t.Errorf("%s: a statement gives %d rows, want at most %d:\n%s", name, n, p.most, p.text)
				}
			}
		}
		if got, want := shape(p.text), shape(smallPlans[name].text); p.same && got != want {
			t.Errorf("%s plans otherwise at %d payments than at 2,000:\n%s\n--- at 2,000:\n%s", name, n, got, want)
		}
	}
}

type hotPlan struct {
	text    string
	indexes []string // the plan uses each
	// same: the plan must not change with the history. The reads that
	// pick among their indexes by how many rows each would give (a list,
	// a cancel's selection) may choose another with more history; they
	// are held to using an index.
	same bool
	// most, when set, is the most rows any of its statements may give
	// back: a selection that must not grow with the history.
	most int
}

// hotPlans explains each hot statement on pool, with its history loaded:
// their names in order, and their plans.
func hotPlans(t *testing.T, pool *pgxpool.Pool) ([]string, map[string]hotPlan) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	// What waits now: 2,000 payments of the 10 tenants due within the
	// minute, enqueued as Phase A does.
	var due []queue.EnqueueParams
	for i := range 2000 {
		due = append(due, queue.EnqueueParams{ItemType: payment.ItemType, ItemID: fmt.Sprintf("due-%d", i), TenantID: history.Tenant(i % 10),
			ScheduledExecTime: now.Add(time.Duration(i) * 30 * time.Millisecond), InitWorkflowID: "init-due", Context: json.RawMessage(`{"v": 1}`), Paced: true})
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := queue.New(pool).EnqueueBatchTx(ctx, tx, due)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE exec_queue; ANALYZE exec_context`); err != nil {
		t.Fatal(err)
	}
	out := map[string]hotPlan{}
	var names []string
	add := func(name string, same bool, o explain.Options, f func(ctx context.Context, tx pgx.Tx) error, indexes ...string) {
		t.Helper()
		plans, err := explain.Run(ctx, pool, o, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, p := range plans {
			fmt.Fprintf(&b, "%s\n%s\n", firstLine(p.SQL), p.Plan)
		}
		names = append(names, name)
		out[name] = hotPlan{text: b.String(), indexes: indexes, same: same}
	}
	add("claim", true, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
		b, err := queue.New(tx).ClaimBatch(ctx, queue.ClaimParams{ItemType: payment.ItemType, BatchSize: 500, MaxRetries: 3, PreStartBuffer: time.Minute})
		if err == nil && len(b.Items) == 0 {
			err = fmt.Errorf("claimed nothing")
		}
		return err
	}, "exec_queue_tenant_ready_idx", "exec_context_pkey")
	add("enqueue one", true, explain.Options{}, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queue.New(tx).SaveContextAndEnqueueTx(ctx, tx, queue.EnqueueParams{ItemType: payment.ItemType, ItemID: "new-1", TenantID: "t1",
			ScheduledExecTime: now.Add(time.Hour), InitWorkflowID: "init-new", Context: json.RawMessage(`{"v": 1}`), Paced: true})
		return err
	}, "exec_queue_pkey")
	add("enqueue a replay", true, explain.Options{}, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queue.New(tx).SaveContextAndEnqueueTx(ctx, tx, due[7])
		return err
	}, "exec_queue_pkey")
	add("enqueue Phase A's batch", true, explain.Options{}, func(ctx context.Context, tx pgx.Tx) error {
		var ps []queue.EnqueueParams
		for i := range 100 {
			ps = append(ps, queue.EnqueueParams{ItemType: payment.ItemType, ItemID: fmt.Sprintf("new-b-%d", i), TenantID: "t2",
				ScheduledExecTime: now.Add(time.Hour), InitWorkflowID: "init-new-b", Context: json.RawMessage(`{"v": 1}`), Paced: true})
		}
		_, err := queue.New(tx).EnqueueBatchTx(ctx, tx, ps)
		return err
	}, "exec_queue_pkey")

	svc := func(tx pgx.Tx) *payment.Service {
		return payment.NewService(payment.ServiceConfig{Store: payment.NewStore(tx), Queue: queue.New(tx)})
	}
	list := func(f payment.ListFilter, indexes ...string) {
		name := "list " + listName(f)
		add(name, false, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
			page, err := svc(tx).List(ctx, f, "", 50)
			if err == nil && page.Next != "" { // the second page, from where the first ended
				_, err = svc(tx).List(ctx, f, page.Next, 50)
			}
			return err
		}, indexes...)
	}
	day := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	list(payment.ListFilter{TenantID: "t3"}, "payments_list_idx", "payments_pkey")
	list(payment.ListFilter{TenantID: "t3", Status: payment.StatusFailed}, "payments_list_status_idx")
	list(payment.ListFilter{TenantID: "t3", DebtorAccount: history.AccountOf(3)}, "payments_list_debtor_idx")
	list(payment.ListFilter{TenantID: "t3", DebtorAccount: history.AccountOf(3), Status: payment.StatusDelivered}, "payments_list_debtor_idx")
	list(payment.ListFilter{TenantID: "t3", Rail: "DEFAULT", Priority: payment.PriorityNormal}, "payments_list_idx")
	list(payment.ListFilter{TenantID: "t3", RequestedFrom: day, RequestedTo: day.Add(24 * time.Hour)}, "payments_list_idx")
	list(payment.ListFilter{TenantID: "t3", Status: payment.StatusCancelled, RequestedFrom: day, RequestedTo: day.Add(24 * time.Hour)},
		"payments_list_status_idx")

	cancel := func(name string, f payment.CancelFilter, indexes ...string) {
		add("cancel by filter: "+name, false, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
			_, err := svc(tx).CancelWhere(ctx, f, true, nil)
			return err
		}, indexes...)
	}
	// The waiting ones of all of a tenant's history: the partial index of
	// the SCHEDULED, whatever the tenant's history holds.
	cancel("a tenant's waiting payments", payment.CancelFilter{TenantID: "t4", Statuses: []payment.Status{payment.StatusScheduled}}, "payments_rail_waiting_idx")
	cancel("a tenant's day", payment.CancelFilter{TenantID: "t4", RequestedFrom: now.Add(-time.Hour), RequestedTo: now.Add(time.Hour)}, "payments_list_idx")
	// Every payment of a tenant, whatever its status or time: its whole
	// history, read through the index, each counted by status.
	cancel("every payment of a tenant", payment.CancelFilter{TenantID: "t5"}, "payments_list_status_idx")
	// What waits is read one by one, and the rest counted by status: a
	// few rows back, however long the tenant's history.
	p := out["cancel by filter: every payment of a tenant"]
	p.most = 20
	out["cancel by filter: every payment of a tenant"] = p
	cancel("a tenant's day, scheduled or held", payment.CancelFilter{TenantID: "t4", RequestedFrom: now.Add(-time.Hour), RequestedTo: now.Add(time.Hour),
		Statuses: []payment.Status{payment.StatusScheduled, payment.StatusHeld}}, "payments_list_")

	out["debit: ledger_post"] = hotPlan{text: postPlans(t, pool), indexes: []string{"account_transaction_reference_key"}, same: true}
	return append(names, "debit: ledger_post"), out
}

func listName(f payment.ListFilter) string {
	var parts []string
	for _, p := range [][2]string{{"status", string(f.Status)}, {"debtor", f.DebtorAccount}, {"rail", f.Rail}, {"priority", string(f.Priority)}} {
		if p[1] != "" {
			parts = append(parts, p[0])
		}
	}
	if !f.RequestedFrom.IsZero() {
		parts = append(parts, "requested day")
	}
	if len(parts) == 0 {
		return "of a tenant"
	}
	return "by " + strings.Join(parts, ", ")
}

// postPlans are the plans of the statements inside ledger_post as it
// runs a payment's debit, from auto_explain (EXPLAIN sees only the call):
// enough debits that plpgsql settles on its cached plans.
func postPlans(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
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
	for _, sql := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_level = notice", "SET client_min_messages = notice"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the debits are only explained
	for i := range 8 {
		if _, err := account.Debit(ctx, tx, account.Entry{AccountID: history.AccountOf(i % 10), Amount: decimal.NewFromInt(1), Currency: "EUR",
			Reference: fmt.Sprintf("explain-%d:CreateTransaction", i)}); err != nil {
			t.Fatalf("debit %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The last debit's statements, planned as the ones after it will be:
	// auto_explain reports the call after the statements inside it.
	var last, current []string
	for _, n := range notices {
		current = append(current, n)
		if strings.Contains(n, "ledger_post(") {
			last, current = current, nil
		}
	}
	return strings.Join(last, "\n")
}

func firstLine(sql string) string {
	for _, l := range strings.Split(sql, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			return l
		}
	}
	return ""
}

var (
	// rowsOut is the rows a statement's top node gave (EXPLAIN ANALYZE).
	rowsOut  = regexp.MustCompile(`(?m)^\S[^\n]*\(actual rows=(\d+) `)
	planNode = regexp.MustCompile(`^\s*(->\s*)?([A-Z][A-Za-z ]+?(Scan|Join|Loop|Sort|Limit|Aggregate|Insert|Update|Delete|Result|Append|Materialize|Unique|Hash|LockRows|Gather)[A-Za-z ]*?)( using (\S+))?( on (\S+))?(\s+\(|$)`)
)

// shape is a plan's nodes with their tables and indexes, without the
// figures and values: what differs when the planner chooses otherwise.
func shape(plans string) string {
	var out []string
	for _, line := range strings.Split(plans, "\n") {
		m := planNode.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		out = append(out, strings.TrimSpace(m[2]+" "+m[5]+" "+m[7]))
	}
	return strings.Join(out, "\n")
}
