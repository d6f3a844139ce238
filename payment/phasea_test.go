package payment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/temporal"

	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// stored is what Phase A left of a payment: its row and its queue item.
type stored struct {
	exists            bool
	status            payment.Status
	reason            string
	money             string // "" when none is stored
	queued            bool
	queueAt           time.Time
	hasContext, paced bool
}

// load reads acme's payment with the id.
func load(t *testing.T, pool *pgxpool.Pool, id string) stored {
	t.Helper()
	ctx := context.Background()
	var s stored
	p, err := payment.NewStore(pool).Find(ctx, "acme", id) // stored, or waiting for Phase A
	id = payment.Key("acme", id)
	if err == nil {
		s.exists, s.status, s.reason = true, p.Status, p.StatusReason
		if p.Money != nil {
			s.money = p.Money.Amount.String() + " " + p.Money.Currency
		}
	} else if !errors.Is(err, payment.ErrNotFound) {
		t.Fatal(err)
	}
	it, err := queue.New(pool).Get(ctx, payment.ItemType, id)
	if err == nil {
		s.queued, s.queueAt, s.paced = true, it.ScheduledExecTime.UTC(), it.Paced
		var n int
		// The execution's context is the payment's own (the queue item
		// carries none).
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE payment_id = $1 AND context IS NOT NULL)
			- (SELECT count(*) FROM exec_context WHERE item_id = $1)`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		s.hasContext = n == 1
	} else if !errors.Is(err, queue.ErrNotFound) {
		t.Fatal(err)
	}
	return s
}

// TestInitPaymentBranches: each way Phase A can end for one payment, on
// PostgreSQL: what it answers and what it leaves stored.
func TestInitPaymentBranches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*payment.Request)
		setup  func(t *testing.T, pool *pgxpool.Pool, r payment.Request)
		paced  bool
		// exhausted: the limiter has no slot left (every window held or full)
		exhausted bool
		// outcome
		wantStatus  payment.Status
		wantErrType string // the activity fails with this (nothing stored)
		wantMoney   bool   // a rejected payment keeps its amount
		reasonHas   string // the rejection names this
		// leftReceived: the failed Phase A leaves the payment as intake
		// stored it, for the next run
		leftReceived bool
	}{
		{name: "happy path", wantStatus: payment.StatusScheduled, wantMoney: true},
		{name: "paced", paced: true, wantStatus: payment.StatusScheduled, wantMoney: true},
		{name: "invalid amount: rejected without it", change: func(r *payment.Request) { r.Amount = "-1" }, wantStatus: payment.StatusRejected},
		{name: "invalid otherwise: rejected, amount kept", change: func(r *payment.Request) { r.Creditor.Name = " " },
			wantStatus: payment.StatusRejected, wantMoney: true},
		{name: "in the past: rejected, amount kept", change: func(r *payment.Request) { r.RequestedExecutionTime = time.Now().Add(-time.Hour) },
			wantStatus: payment.StatusRejected, wantMoney: true},
		{name: "rule: rejected, amount kept", change: func(r *payment.Request) { r.Amount = "1000.01" },
			wantStatus: payment.StatusRejected, wantMoney: true},
		{name: "blocked country: rejected", change: func(r *payment.Request) { r.Creditor.IBAN, r.Creditor.BIC = "GB82WEST12345698765432", "" },
			reasonHas:  "BLOCKED_COUNTRY",
			wantStatus: payment.StatusRejected, wantMoney: true},
		{name: "unknown debtor account: rejected", change: func(r *payment.Request) { r.DebtorAccount = "NOPE" },
			wantStatus: payment.StatusRejected, wantMoney: true, reasonHas: "debtorAccount"},
		{name: "another tenant's account: rejected alike", change: func(r *payment.Request) { r.DebtorAccount = "ACC-G" },
			wantStatus: payment.StatusRejected, wantMoney: true, reasonHas: `no account "ACC-G" for tenant acme`},
		{name: "no slot: the payment left RECEIVED", paced: true, exhausted: true, wantErrType: "exhausted", leftReceived: true},
		{name: "id of another payment: CONFLICT, nothing enqueued", wantErrType: payment.ErrTypeConflict,
			setup: func(t *testing.T, pool *pgxpool.Pool, r payment.Request) {
				other := r
				other.Amount = "99.00"
				m, _ := payment.Validate(other, time.Now())
				if _, err := payment.NewStore(pool).Record(context.Background(), other, &m, payment.StatusScheduled, "", &other.RequestedExecutionTime); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "queue item of another content: CONFLICT, the payment left RECEIVED", wantErrType: payment.ErrTypeConflict, leftReceived: true,
			setup: func(t *testing.T, pool *pgxpool.Pool, r payment.Request) {
				if _, err := queue.New(pool).SaveContextAndEnqueue(context.Background(), queue.EnqueueParams{
					ItemType: payment.ItemType, ItemID: payment.Key(r.TenantID, r.PaymentID), TenantID: r.TenantID, ScheduledExecTime: r.RequestedExecutionTime,
					Context: json.RawMessage(`{"other":true}`),
				}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newPool(t)
			lim := pacing.New(pacing.Config{Pool: pool})
			cfg := payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Pacer: lim,
				Rules: payment.Rules{MaxAmount: decimal.RequireFromString("1000"), BlockedCountries: []string{"KP", "GB"}}}
			r := validRequest(time.Now())
			r.RequestedExecutionTime = time.Now().Add(time.Hour).Truncate(time.Second)
			if tt.change != nil {
				tt.change(&r)
			}
			if tt.paced {
				if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
					t.Fatal(err)
				}
				if _, err := lim.GetConfig(ctx, "payments"); errors.Is(err, pacing.ErrConfigNotFound) {
					if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "payments", MaxPerWindow: 10, Window: time.Second, Headroom: 10}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.exhausted {
				cfg.Pacer = exhaustedPacer{lim}
			}
			a := payment.NewInitActivities(cfg)
			var before stored
			if tt.setup != nil {
				tt.setup(t, pool, r)
				before = load(t, pool, r.PaymentID)
			}
			res, err := a.InitPayment(ctx, r, payment.InitWorkflowID(r.PaymentID))
			if tt.wantErrType != "" {
				var appErr *temporal.ApplicationError
				switch {
				case err == nil:
					t.Fatalf("succeeded: %+v", res)
				case tt.wantErrType == "exhausted" && !errors.Is(err, pacing.ErrExhausted):
					t.Fatalf("err = %v, want the limiter's exhaustion (retried)", err)
				case tt.wantErrType != "exhausted" && (!errors.As(err, &appErr) || appErr.Type() != tt.wantErrType || !appErr.NonRetryable()):
					t.Fatalf("err = %v, want a non-retryable %s", err, tt.wantErrType)
				}
				after := load(t, pool, r.PaymentID)
				if tt.leftReceived {
					if after.status != payment.StatusReceived {
						t.Fatalf("the payment is %s, want RECEIVED for the next run", after.status)
					}
					after.exists, after.status, after.money = before.exists, before.status, before.money
				}
				if after != before {
					t.Fatalf("a failed Phase A changed what is stored: %+v, was %+v", after, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := load(t, pool, r.PaymentID)
			if res.Status != tt.wantStatus || got.status != tt.wantStatus || res.PaymentID != r.PaymentID {
				t.Fatalf("result %+v, stored %+v; want %s", res, got, tt.wantStatus)
			}
			if (got.money != "") != tt.wantMoney {
				t.Fatalf("stored money %+v, want kept: %t", got.money, tt.wantMoney)
			}
			switch tt.wantStatus {
			case payment.StatusRejected:
				if res.Reason == "" || got.reason != res.Reason || got.queued || !strings.Contains(res.Reason, tt.reasonHas) {
					t.Fatalf("rejected: reason %q (stored %q), queued %t", res.Reason, got.reason, got.queued)
				}
			case payment.StatusScheduled:
				if !got.queued || !got.hasContext || got.paced != tt.paced || !got.queueAt.Equal(res.ScheduledExecutionTime) {
					t.Fatalf("scheduled: %+v, result %+v", got, res)
				}
				if !tt.paced && !res.ScheduledExecutionTime.Equal(r.RequestedExecutionTime) {
					t.Fatalf("unpaced at %s, want the requested %s", res.ScheduledExecutionTime, r.RequestedExecutionTime)
				}
			}
			// A replay is a no-op with the same answer.
			again, err := a.InitPayment(ctx, r, payment.InitWorkflowID(r.PaymentID))
			if err != nil || again != res {
				t.Fatalf("replay: %+v %v, want %+v", again, err, res)
			}
		})
	}
}

// TestSingleAndChunkAgree: a payment initialized alone and the same
// payment in a chunk end the same (one code path): same status, reason,
// amount kept or not, execution time.
func TestSingleAndChunkAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	var rs []payment.Request
	for i, change := range []func(*payment.Request){
		func(*payment.Request) {},
		func(r *payment.Request) { r.Amount = "-1" },
		func(r *payment.Request) { r.Creditor.Name = "" },
		func(r *payment.Request) { r.RequestedExecutionTime = time.Now().Add(-time.Hour) },
		func(r *payment.Request) { r.Amount = "5000" },
	} {
		r := validRequest(time.Now())
		r.PaymentID, r.RequestedExecutionTime = fmt.Sprintf("agree-%d", i), at
		change(&r)
		rs = append(rs, r)
	}
	init := func(pool *pgxpool.Pool) *payment.InitActivities {
		return payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Rules: payment.Rules{MaxAmount: decimal.RequireFromString("1000")}})
	}
	single, chunk := newPool(t), newPool(t)
	for _, r := range rs {
		if _, err := init(single).InitPayment(ctx, r, "init-x"); err != nil {
			t.Fatal(err)
		}
	}
	res, err := init(chunk).InitChunk(ctx, rs, "init-x")
	if err != nil || res.Scheduled != 1 || res.Rejected != 4 {
		t.Fatalf("chunk: %+v %v", res, err)
	}
	for _, r := range rs {
		a, b := load(t, single, r.PaymentID), load(t, chunk, r.PaymentID)
		if a != b {
			t.Errorf("%s: alone %+v, in a chunk %+v", r.PaymentID, a, b)
		}
	}
	// The chunk's set-based statements write exactly the rows the single
	// path writes, audit included.
	if a, b := dumpRows(t, single), dumpRows(t, chunk); a != b {
		t.Fatalf("rows differ:\nalone:\n%s\nin a chunk:\n%s", a, b)
	}
	// A replay of the chunk changes nothing; a chunk with one payment
	// changed is a CONFLICT, and changes nothing either.
	before := dumpRows(t, chunk)
	if res, err := init(chunk).InitChunk(ctx, rs, "init-x"); err != nil || res.Scheduled != 1 || res.Rejected != 4 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	changed := slices.Clone(rs)
	changed[0].Amount = "2.00"
	if res, err := init(chunk).InitChunk(ctx, changed, "init-x"); err != nil || res.Scheduled != 0 || res.Rejected != 4 {
		t.Fatalf("a changed payment in a replayed chunk: %+v %v, want it left out", res, err)
	}
	if after := dumpRows(t, chunk); after != before {
		t.Fatalf("a replay or a conflict changed rows:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestChunkOfManyAgrees: a chunk of 300 new payments, some invalid, goes
// through the set-based path; the same payments one by one write the
// same rows; a chunk half old (replayed) and half new falls back to the
// item-by-item path and still writes each once.
func TestChunkOfManyAgrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	var rs []payment.Request
	for i := range 300 {
		r := validRequest(time.Now())
		r.PaymentID, r.RequestedExecutionTime = fmt.Sprintf("many-%03d", i), at
		if i%7 == 3 {
			r.Amount = "0"
		}
		// Every column the chunk's COPY writes, as the single path's
		// statement writes it: no priority (NORMAL), HIGH, LOW; a
		// remittance and a BIC or none.
		r.Priority = []payment.Priority{"", payment.PriorityHigh, payment.PriorityLow}[i%3]
		if i%4 == 1 {
			r.RemittanceInfo, r.Creditor.BIC = "", ""
		}
		rs = append(rs, r)
	}
	init := func(pool *pgxpool.Pool) *payment.InitActivities {
		return payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	}
	single, chunk := newPool(t), newPool(t)
	for _, r := range rs {
		if _, err := init(single).InitPayment(ctx, r, "init-m"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := init(chunk).InitChunk(ctx, rs[:150], "init-m"); err != nil {
		t.Fatal(err)
	}
	res, err := init(chunk).InitChunk(ctx, rs, "init-m") // 150 replayed, 150 new
	if err != nil || res.Scheduled+res.Rejected != 300 {
		t.Fatalf("chunk: %+v %v", res, err)
	}
	if a, b := dumpRows(t, single), dumpRows(t, chunk); a != b {
		t.Fatalf("rows differ:\nalone:\n%s\nin chunks:\n%s", a, b)
	}
}

// dumpRows is the payments, queue items and contexts of a database,
// without the times they were written at, and how many items its audit
// rows count by action (a chunk's enqueue is one row for all its items,
// a payment's one for itself).
func dumpRows(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var out string
	if err := pool.QueryRow(context.Background(), `SELECT concat_ws(E'\n',
		(SELECT string_agg(concat_ws('|', payment_id, tenant_id, debtor_account, amount, currency, creditor_name, creditor_iban,
		        creditor_bic, remittance_info, requested_execution_time, scheduled_execution_time, status, status_reason, request::text,
		        context::text, rail, execution_date, priority), E'\n' ORDER BY payment_id) FROM payments),
		(SELECT string_agg(concat_ws('|', item_type, item_id, tenant_id, queue_status, scheduled_exec_time, init_workflow_id, paced, retry_count), E'\n' ORDER BY item_id) FROM exec_queue),
		(SELECT string_agg(concat_ws('|', item_type, item_id, context::text, context_version), E'\n' ORDER BY item_id) FROM exec_context),
		(SELECT string_agg(concat_ws('|', item_type, action, status_after, n), E'\n' ORDER BY item_type, action, status_after)
		 FROM (SELECT item_type, action, status_after, sum(CASE WHEN detail LIKE 'items=%' THEN substr(detail, 7)::int ELSE 1 END) AS n
		       FROM dispatch_audit_log GROUP BY 1, 2, 3) a))`).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// exhaustedPacer is a limiter whose windows are all full or held.
type exhaustedPacer struct{ *pacing.Limiter }

func (exhaustedPacer) Assign(context.Context, string, string, time.Time) (pacing.Slot, error) {
	return pacing.Slot{}, fmt.Errorf("pacing: no window with room: %w", pacing.ErrExhausted)
}
