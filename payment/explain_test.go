package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
)

// TestHotQueriesUseIndexes: on 100,000 payments of 10 tenants, 20,000 of
// them waiting for Phase A in 100 intake rows, every lookup of the intake
// and of Phase A uses an index: a tenant's id (stored, or waiting), every
// tenant's id (an operator's), the comparison of a file's payments with
// those taken in, what Phase A stores, an execution's context, the
// resume of the intake, and the levers' looks at the waiting payments.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payment_keys (external_id, tenant_id, payment_id, init_workflow_id)
		SELECT 'p-' || (g / 10), 't-' || (g % 10), 'k-' || g, CASE WHEN g % 5 = 0 THEN 'init-' || (g / 1000) END
		FROM generate_series(1, 100000) g;
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, status, request, context)
		SELECT 'k-' || g, 'p-' || (g / 10), 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now(), 'SCHEDULED', '{}', '{}'
		FROM generate_series(1, 100000) g WHERE g % 5 <> 0;
		INSERT INTO payment_intake (init_workflow_id, payment_ids, external_ids, tenant_ids, debtor_accounts, amounts,
		                            currencies, creditor_names, creditor_ibans, creditor_bics, remittance_infos,
		                            requested_execution_times, received_at)
		SELECT 'init-' || (g / 1000), array_agg('k-' || g), array_agg('p-' || (g / 10)), array_agg('t-' || (g % 10)),
		       array_agg('ACC-1'::text), array_agg(1::numeric), array_agg('EUR'::text), array_agg('Jane Doe'::text), array_agg(''::text),
		       array_agg(''::text), array_agg(''::text), array_agg(now()), now() - interval '1 hour'
		FROM generate_series(1, 100000) g WHERE g % 5 = 0 GROUP BY 1;
		ANALYZE payment_keys; ANALYZE payments; ANALYZE payment_intake`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, index string
		f           func(ctx context.Context, s *payment.Store)
	}{
		{"find by the tenant's id", "payment_keys_pkey", func(ctx context.Context, s *payment.Store) { _, _ = s.Find(ctx, "t-3", "p-42") }},
		{"find one waiting for Phase A", "payment_intake_pkey", func(ctx context.Context, s *payment.Store) { _, _ = s.Find(ctx, "t-0", "p-500") }},
		{"find in every tenant", "payment_keys_pkey", func(ctx context.Context, s *payment.Store) { _, _ = s.FindAll(ctx, "p-42") }},
		{"compare a replay with what is taken in", "payment_keys_pkey", func(ctx context.Context, s *payment.Store) {
			r := payment.Request{TenantID: "t-3", PaymentID: "p-42", Amount: "1", Currency: "EUR"}
			_, _ = s.Record(ctx, r, nil, payment.StatusRejected, "", nil)
		}},
		{"what Phase A stores", "payment_intake_pkey", func(ctx context.Context, s *payment.Store) { _, _ = payment.IntakeOf(ctx, s, "init-7") }},
		{"what waits for a rail", "payments_rail_waiting_idx", func(ctx context.Context, s *payment.Store) {
			_, _ = s.RailBacklog(ctx, "SEPA", time.Now().Add(time.Hour))
		}},
		{"an execution's context", "payments_pkey", func(ctx context.Context, s *payment.Store) { _, _ = s.Context(ctx, "k-7") }},
		{"a group's contexts", "payments_pkey", func(ctx context.Context, s *payment.Store) {
			_, _ = s.ContextsAndStatuses(ctx, []string{"k-7", "k-8", "k-9"})
		}},
		{"the intake's resume", "payment_intake_received_idx", func(ctx context.Context, s *payment.Store) {
			_, _ = s.Pending(ctx, time.Now().Add(-2*time.Hour), 100)
		}},
		{"LOW payments waiting (a chunk of Phase A)", "payments_low_waiting_idx", func(ctx context.Context, s *payment.Store) {
			_, _ = payment.LowWaitingOf(ctx, s, []string{"SEPA", "DEFAULT"})
		}},
		{"payments resumed while held (every 250 ms)", "payments_paused_idx", func(ctx context.Context, s *payment.Store) {
			_ = payment.ResumedOf(ctx, s)
		}},
	} {
		plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { tt.f(ctx, payment.NewStore(tx)); return nil })
		if testing.Verbose() {
			t.Logf("%s:\n%s", tt.name, plan)
		}
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan on payments") || strings.Contains(plan, "Seq Scan on payment_intake") {
			t.Errorf("%s: no %s in\n%s", tt.name, tt.index, plan)
		}
	}
}

// TestExecutionPlans: SubmitPayment's steps run on generic plans
// (process.Definition.GenericPlans), made once for a connection without
// the values they run with. So every statement of an execution must use
// an index on a plan made that way: a plain debit, the forward path with
// limits and FX, and a compensation after a refused FX. Checked after
// 1,000 executions over 400 accounts. The statements around the steps
// are checked too: the execution's ref and notifications run on generic
// plans as well (Finish); the context and the process's start on custom
// plans today.
func TestExecutionPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	limits := []limit.Limit{{Period: limit.Day, Amount: dec("1000000")}, {Period: limit.Month, Amount: dec("5000000")}}
	for i := range 200 {
		s.account(t, account.Spec{AccountID: fmt.Sprintf("ACC-E-%d", i), TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000000")})
		s.account(t, account.Spec{AccountID: fmt.Sprintf("ACC-L-%d", i), TenantID: "acme", Currency: "USD", LimitBased: true}, limits...)
	}
	s.rate(t, "EUR", "USD", "1.25", true)
	s.rate(t, "GBP", "USD", "1.40", false)
	var rs []payment.Request
	for i := range 1000 {
		acct := fmt.Sprintf("ACC-E-%d", i%200)
		if i%2 == 1 {
			acct = fmt.Sprintf("ACC-L-%d", i%200) // limits and FX
		}
		rs = append(rs, paymentTo(fmt.Sprintf("p-%d", i), acct, "10.00", "EUR"))
	}
	explained := []struct {
		request payment.Request
		want    payment.Status
	}{
		{paymentTo("plain", "ACC-E-7", "10.00", "EUR"), payment.StatusProcessing},
		{paymentTo("limits-and-fx", "ACC-L-7", "10.00", "EUR"), payment.StatusProcessing},
		{paymentTo("fx-refused", "ACC-L-8", "10.00", "GBP"), payment.StatusFailed},
	}
	for _, e := range explained {
		rs = append(rs, e.request)
	}
	// A group's payments (GroupExecutor): together, set-based.
	var group []string
	for i := range 4 {
		r := paymentTo(fmt.Sprintf("group-%d", i), fmt.Sprintf("ACC-E-%d", 20+i%2), "10.00", "EUR")
		rs, group = append(rs, r), append(group, r.PaymentID)
	}
	contexts := s.schedule(t, rs...)
	ids := make(chan string)
	var g errgroup.Group
	for range 8 {
		g.Go(func() error {
			for id := range ids {
				if out, err := s.execute(ctx, id, contexts[id]); err != nil || out.Status != process.StatusSucceeded {
					return fmt.Errorf("%s: %+v, %v", id, out, err)
				}
			}
			return nil
		})
	}
	for i := range 1000 {
		ids <- fmt.Sprintf("p-%d", i)
	}
	close(ids)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// What grows with time and accounts beyond what 1,000 executions
	// leave: ten days of other accounts' limit windows and bookings, the
	// processes waiting for an operator, other tenants' accounts, and the
	// rates of 400 pairs.
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO limit_window (account_id, period, window_start, window_end, currency, limit_amount)
		SELECT 'ACC-OLD-' || a, 'DAY', d, d + interval '1 day', 'USD', 1000
		FROM generate_series(1, 2000) a, generate_series(current_date - 10, current_date - 1, interval '1 day') d;
		INSERT INTO limit_booking (reference, period, account_id, window_start, amount, booked_at)
		SELECT 'old-' || a || '-' || d::date, 'DAY', 'ACC-OLD-' || a, d, 1, d
		FROM generate_series(1, 2000) a, generate_series(current_date - 10, current_date - 1, interval '1 day') d;
		INSERT INTO process_attention (process_id, status, updated_at)
		SELECT gen_random_uuid(), 'FAILED', now() FROM generate_series(1, 20000);
		INSERT INTO account (account_id, external_id, tenant_id, currency, opening_balance, balance, limit_based)
		SELECT 'ACC-OTHER-' || a, 'ACC-OTHER-' || a, 'other', 'EUR', 0, 0, false FROM generate_series(1, 20000) a;
		INSERT INTO fx_rate (base, quote, rate, set_by)
		SELECT 'XX' || chr(65 + b), 'YY' || chr(65 + q), 1.5, 'test'
		FROM generate_series(0, 19) b, generate_series(0, 19) q;
		ANALYZE`); err != nil {
		t.Fatal(err)
	}
	for _, e := range explained {
		// As a batch execution runs it: the context read from the row.
		key := payment.Key(e.request.TenantID, e.request.PaymentID)
		var got payment.Payment
		plans, err := explain.Run(ctx, s.pool, explain.Options{Generic: true}, func(ctx context.Context, tx pgx.Tx) error {
			store := payment.NewStore(tx)
			a := payment.NewExecActivities(payment.ExecConfig{Store: store, Process: process.NewActivities(process.ActivitiesConfig{DB: tx, Registry: s.reg})})
			if _, err := a.Execution(ctx, payment.ExecutionInput{PaymentID: key, Context: payment.Context{Version: 3},
				WorkflowID: "exec-" + key, Ref: "exec-" + key + "/run"}); err != nil {
				return err
			}
			var err error
			got, err = store.Get(ctx, key)
			return err
		})
		if err != nil || got.Status != e.want {
			t.Fatalf("%s: %s, %v", e.request.PaymentID, got.Status, err)
		}
		if len(plans) < 10 {
			t.Fatalf("%s: %d statements explained", e.request.PaymentID, len(plans))
		}
		checkPlans(t, e.request.PaymentID, plans)
	}
	// A group's steps are planned for their values (process.AdvanceGroup).
	plans, err := explain.Run(ctx, s.pool, explain.Options{}, func(ctx context.Context, tx pgx.Tx) error {
		acts := process.NewActivities(process.ActivitiesConfig{DB: tx, Registry: s.reg})
		ins := make([]process.StartInput, len(group))
		keys := make([]string, len(group))
		for i, id := range group {
			keys[i] = payment.Key("acme", id)
			b, err := json.Marshal(payment.SubmitData(keys[i], contexts[id], time.Now()))
			if err != nil {
				return err
			}
			ins[i] = process.StartInput{Type: payment.SubmitPaymentType, BusinessKey: keys[i], Data: b, WorkflowID: "exec-batch"}
		}
		for i, o := range acts.AdvanceGroup(ctx, ins) {
			if o.Err != nil || o.State.Status != process.StatusSucceeded {
				return fmt.Errorf("%s: %+v %v", group[i], o.State, o.Err)
			}
		}
		finished, err := payment.NewStore(tx).FinishMany(ctx, keys, "exec-batch/run")
		if err == nil && len(finished) != len(keys) {
			err = fmt.Errorf("%d of %d finished", len(finished), len(keys))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The outbox's tables of a row a participant (a tenant: one here) are
	// scanned by EnqueueBatch's plans made for one; at many they are not.
	for i := range plans {
		plans[i].Plan = strings.NewReplacer("Seq Scan on participant_outbox_sequences", "(one participant)",
			"Seq Scan on outbox_participant_settings", "(one participant)").Replace(plans[i].Plan)
	}
	checkPlans(t, "a group", plans)
	for _, want := range []string{"ledger_post_many", "BeginExecutions", "InsertBookings", "FinishExecutions", "CompleteSteps"} {
		if !slices.ContainsFunc(plans, func(p explain.Plan) bool { return strings.Contains(p.SQL, want) }) {
			t.Errorf("a group: no statement %s explained", want)
		}
	}
}

// checkPlans fails the test for a plan of plans that scans a table.
func checkPlans(t *testing.T, name string, plans []explain.Plan) {
	t.Helper()
	for _, p := range plans {
		// fx_rate holds a rate a currency pair: a few pages, which a
		// scan reads faster than an index would.
		if strings.Contains(p.Plan, "Seq Scan") && !strings.Contains(p.Plan, "Seq Scan on fx_rate") {
			t.Errorf("%s: a plan scans a table:\n%s\n%s", name, p.SQL, p.Plan)
		} else if testing.Verbose() {
			t.Logf("%s:\n%s\n%s", name, p.SQL, p.Plan)
		}
	}
}

// TestDuplicateQueriesUseIndexes: on 200,000 fingerprints of 10 tenants,
// the duplicate control's claim of a chunk's 2,500, the intake's look at
// 2,500 requests and the retention's delete find their rows by index.
func TestDuplicateQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payment_fingerprint (tenant_id, fingerprint, payment_id, external_id, received_at, expires_at)
		SELECT 't-' || (g % 10), sha256(int4send(g)), 'k-' || g, 'p-' || g, now() - interval '1 day', now() + g * interval '1 second'
		FROM generate_series(1, 200000) g;
		ANALYZE payment_fingerprint`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	var cs []payment.Candidate
	var reqs []payment.Request
	for i := range 2500 {
		r := validRequest(at)
		r.PaymentID, r.Amount = fmt.Sprintf("p-%d", i), fmt.Sprintf("%d.00", 1+i)
		m, err := payment.Validate(r, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cs, reqs = append(cs, payment.Candidate{Key: payment.Key(r.TenantID, r.PaymentID), Request: r, Money: m}), append(reqs, r)
	}
	for _, tt := range []struct {
		name, index string
		f           func(ctx context.Context, s *payment.Store, tx pgx.Tx)
	}{
		{"a chunk's claim", "payment_fingerprint_pkey", func(ctx context.Context, s *payment.Store, _ pgx.Tx) {
			_, _ = payment.NewDuplicateControl(payment.DuplicateConfig{Store: s}).Check(ctx, cs)
		}},
		{"the intake's look", "payment_fingerprint_pkey", func(ctx context.Context, s *payment.Store, _ pgx.Tx) {
			_, _ = payment.NewService(payment.ServiceConfig{Store: s}).SuspectedDuplicates(ctx, reqs)
		}},
		{"the retention", "payment_fingerprint_expires_idx", func(ctx context.Context, _ *payment.Store, tx pgx.Tx) {
			_, _ = payment.DeleteFingerprints(ctx, tx, time.Now(), 1000)
		}},
	} {
		plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { tt.f(ctx, payment.NewStore(tx), tx); return nil })
		if testing.Verbose() {
			t.Logf("%s:\n%s", tt.name, plan)
		}
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan on payment_fingerprint") {
			t.Errorf("%s: no %s in\n%s", tt.name, tt.index, plan)
		}
	}
}

// TestGroupPlansWithStaleStatistics: a day's payments arrive SCHEDULED in
// a table whose statistics, taken over a long history, have seen none
// (autovacuum analyzes a big table only after a tenth of it changed), so
// the planner takes the partial indexes of the SCHEDULED for nearly
// empty. The statements that find payments by key (a group's begin, one
// execution's, a guarded transition, Phase A's pause marks) still read
// the key: not every waiting payment's entry for each call.
func TestGroupPlansWithStaleStatistics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, scheduled_execution_time, status, request, context, rail)
		SELECT 'h-' || g, 'h-' || g, 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now() - interval '1 day',
		       now() - interval '1 day', 'DELIVERED', '{}', '{}', 'DEFAULT'
		FROM generate_series(1, 100000) g;
		ANALYZE payments;
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, scheduled_execution_time, status, request, context, rail)
		SELECT 'k-' || g, 'k-' || g, 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now(), now() + g * interval '10 ms',
		       'SCHEDULED', '{}', '{}', 'DEFAULT'
		FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	var p dbsqlc.BeginExecutionsParams
	var tags []string
	for i := range 100 {
		p.PaymentIds = append(p.PaymentIds, fmt.Sprintf("k-%d", 2000+i))
		p.AcceptedAts = append(p.AcceptedAts, time.Now())
		tags = append(tags, "PAUSE")
	}
	now := time.Now()
	for _, tt := range []struct {
		name string
		run  func(ctx context.Context, q *dbsqlc.Queries) error
	}{
		{"a group's executions begin", func(ctx context.Context, q *dbsqlc.Queries) error {
			begun, err := q.BeginExecutions(ctx, p)
			if err == nil && len(begun) != len(p.PaymentIds) {
				err = fmt.Errorf("%d of %d begun", len(begun), len(p.PaymentIds))
			}
			return err
		}},
		{"one execution begins", func(ctx context.Context, q *dbsqlc.Queries) error {
			_, err := q.BeginExecution(ctx, dbsqlc.BeginExecutionParams{PaymentID: "k-3000", AcceptedAt: &now})
			return err
		}},
		{"a transition from SCHEDULED", func(ctx context.Context, q *dbsqlc.Queries) error {
			_, err := q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{PaymentID: "k-3001", FromStatus: "SCHEDULED", ToStatus: "HELD"})
			return err
		}},
		{"Phase A's paused payments marked", func(ctx context.Context, q *dbsqlc.Queries) error {
			return q.SetPausedBy(ctx, dbsqlc.SetPausedByParams{PaymentIds: p.PaymentIds, Tags: tags})
		}},
	} {
		plans, err := explain.Run(ctx, pool, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
			return tt.run(ctx, dbsqlc.New(tx))
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, pl := range plans {
			if testing.Verbose() {
				t.Logf("%s:\n%s", tt.name, pl.Plan)
			}
			if strings.Contains(pl.Plan, "payments_rail_waiting_idx") || strings.Contains(pl.Plan, "Seq Scan on payments") ||
				!strings.Contains(pl.Plan, "payments_pkey") {
				t.Errorf("%s: the payments are not found by key:\n%s", tt.name, pl.Plan)
			}
		}
	}
}
