package payment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/webhook"
)

// writes records, per table, whether a statement INSERTed into it and
// whether a COPY wrote it.
type writes struct {
	mu              sync.Mutex
	inserts, copies map[string]int
}

func (w *writes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, table := range []string{"payments", "payment_keys", "exec_queue"} {
		if strings.Contains(d.SQL, "INSERT INTO "+table+" ") {
			w.inserts[table]++
		}
	}
	return ctx
}

func (*writes) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *writes) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.copies[strings.Join(d.TableName, ".")]++
	return ctx
}

func (*writes) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// tracedPool is a second pool on pool's database whose statements and
// COPYs w records.
func tracedPool(t *testing.T, pool *pgxpool.Pool, w *writes) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = w
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return traced
}

// TestPhaseACopiesAFreshChunk: a chunk none of whose payments is taken in
// yet claims their ids, stores them and enqueues them with a COPY each,
// never an INSERT (whose ON CONFLICT probes each key first, and writes a
// row at a time); a chunk of a few payments INSERTs them. Either way each
// payment ends SCHEDULED with its queue item, and the rows are those the
// one-by-one path writes (TestChunkOfManyAgrees).
func TestPhaseACopiesAFreshChunk(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		payments int
		copied   bool
	}{
		{"a chunk of 250", 250, true},
		{"a chunk of 5", 5, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := &writes{inserts: map[string]int{}, copies: map[string]int{}}
			pool := newPool(t)
			traced := tracedPool(t, pool, w)
			at := time.Now().Add(time.Hour).Truncate(time.Second)
			rs := make([]payment.Request, tt.payments)
			for i := range rs {
				rs[i] = validRequest(at)
				rs[i].PaymentID = fmt.Sprintf("fresh-%03d", i)
			}
			a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(traced), Queue: queue.New(traced)})
			res, err := a.InitChunk(ctx, rs, "init-fresh")
			if err != nil || res.Scheduled != tt.payments {
				t.Fatalf("InitChunk: %+v, %v", res, err)
			}
			for _, table := range []string{"payments", "payment_keys", "exec_queue"} {
				copied, inserted := w.copies[table] > 0, w.inserts[table] > 0
				if copied != tt.copied || inserted == tt.copied {
					t.Errorf("%s: %d COPYs and %d INSERTs, want a COPY: %v", table, w.copies[table], w.inserts[table], tt.copied)
				}
			}
			var scheduled, queued int
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'SCHEDULED'),
				(SELECT count(*) FROM exec_queue WHERE queue_status = 'READY')`).Scan(&scheduled, &queued); err != nil {
				t.Fatal(err)
			}
			if scheduled != tt.payments || queued != tt.payments {
				t.Fatalf("%d SCHEDULED, %d queued; want %d", scheduled, queued, tt.payments)
			}
		})
	}
}

// TestPhaseAChunkSpillsNothing: a chunk of 10,000 payments (the largest)
// is stored without a temporary file. The payments' statement trigger
// keeps the COPY's rows in its transition table; at the default work_mem
// it spilled 5 MB a chunk to disk and read it back.
func TestPhaseAChunkSpillsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := newPool(t).Config()
	cfg.MaxConns = 1 // the connection that stores the chunk reports its temporary files
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tempFiles := func() int64 {
		var n int64
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `SELECT temp_files FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	rs := make([]payment.Request, 10_000)
	for i := range rs {
		rs[i] = validRequest(at)
		rs[i].PaymentID = fmt.Sprintf("spill-%05d", i)
		rs[i].RemittanceInfo = strings.Repeat("r", 100) // rows as wide as a real file's
	}
	before := tempFiles()
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	if res, err := a.InitChunk(ctx, rs, "init-spill"); err != nil || res.Scheduled != len(rs) {
		t.Fatalf("InitChunk: %+v, %v", res, err)
	}
	if after := tempFiles(); after != before {
		t.Fatalf("storing a chunk of %d wrote %d temporary files", len(rs), after-before)
	}
}

// TestPhaseACopyFallsBack: a chunk some of whose payments are stored
// already (cancelled while they waited) fails the COPY on their keys, and
// is stored by the statement that leaves them: the others SCHEDULED and
// enqueued, the cancelled ones CANCELLED and not enqueued; and a file
// sent again claims nothing new (its COPY of the ids fails on the first).
func TestPhaseACopyFallsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	rs := make([]payment.Request, 200)
	for i := range rs {
		rs[i] = validRequest(at)
		rs[i].PaymentID = fmt.Sprintf("fb-%03d", i)
	}
	if _, err := svc.Store().Receive(ctx, rs, func(int) string { return "init-fb" }, false); err != nil {
		t.Fatal(err)
	}
	cancelled := map[string]bool{}
	for i := 0; i < len(rs); i += 20 {
		if _, _, err := svc.Cancel(ctx, "acme", rs[i].PaymentID, nil); err != nil {
			t.Fatal(err)
		}
		cancelled[rs[i].PaymentID] = true
	}
	a := payment.NewInitActivities(payment.InitConfig{Store: svc.Store(), Queue: svc.Queue()})
	res, err := a.InitIntake(ctx, "init-fb")
	if err != nil || res.Scheduled != len(rs)-len(cancelled) {
		t.Fatalf("InitIntake: %+v, %v", res, err)
	}
	receipts, err := svc.Store().Receive(ctx, rs, func(int) string { return "init-fb-again" }, false)
	if err != nil {
		t.Fatal(err)
	}
	if fresh := slices.IndexFunc(receipts, func(r payment.Receipt) bool { return r.Fresh || r.Conflict }); fresh >= 0 {
		t.Fatalf("sent again, %s: %+v", rs[fresh].PaymentID, receipts[fresh])
	}
	for _, r := range rs {
		p, err := svc.Store().Find(ctx, "acme", r.PaymentID)
		if err != nil {
			t.Fatal(err)
		}
		_, qerr := svc.Queue().Get(ctx, payment.ItemType, p.Key)
		want, queued := payment.StatusScheduled, true
		if cancelled[r.PaymentID] {
			want, queued = payment.StatusCancelled, false
		}
		if p.Status != want || (qerr == nil) != queued || (qerr != nil && !errors.Is(qerr, queue.ErrNotFound)) {
			t.Errorf("%s: %s, queue item: %v; want %s, queued %v", r.PaymentID, p.Status, qerr, want, queued)
		}
	}
}

// TestIntakeRowUncompressed: a chunk's intake row keeps its arrays as they
// are (out of line, not compressed): written once and read once within
// seconds, compressing them costs CPU during a file's intake for nothing.
func TestIntakeRowUncompressed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	rs := make([]payment.Request, 2500)
	for i := range rs {
		rs[i] = validRequest(at)
		rs[i].PaymentID = fmt.Sprintf("staged-%04d", i)
	}
	if _, err := payment.NewStore(pool).Receive(ctx, rs, func(int) string { return "init-staged" }, false); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT pg_column_compression(i.payment_ids), pg_column_compression(i.external_ids),
		       pg_column_compression(i.tenant_ids), pg_column_compression(i.debtor_accounts), pg_column_compression(i.amounts),
		       pg_column_compression(i.currencies), pg_column_compression(i.creditor_names), pg_column_compression(i.creditor_ibans),
		       pg_column_compression(i.creditor_bics), pg_column_compression(i.remittance_infos),
		       pg_column_compression(i.requested_execution_times), pg_column_compression(i.rails), pg_column_compression(i.priorities)
		FROM payment_intake i WHERE i.init_workflow_id = 'init-staged'`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		n++
		for i, v := range vals {
			if v != nil {
				t.Errorf("array %d of the intake row compressed with %v", i+1, v)
			}
		}
	}
	if err := rows.Err(); err != nil || n != 1 {
		t.Fatalf("%d intake rows, %v", n, err)
	}
}

// TestPhaseACopyPublishesEvents: a chunk stored with COPY publishes each
// payment's event to its tenant's endpoint, as the statement it replaces
// did (the table's statement trigger runs for a COPY too): one
// payment.scheduled and one payment.rejected a payment, none for another
// tenant's endpoint.
func TestPhaseACopyPublishesEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	hooks := webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: webhook.Policy{AllowHTTP: true, AllowPrivate: true}})
	for _, tenant := range []string{"acme", "globex"} {
		if _, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: tenant, URL: "http://127.0.0.1:9/" + tenant}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	rs := make([]payment.Request, 150)
	for i := range rs {
		rs[i] = validRequest(at)
		rs[i].PaymentID = fmt.Sprintf("ev-%03d", i)
		if i%10 == 0 {
			rs[i].DebtorAccount = "NOPE"
		}
	}
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	if res, err := a.InitChunk(ctx, rs, "init-ev"); err != nil || res.Scheduled != 135 || res.Rejected != 15 {
		t.Fatalf("InitChunk: %+v, %v", res, err)
	}
	var acme, scheduled, rejected, globex int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT subject) FILTER (WHERE tenant_id = 'acme'),
		count(*) FILTER (WHERE tenant_id = 'acme' AND event_type = 'payment.scheduled'),
		count(*) FILTER (WHERE tenant_id = 'acme' AND event_type = 'payment.rejected'),
		count(*) FILTER (WHERE tenant_id = 'globex') FROM webhook_deliveries`).Scan(&acme, &scheduled, &rejected, &globex); err != nil {
		t.Fatal(err)
	}
	if acme != 150 || scheduled != 135 || rejected != 15 || globex != 0 {
		t.Fatalf("events: %d payments, %d scheduled, %d rejected, %d for globex; want 150, 135, 15, 0", acme, scheduled, rejected, globex)
	}
}
