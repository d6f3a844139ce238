package bench

import (
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"

	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/postgres/pgserver"
	"github.com/paydispatch/paydispatch/queue"
)

const benchItemType = "BENCH"

// QueueOptions configure the queue benchmark.
type QueueOptions struct {
	Env

	Rows        int // the deep queue
	SmallDepth  int // the shallow queue
	Claimers    int
	BatchSize   int
	Samples     int // claims timed at each depth
	MaxDuration time.Duration
	Ephemeral   bool // run the private server without fsync
}

// QueueSettings binds the benchmark's flags.
func QueueSettings(o *QueueOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("rows", 1_000_000, 1000, 50_000_000, "READY rows in the deep queue", &o.Rows),
		config.Int("small-depth", 10_000, 1000, 10_000_000, "READY rows in the shallow queue", &o.SmallDepth),
		config.Int("claimers", 4, 1, 64, "concurrent claimers in the throughput run", &o.Claimers),
		config.Int("batch", 500, 1, queue.MaxBatchSize, "batch size", &o.BatchSize),
		config.Int("samples", 200, 10, 100_000, "claims timed at each depth", &o.Samples),
		config.Duration("max-duration", "120s", time.Second, "cap on the throughput run", &o.MaxDuration),
		config.Bool("ephemeral", "run the private PostgreSQL without fsync (not the product's setting)", &o.Ephemeral),
	}
}

// RunQueue runs the queue benchmark and prints its figures to o.Out.
func RunQueue(ctx context.Context, o QueueOptions) error {
	if o.SmallDepth >= o.Rows {
		return fmt.Errorf("--small-depth (%d) must be below --rows (%d)", o.SmallDepth, o.Rows)
	}
	pool, where, cleanup, err := benchDatabase(ctx, dbOptions{URL: o.DatabaseURL, BinDir: o.PGBinDir, Ephemeral: o.Ephemeral, Logger: o.Logger, MaxConns: int32(o.Claimers + 4)})
	if err != nil {
		return err
	}
	defer cleanup()
	b := &queueBench{o: o, pool: pool, q: queue.New(pool)}
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO exec_rate_config (item_type, exec_workflow_type, exec_task_queue)
		VALUES ($1, 'BenchExec', 'bench') ON CONFLICT DO NOTHING`, benchItemType); err != nil {
		return fmt.Errorf("bench config: %w", err)
	}
	b.header(ctx, where)

	// Claim latency at two depths; each timed claim is followed by an
	// untimed refill, so the depth holds while it is measured.
	if err := b.load(ctx, o.SmallDepth); err != nil {
		return err
	}
	small, err := b.latency(ctx)
	if err != nil {
		return err
	}
	if err := b.load(ctx, o.Rows-o.SmallDepth); err != nil {
		return err
	}
	deep, err := b.latency(ctx)
	if err != nil {
		return err
	}
	b.printf("\nclaim latency, batch %d, %d claims at each depth:\n", o.BatchSize, o.Samples)
	b.printf("  depth %10s: p50 %7.2f ms  p99 %7.2f ms\n", thousands(o.SmallDepth), ms(small.p50), ms(small.p99))
	b.printf("  depth %10s: p50 %7.2f ms  p99 %7.2f ms\n", thousands(o.Rows), ms(deep.p50), ms(deep.p99))
	r50, r99 := ratio(deep.p50, small.p50), ratio(deep.p99, small.p99)
	b.printf("  ratio deep/shallow: p50 %.2f  p99 %.2f   (target p50 ≤ 1.5: %s)\n", r50, r99, verdict(r50 <= 1.5))
	plans, err := explain.Run(ctx, b.pool, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queue.New(tx).ClaimBatch(ctx, queue.ClaimParams{ItemType: benchItemType, BatchSize: o.BatchSize, MaxRetries: 3})
		return err
	})
	if err != nil {
		return err
	}
	claimPlan, _ := explain.Find(plans, "claimed AS")
	b.printf("\nEXPLAIN ANALYZE of the claim (fair between the 10 tenants loaded) at depth %s (rolled back):\n", thousands(o.Rows))
	for _, line := range strings.Split(claimPlan.Plan, "\n") {
		b.printf("  %s\n", line)
	}

	tp, err := b.throughput(ctx)
	if err != nil {
		return err
	}
	base, err := b.baseline(ctx)
	if err != nil {
		return err
	}
	b.printf("\nthroughput, %d claimers, batch %d, from %s READY rows:\n", o.Claimers, o.BatchSize, thousands(o.Rows))
	b.printf("  baseline, bare 500-row UPDATE by primary key: %9.0f rows/s\n", base)
	b.printf("  claim + mark dispatched (audited):             %9.0f items/s  (%.2f × baseline; %s items in %.1f s)\n",
		tp.rate, tp.rate/base, thousands(int(tp.items)), tp.elapsed.Seconds())
	o.Figures.add(Figure{What: "claim + mark dispatched", Value: tp.rate, Unit: "items/s",
		Baseline: "bare 500-row UPDATE by primary key", BaseVal: base, BaseUnit: "rows/s"})
	b.printf("  per batch (claim + dispatch): p50 %.2f ms  p99 %.2f ms\n", ms(tp.p50), ms(tp.p99))
	b.printf("  target ≥ 25,000 items/s: %s\n", verdict(tp.rate >= 25_000))
	return nil
}

type queueBench struct {
	o      QueueOptions
	pool   *pgxpool.Pool
	q      *queue.Queue
	nextID atomic.Int64
}

func (b *queueBench) printf(format string, args ...any) { fmt.Fprintf(b.o.Out, format, args...) }

func (b *queueBench) header(ctx context.Context, where string) {
	var version, syncCommit, fsync, sharedBuffers string
	_ = b.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('synchronous_commit'),
		current_setting('fsync'), current_setting('shared_buffers')`).Scan(&version, &syncCommit, &fsync, &sharedBuffers)
	b.printf("paydispatch bench queue: %d CPUs, %s, PostgreSQL %s (%s; fsync=%s, synchronous_commit=%s, shared_buffers=%s)\n",
		runtime.NumCPU(), memTotal(), version, where, fsync, syncCommit, sharedBuffers)
}

// load adds n due READY rows with small contexts.
func (b *queueBench) load(ctx context.Context, n int) error {
	start := time.Now()
	from := b.nextID.Add(int64(n)) - int64(n)
	const chunk = 200_000
	for lo := from; lo < from+int64(n); lo += chunk {
		hi := min(lo+chunk, from+int64(n))
		if err := b.insertRange(ctx, lo, hi); err != nil {
			return err
		}
	}
	if _, err := b.pool.Exec(ctx, "VACUUM ANALYZE exec_queue, exec_context"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	b.o.Logger.Info("loaded READY rows", "rows", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// insertRange inserts items [lo, hi): scheduled in the past, in id order.
func (b *queueBench) insertRange(ctx context.Context, lo, hi int64) error {
	return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO exec_context (item_type, item_id, context)
			SELECT $1, 'b-' || g, jsonb_build_object('paymentId', 'b-' || g, 'amount', '125.00', 'currency', 'EUR')
			FROM generate_series($2::bigint, $3::bigint - 1) g`, benchItemType, lo, hi); err != nil {
			return fmt.Errorf("load contexts: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time)
			SELECT $1, 'b-' || g, 'tenant-' || (g % 10), now() - interval '1 day' + g * interval '10 microseconds'
			FROM generate_series($2::bigint, $3::bigint - 1) g`, benchItemType, lo, hi); err != nil {
			return fmt.Errorf("load queue: %w", err)
		}
		return nil
	})
}

type latencies struct{ p50, p99 time.Duration }

func (b *queueBench) latency(ctx context.Context) (latencies, error) {
	claim := queue.ClaimParams{ItemType: benchItemType, BatchSize: b.o.BatchSize, MaxRetries: 3}
	var samples []time.Duration
	for i := range b.o.Samples + 5 {
		start := time.Now()
		batch, err := b.q.ClaimBatch(ctx, claim)
		took := time.Since(start)
		if err != nil {
			return latencies{}, err
		}
		if len(batch.Items) != b.o.BatchSize {
			return latencies{}, fmt.Errorf("claim returned %d items, want %d", len(batch.Items), b.o.BatchSize)
		}
		if i >= 5 { // the first claims warm caches
			samples = append(samples, took)
		}
		from := b.nextID.Add(int64(len(batch.Items))) - int64(len(batch.Items))
		if err := b.insertRange(ctx, from, from+int64(len(batch.Items))); err != nil {
			return latencies{}, err
		}
	}
	return latencies{p50: percentile(samples, 50), p99: percentile(samples, 99)}, nil
}

// baseline measures a bare 500-row primary-key UPDATE, by the same number of
// concurrent workers, on rows the claims already moved out of READY.
func (b *queueBench) baseline(ctx context.Context) (float64, error) {
	rows, err := b.pool.Query(ctx, `SELECT item_id FROM exec_queue WHERE item_type = $1 AND queue_status = 'CLAIMED' LIMIT $2`,
		benchItemType, b.o.Claimers*b.o.BatchSize*20)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	per := len(ids) / b.o.Claimers
	const run = 5 * time.Second
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, b.o.Claimers)
	start := time.Now()
	for w := range b.o.Claimers {
		mine := ids[w*per : (w+1)*per]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Since(start) < run; i = (i + b.o.BatchSize) % max(len(mine)-b.o.BatchSize, 1) {
				tag, err := b.pool.Exec(ctx, `UPDATE exec_queue SET updated_at = now() WHERE item_type = $1 AND item_id = ANY($2)`,
					benchItemType, mine[i:min(i+b.o.BatchSize, len(mine))])
				if err != nil {
					errs <- err
					return
				}
				total.Add(tag.RowsAffected())
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

type throughputResult struct {
	items    int64
	elapsed  time.Duration
	rate     float64
	p50, p99 time.Duration
}

// throughput drains the queue with concurrent claimers, each claiming a
// batch and marking it dispatched, as a dispatcher would.
func (b *queueBench) throughput(ctx context.Context) (throughputResult, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.MaxDuration)
	defer cancel()
	var (
		total atomic.Int64
		mu    sync.Mutex
		lat   []time.Duration
		wg    sync.WaitGroup
		errs  = make(chan error, b.o.Claimers)
	)
	start := time.Now()
	for range b.o.Claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim := queue.ClaimParams{ItemType: benchItemType, BatchSize: b.o.BatchSize, MaxRetries: 3}
			for ctx.Err() == nil {
				t0 := time.Now()
				batch, err := b.q.ClaimBatch(ctx, claim)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(batch.Items) == 0 {
					return
				}
				ds := make([]queue.Dispatch, len(batch.Items))
				for i, it := range batch.Items {
					ds[i] = queue.Dispatch{ItemID: it.ID, ExecWorkflowID: "exec-" + benchItemType + "-" + it.ID}
				}
				res, err := b.q.MarkDispatchedBatch(ctx, benchItemType, batch.ID, ds)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(res.Rejected) > 0 {
					errs <- fmt.Errorf("%d dispatches rejected", len(res.Rejected))
					return
				}
				total.Add(int64(len(res.Moved)))
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return throughputResult{}, fmt.Errorf("throughput: %w", err)
	}
	n := total.Load()
	return throughputResult{items: n, elapsed: elapsed, rate: float64(n) / elapsed.Seconds(),
		p50: percentile(lat, 50), p99: percentile(lat, 99)}, nil
}

// dbOptions say where a benchmark's database comes from.
type dbOptions struct {
	URL       string // empty: a fresh private server
	BinDir    string
	Ephemeral bool
	Logger    *slog.Logger
	MaxConns  int32
}

// benchDatabase is a fresh private server in a temporary directory, or a
// scratch schema on DATABASE_URL; cleanup removes either.
func benchDatabase(ctx context.Context, o dbOptions) (*pgxpool.Pool, string, func(), error) {
	maxConns := o.MaxConns
	if o.URL != "" {
		schema := fmt.Sprintf("paydispatch_bench_%d", time.Now().UnixNano())
		admin, err := postgres.NewPool(ctx, o.URL, 2)
		if err != nil {
			return nil, "", nil, err
		}
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			admin.Close()
			return nil, "", nil, fmt.Errorf("create scratch schema: %w", err)
		}
		drop := func() {
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		}
		cfg, err := pgxpool.ParseConfig(o.URL)
		if err != nil {
			drop()
			return nil, "", nil, err
		}
		cfg.MaxConns = maxConns
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			drop()
			return nil, "", nil, err
		}
		return pool, "DATABASE_URL, schema " + schema, func() { pool.Close(); drop() }, nil
	}
	dir, err := os.MkdirTemp("", "paydispatch-bench-")
	if err != nil {
		return nil, "", nil, err
	}
	_ = os.Chmod(dir, 0o755) // the server user must enter it
	srv, err := pgserver.Start(ctx, pgserver.Options{
		Dir: filepath.Join(dir, "pg"), BinDir: o.BinDir, Database: "bench", Ephemeral: o.Ephemeral, Logger: o.Logger,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", nil, err
	}
	stop := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(stopCtx)
		_ = os.RemoveAll(dir)
	}
	pool, err := postgres.NewPool(ctx, srv.ConnString("bench"), maxConns)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	return pool, "embedded, fresh cluster", func() { pool.Close(); stop() }, nil
}

// percentile is d's p-th percentile by nearest rank: the least sample
// with at least p % of them at or below it (none: zero).
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// thousands is n with a comma between each group of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	if n < 0 {
		// The sign is no digit: -123, not -,123.
		out, s = append(out, '-'), s[1:]
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	var kb int64
	if _, err := fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kb); err != nil {
		return "memory unknown"
	}
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}
