package payment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// saga is a database with payments, accounts and the SubmitPayment
// process, run in-process (process.RunDirect): the exec workflow's steps
// without Temporal.
type saga struct {
	pool  *pgxpool.Pool
	store *payment.Store
	queue *queue.Queue
	reg   *process.Registry
	init  *payment.InitActivities
	acts  *process.Activities
}

func newSaga(t *testing.T) *saga {
	t.Helper()
	pool := newPool(t)
	reg, err := process.NewRegistry(payment.SubmitPayment(payment.SubmitConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	s := &saga{pool: pool, store: payment.NewStore(pool), queue: queue.New(pool), reg: reg,
		acts: process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg})}
	s.init = payment.NewInitActivities(payment.InitConfig{Store: s.store, Queue: s.queue})
	return s
}

func (s *saga) account(t *testing.T, spec account.Spec, limits ...limit.Limit) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := account.Create(ctx, s.pool, spec); err != nil {
		t.Fatal(err)
	}
	if len(limits) > 0 {
		if err := limit.Set(ctx, s.pool, spec.AccountID, spec.Currency, limits, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *saga) rate(t *testing.T, base, quote, rate string, dealable bool) {
	t.Helper()
	if _, err := fx.Set(context.Background(), s.pool, fx.Rate{Base: base, Quote: quote, Rate: dec(rate), Dealable: dealable, SetBy: "test"}); err != nil {
		t.Fatal(err)
	}
}

// schedule runs Phase A for the payments and returns each one's context.
func (s *saga) schedule(t *testing.T, rs ...payment.Request) map[string]payment.Context {
	t.Helper()
	ctx := context.Background()
	res, err := s.init.InitChunk(ctx, rs, "init-test")
	if err != nil || res.Scheduled != len(rs) {
		t.Fatalf("Phase A: %+v %v", res, err)
	}
	store := payment.NewStore(s.pool)
	out := map[string]payment.Context{}
	for _, r := range rs {
		p, err := store.Find(ctx, r.TenantID, r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		if out[r.PaymentID], err = store.Context(ctx, p.Key); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// execute runs SubmitPayment for a scheduled payment (its tenant's id),
// as the exec workflow does.
func (s *saga) execute(ctx context.Context, id string, pc payment.Context) (process.Outcome, error) {
	key := payment.Key(pc.Request.TenantID, id)
	return process.RunDirect(ctx, s.acts, process.Options{
		Type: payment.SubmitPaymentType, BusinessKey: key, Data: payment.SubmitData(key, pc, time.Now()),
	})
}

func (s *saga) balance(t *testing.T, id string) decimal.Decimal {
	t.Helper()
	a, err := account.Get(context.Background(), s.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	return a.Balance
}

func (s *saga) utilized(t *testing.T, id string) map[limit.Period]string {
	t.Helper()
	us, err := limit.Current(context.Background(), s.pool, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[limit.Period]string{}
	for _, u := range us {
		out[u.Period] = u.Utilized.StringFixed(2)
	}
	return out
}

// verify fails the test on any violation of the ledger's or the payments'
// invariants.
func (s *saga) verify(t *testing.T) {
	t.Helper()
	vs, err := payment.Verify(context.Background(), s.pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("violation: %s %s: %s", v.Rule, v.Row, v.Detail)
	}
}

func paymentTo(id, acct, amount, currency string) payment.Request {
	r := validRequest(time.Now())
	r.PaymentID, r.DebtorAccount, r.Amount, r.Currency = id, acct, amount, currency
	r.RequestedExecutionTime = time.Now().Add(time.Hour)
	return r
}

// TestSubmitPayment: the SubmitPayment paths on PostgreSQL — with and without
// limits and FX; insufficient funds; a limit exceeded on one of several
// periods (no period left booked); FX refused after limits were booked
// (limits and debit undone to the cent); no rate at all. Each ends with
// the ledger's invariants checked and the log replaying to the status.
func TestSubmitPayment(t *testing.T) {
	t.Parallel()
	limits := []limit.Limit{{Period: limit.Day, Amount: dec("1000")}, {Period: limit.Month, Amount: dec("5000")}}
	tests := []struct {
		name         string
		acct         account.Spec
		limits       []limit.Limit
		rates        [][3]string // base, quote, rate; a 4th element "suspended" below
		suspended    bool
		amount, ccy  string
		want         process.Status
		wantCode     string
		wantBalance  string
		wantUtilized map[limit.Period]string
		wantSteps    []string // the process log's steps completed, in order
		wantContract bool
	}{
		{name: "no limits, no FX",
			acct: account.Spec{Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("1.50")}, amount: "125.00", ccy: "EUR",
			want: process.StatusSucceeded, wantBalance: "873.50",
			wantSteps: []string{"CreateTransaction", "CreatePayment"}},
		{name: "limits",
			acct: account.Spec{Currency: "EUR", LimitBased: true}, limits: limits, amount: "125.00", ccy: "EUR",
			want: process.StatusSucceeded, wantBalance: "-125.00", wantUtilized: map[limit.Period]string{limit.Day: "125.00", limit.Month: "125.00"},
			wantSteps: []string{"CreateTransaction", "BookLimits", "CreatePayment"}},
		{name: "FX",
			acct: account.Spec{Currency: "USD", OpeningBalance: dec("500")}, rates: [][3]string{{"EUR", "USD", "1.25"}}, amount: "100.00", ccy: "EUR",
			want: process.StatusSucceeded, wantBalance: "375.00", wantContract: true,
			wantSteps: []string{"CreateTransaction", "BookFx", "CreatePayment"}},
		{name: "limits and FX",
			acct: account.Spec{Currency: "USD", LimitBased: true, OpeningBalance: dec("10")}, limits: limits,
			rates: [][3]string{{"EUR", "USD", "1.25"}}, amount: "100.00", ccy: "EUR",
			want: process.StatusSucceeded, wantBalance: "-115.00", wantContract: true,
			wantUtilized: map[limit.Period]string{limit.Day: "125.00", limit.Month: "125.00"},
			wantSteps:    []string{"CreateTransaction", "BookLimits", "BookFx", "CreatePayment"}},
		{name: "insufficient funds",
			acct: account.Spec{Currency: "EUR", OpeningBalance: dec("100"), Fee: dec("1")}, amount: "125.00", ccy: "EUR",
			want: process.StatusFailed, wantCode: "INSUFFICIENT_FUNDS", wantBalance: "100.00"},
		{name: "a limit exceeded on one of several periods",
			acct:   account.Spec{Currency: "EUR", LimitBased: true},
			limits: []limit.Limit{{Period: limit.Day, Amount: dec("1000")}, {Period: limit.Week, Amount: dec("100")}, {Period: limit.Month, Amount: dec("5000")}},
			amount: "125.00", ccy: "EUR",
			want: process.StatusCompensated, wantCode: "LIMIT_EXCEEDED", wantBalance: "0.00",
			wantUtilized: map[limit.Period]string{limit.Day: "0.00", limit.Week: "0.00", limit.Month: "0.00"},
			wantSteps:    []string{"CreateTransaction", "ReverseTransaction"}},
		{name: "FX refused after limits were booked",
			acct: account.Spec{Currency: "USD", LimitBased: true, OpeningBalance: dec("50")}, limits: limits,
			rates: [][3]string{{"EUR", "USD", "1.25"}}, suspended: true, amount: "100.00", ccy: "EUR",
			want: process.StatusCompensated, wantCode: "FX_UNAVAILABLE", wantBalance: "50.00",
			wantUtilized: map[limit.Period]string{limit.Day: "0.00", limit.Month: "0.00"},
			wantSteps:    []string{"CreateTransaction", "BookLimits", "ReverseLimits", "ReverseTransaction"}},
		{name: "no rate at all",
			acct: account.Spec{Currency: "USD", OpeningBalance: dec("500")}, amount: "100.00", ccy: "CHF",
			want: process.StatusFailed, wantCode: "FX_UNAVAILABLE", wantBalance: "500.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newSaga(t)
			tt.acct.AccountID, tt.acct.TenantID = "ACC-T", "acme"
			s.account(t, tt.acct, tt.limits...)
			for _, r := range tt.rates {
				s.rate(t, r[0], r[1], r[2], !tt.suspended)
			}
			contexts := s.schedule(t, paymentTo("pay-1", "ACC-T", tt.amount, tt.ccy))
			out, err := s.execute(ctx, "pay-1", contexts["pay-1"])
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.want || out.ErrorCode != tt.wantCode {
				t.Fatalf("outcome %+v, want %s %q", out, tt.want, tt.wantCode)
			}
			if b := s.balance(t, "ACC-T"); b.StringFixed(2) != tt.wantBalance {
				t.Fatalf("balance %s, want %s", b, tt.wantBalance)
			}
			if tt.wantUtilized != nil {
				if got := s.utilized(t, "ACC-T"); fmt.Sprint(got) != fmt.Sprint(tt.wantUtilized) {
					t.Fatalf("utilized %v, want %v", got, tt.wantUtilized)
				}
			}
			p, err := payment.NewStore(s.pool).Find(ctx, "acme", "pay-1")
			if err != nil {
				t.Fatal(err)
			}
			_, _, outboxErr := outbox.Lookup(ctx, s.pool, p.Key, p.Key)
			if tt.want == process.StatusSucceeded {
				if p.Status != payment.StatusAccepted || outboxErr != nil {
					t.Fatalf("payment %s, its rail instruction: %v", p.Status, outboxErr)
				}
			} else if p.Status != payment.StatusFailed || !strings.HasPrefix(p.StatusReason, tt.wantCode) || outboxErr == nil {
				t.Fatalf("payment %s (%q), rail instruction enqueued: %t", p.Status, p.StatusReason, outboxErr == nil)
			}
			var contracts int
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM fx_contract WHERE status = 'BOOKED'`).Scan(&contracts); err != nil {
				t.Fatal(err)
			}
			if (contracts == 1) != tt.wantContract {
				t.Fatalf("%d booked FX contracts", contracts)
			}
			log, err := process.Log(ctx, s.pool, out.ProcessID)
			if err != nil {
				t.Fatal(err)
			}
			if done := stepsDone(log); fmt.Sprint(done) != fmt.Sprint(tt.wantSteps) {
				t.Fatalf("steps completed %v, want %v", done, tt.wantSteps)
			}
			if r, err := process.Replay(log); err != nil || r.Status != tt.want {
				t.Fatalf("the log replays to %+v, %v", r, err)
			}
			s.verify(t)

			// Every step and compensation delivered again: one effect.
			before := s.ledgerRows(t)
			for _, e := range log {
				if e.Event == process.EventStepCompleted || e.Event == process.EventCompensationCompleted {
					if _, err := s.acts.Execute(ctx, process.StepRequest{ProcessID: out.ProcessID, Step: e.Step,
						Compensation: e.Event == process.EventCompensationCompleted}); err != nil {
						t.Fatalf("%s again: %v", e.Step, err)
					}
				}
			}
			if after := s.ledgerRows(t); after != before {
				t.Fatalf("steps delivered again changed the ledger: %s, was %s", after, before)
			}
			if again, err := s.execute(ctx, "pay-1", contexts["pay-1"]); err != nil || again.Status != tt.want {
				t.Fatalf("the process run again: %+v %v", again, err)
			}
			if after := s.ledgerRows(t); after != before {
				t.Fatalf("the process run again changed the ledger: %s, was %s", after, before)
			}
		})
	}
}

// ledgerRows counts what the ledger holds, for "nothing changed".
func (s *saga) ledgerRows(t *testing.T) string {
	t.Helper()
	var txns, bookings, contracts, reversedBookings int
	if err := s.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM account_transaction), (SELECT count(*) FROM limit_booking),
		(SELECT count(*) FROM fx_contract), (SELECT count(*) FROM limit_booking WHERE reversed_at IS NOT NULL)`).
		Scan(&txns, &bookings, &contracts, &reversedBookings); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d transactions, %d bookings (%d reversed), %d contracts", txns, bookings, reversedBookings, contracts)
}

// TestConcurrentPayments: 2,000 payments from 5 accounts at once — one
// account pays half of them and can afford only some — never take an
// account below zero nor lose an update; every payment ends ACCEPTED or
// FAILED for its funds, and the ledger's invariants hold.
func TestConcurrentPayments(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("2,000 payments")
	}
	ctx := context.Background()
	s := newSaga(t)
	balances := map[string]string{"C-0": "6000", "C-1": "2625", "C-2": "2625", "C-3": "2625", "C-4": "500"}
	for id, b := range balances {
		s.account(t, account.Spec{AccountID: id, TenantID: "acme", Currency: "EUR", OpeningBalance: dec(b), Fee: dec("0.50")})
	}
	const n = 2000
	var rs []payment.Request
	for i := range n {
		acct := "C-0" // half the payments
		if i%2 == 1 {
			acct = fmt.Sprintf("C-%d", 1+i/2%4)
		}
		rs = append(rs, paymentTo(fmt.Sprintf("pay-%04d", i), acct, "10.00", "EUR"))
	}
	contexts := map[string]payment.Context{}
	for i := 0; i < n; i += 1000 {
		for id, pc := range s.schedule(t, rs[i:i+1000]...) {
			contexts[id] = pc
		}
	}
	work := make(chan payment.Request)
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[process.Status]int{}
	codes := map[string]int{}
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				out, err := s.execute(ctx, r.PaymentID, contexts[r.PaymentID])
				mu.Lock()
				if err != nil {
					codes["error: "+err.Error()]++
				}
				outcomes[out.Status]++
				codes[out.ErrorCode]++
				mu.Unlock()
			}
		}()
	}
	for _, r := range rs {
		work <- r
	}
	close(work)
	wg.Wait()
	// C-0: 1,000 payments of 10.50 against 6,000: 571 fit; C-4: 250
	// of 10.50 against 500: 47; the others afford their 250.
	wantOK := 571 + 3*250 + 47
	if outcomes[process.StatusSucceeded] != wantOK || outcomes[process.StatusFailed] != n-wantOK || codes["INSUFFICIENT_FUNDS"] != n-wantOK {
		t.Fatalf("outcomes %v, codes %v; want %d succeeded", outcomes, codes, wantOK)
	}
	for id := range balances {
		if b := s.balance(t, id); b.IsNegative() {
			t.Errorf("%s below zero: %s", id, b)
		}
	}
	var accepted, failed int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'ACCEPTED'), count(*) FILTER (WHERE status = 'FAILED') FROM payments`).
		Scan(&accepted, &failed); err != nil {
		t.Fatal(err)
	}
	if accepted != wantOK || failed != n-wantOK {
		t.Fatalf("payments: %d accepted, %d failed", accepted, failed)
	}
	s.verify(t)
	if vs, err := ledger.Verify(ctx, s.pool); err != nil || len(vs) != 0 {
		t.Fatalf("ledger: %v %v", vs, err)
	}
}

// TestVerifyFindsViolations: each payment invariant fails on a database
// corrupted to break it (and holds on the good one).
func TestVerifyFindsViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		corrupt string
		rule    ledger.Rule
	}{
		{"none", ``, ""},
		{"a failed payment's debit not reversed",
			`DELETE FROM account_transaction WHERE type = 'REVERSAL'`, payment.RuleUndoneHoldsNothing},
		{"an executed payment without its debit",
			`DELETE FROM account_transaction WHERE reference LIKE '%:CreateTransaction' AND NOT EXISTS
			 (SELECT 1 FROM account_transaction r WHERE r.reverses = account_transaction.transaction_id)`, payment.RuleExecutedDebit},
		{"a redrive recorded without its debit",
			`UPDATE payment_booking SET redrives = 1`, payment.RuleExecutedDebit},
		{"a payment that left its process",
			`UPDATE payments SET status = 'SCHEDULED' WHERE external_id = 'ok'`, payment.RuleProcessStatus},
		{"a booking without its instruction",
			`DELETE FROM payment_outbox_keys; UPDATE payment_booking SET outbox_id = NULL`, payment.RuleOneInstruction},
		{"a booking naming another instruction",
			`UPDATE payment_booking SET outbox_id = gen_random_uuid()`, payment.RuleOneInstruction},
		{"a process whose log says otherwise",
			`UPDATE process_instance SET status = 'FAILED' WHERE business_key = (SELECT payment_id FROM payments WHERE external_id = 'ok')`, payment.RuleProcessLog},
		{"delivered, never dispatched",
			`UPDATE payments SET status = 'DELIVERED' WHERE external_id = 'ok'`, payment.RuleDelivery},
		{"an instruction sent after its rail's cut-off",
			`INSERT INTO rail (rail_name, rail_type, opens_at, cutoff_at) VALUES ('EARLY', 'SEPA_JSON', '00:00', '00:00:01');
			 UPDATE payments SET rail = 'EARLY', execution_date = (now() AT TIME ZONE 'UTC')::date WHERE external_id = 'ok';
			 INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
			                                      rail_type, payload, attempt_no, state, claimed_at)
			 SELECT b.outbox_id, b.payment_id, 'acme', 1, b.payment_id, 'EARLY', '{}', 1, 'DISPATCHED', now()
			 FROM payment_booking b JOIN payments p USING (payment_id) WHERE p.external_id = 'ok'`, payment.RuleBeforeCutoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newSaga(t)
			s.account(t, account.Spec{AccountID: "ACC-L", TenantID: "acme", Currency: "EUR", LimitBased: true},
				limit.Limit{Period: limit.Day, Amount: dec("150")})
			contexts := s.schedule(t, paymentTo("ok", "ACC-L", "100.00", "EUR"), paymentTo("over", "ACC-L", "100.00", "EUR"))
			for _, id := range []string{"ok", "over"} {
				if _, err := s.execute(ctx, id, contexts[id]); err != nil {
					t.Fatal(err)
				}
			}
			if tt.corrupt != "" {
				if _, err := s.pool.Exec(ctx, tt.corrupt); err != nil {
					t.Fatal(err)
				}
			}
			vs, err := payment.Verify(ctx, s.pool)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range vs {
				found = found || v.Rule == tt.rule
			}
			if tt.rule == "" && len(vs) > 0 || tt.rule != "" && !found {
				t.Fatalf("violations %+v, want %q", vs, tt.rule)
			}
		})
	}
}

// TestContextCarriesTheAccount: Phase A looks the debtor account up and
// hands execution what it needs of it.
func TestContextCarriesTheAccount(t *testing.T) {
	t.Parallel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-USD", TenantID: "acme", Currency: "USD", LimitBased: true})
	pc := s.schedule(t, paymentTo("fx-1", "ACC-USD", "10.00", "EUR"), paymentTo("eur-1", "ACC-1", "10.00", "EUR"))
	if e := pc["fx-1"].Enrichment; e.AccountCurrency != "USD" || !e.LimitBased || !e.FXNeeded || e.AccountKey != "ACC-USD" || pc["fx-1"].Version != 3 {
		t.Fatalf("fx-1: %+v (context version %d)", e, pc["fx-1"].Version)
	}
	if e := pc["eur-1"].Enrichment; e.AccountCurrency != "EUR" || e.LimitBased || e.FXNeeded {
		t.Fatalf("eur-1: %+v", e)
	}
}

// stepsDone is the steps a process's log says it completed, forward and
// compensation, in order.
func stepsDone(log []process.LogEntry) []string {
	var done []string
	for _, e := range log {
		if e.Event == process.EventStepCompleted || e.Event == process.EventCompensationCompleted {
			done = append(done, e.Step)
		}
	}
	return done
}
