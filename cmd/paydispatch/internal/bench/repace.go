package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// RepaceOptions configure the levers' cost on a crowd already waiting.
type RepaceOptions struct {
	Env

	Payments      int
	MaxPerWindow  int
	Window        time.Duration
	LimitChangeTo int
	// High is how many payments the HIGH file that joins them holds (0: 1 %
	// of Payments).
	High    int
	MaxWait time.Duration
}

// RepaceSettings binds the benchmark's flags.
func RepaceSettings(o *RepaceOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 100_000, 100, 2_000_000, "payments waiting: one tenant, one rail, all due at one instant hours ahead", &o.Payments),
		config.Int("max-per-window", 100, 1, 100_000, "the pacing config's events per window", &o.MaxPerWindow),
		isoFlag("window", "PT1S", time.Second, "the pacing config's window (ISO-8601)", &o.Window),
		config.Int("limit-change-to", 200, 1, 100_000, "the config's max per window after the limit change (the first move)", &o.LimitChangeTo),
		config.Int("high", 0, 0, 1_000_000, "payments in the HIGH file that joins them before the reorder (0: 1 % of --payments)", &o.High),
		config.Duration("max-wait", "30m", time.Minute, "give up on Phase A this long after a file is submitted", &o.MaxWait),
	}
}

// repaceConfig is the rate-limit config the waiting payments are paced by.
const repaceConfig = "payments"

// RunRepace builds a crowd of payments waiting on one rail under one
// rate-limit config, far enough ahead that nothing executes (no
// dispatcher runs), through Phase A's real path (a bulk file, its chunk
// workflows), then pulls each lever once on all of them and prints what
// it cost: the wall time, payments moved per second, the machine's CPU,
// the statements PostgreSQL ran (pg_stat_statements), beside a baseline of
// bare UPDATEs of as many rows. After each move it checks the schedule
// and fails on any window over the limit, any counter not equal to its
// slots, or a waiting payment whose queue item or slot is not at its time.
func RunRepace(ctx context.Context, o RepaceOptions) error {
	if o.LimitChangeTo == o.MaxPerWindow {
		return fmt.Errorf("--limit-change-to %d: the limit is %d already; want another max per window", o.LimitChangeTo, o.MaxPerWindow)
	}
	high := o.High
	if high == 0 {
		high = max(o.Payments/100, 1)
	}
	fmt.Fprintf(o.Out, "paydispatch bench repace: %d CPUs, %s; embedded PostgreSQL (pg_stat_statements) and Temporal; %s payments of one tenant waiting on one rail, paced %d per %s\n",
		runtime.NumCPU(), memTotal(), thousands(o.Payments), o.MaxPerWindow, pacing.FormatISODuration(o.Window))
	log := o.Logger
	stack, err := openPrivateStack(ctx, "repace", o.PGBinDir, log, ptemporal.Options{},
		pacing.Limit{MaxPerWindow: o.MaxPerWindow, Window: o.Window}, pgStatSettings(true))
	if err != nil {
		return err
	}
	defer stack.close()
	db, tc := stack.db, stack.tc
	if _, err := queue.New(db.Pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": repaceConfig}); err != nil {
		return err
	}
	stopPhaseA, err := startPhaseA(db, tc, log)
	if err != nil {
		return err
	}
	defer stopPhaseA()
	// The levers' service, with the limiter the config changes through:
	// a config it had cached would move the payments to the old limit.
	lim := pacing.New(pacing.Config{Pool: db.Pool})
	svc := app.PaymentService(db, tc, payment.ServiceConfig{Pacer: lim, Log: log})

	// Far enough ahead that nothing executes; no dispatcher runs.
	instant := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
	reqs := make([]payment.Request, o.Payments)
	for i := range reqs {
		reqs[i] = benchRequest("rp", i, instant)
		reqs[i].TenantID, reqs[i].DebtorAccount = "t0", "ACC-t0"
	}
	took, _, err := submitAndWait(ctx, db.Pool, svc, reqs, o.MaxWait)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "the crowd: %s payments of tenant t0 due at %s (the instant), through Phase A in %.1f s, waiting SCHEDULED with their queue items\n",
		thousands(o.Payments), instant.Format(time.RFC3339), took.Seconds())
	r := &repaceRun{o: o, pool: db.Pool, instant: instant, limit: o.MaxPerWindow}
	if err := r.check(ctx, "after Phase A", o.Payments); err != nil {
		return err
	}
	base, err := moveBaseline(ctx, db.Pool)
	if err != nil {
		return err
	}
	r.baseline = base
	fmt.Fprintf(o.Out, "baseline: three bare UPDATEs of %s rows each (a payment's time, its queue item's, its slot's) in copies of their tables, one transaction: %.3f s, %s rows a second\n",
		thousands(o.Payments), base.Seconds(), thousands(int(float64(o.Payments)/base.Seconds())))

	// 1. The limit changes: PutConfig, then RepaceConfig, as POST
	// /admin/rate-limit/config does.
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: repaceConfig, MaxPerWindow: o.LimitChangeTo, Window: o.Window, Headroom: pacing.DefaultHeadroom}); err != nil {
		return err
	}
	r.limit = o.LimitChangeTo
	if err := r.move(ctx, fmt.Sprintf("the limit %d → %d per %s: payment.Service.RepaceConfig", o.MaxPerWindow, o.LimitChangeTo, pacing.FormatISODuration(o.Window)),
		func() (any, int, error) {
			res, err := svc.RepaceConfig(ctx, repaceConfig, nil)
			return res, repacedCount(res), err
		}); err != nil {
		return err
	}
	if err := r.check(ctx, "after the limit change", o.Payments); err != nil {
		return err
	}
	// 2. Pause the tenant holding them all, and 3. resume it.
	if err := r.keepOrder(ctx); err != nil {
		return err
	}
	scope := payment.PauseScope{Kind: payment.PauseTenant, ID: "t0"}
	if err := r.move(ctx, "pause TENANT t0: payment.Service.Pause", func() (any, int, error) {
		res, err := svc.Pause(ctx, scope, nil)
		return res, res.Payments, err
	}); err != nil {
		return err
	}
	if err := r.checkPaused(ctx, "after the pause", "TENANT:t0", o.Payments); err != nil {
		return err
	}
	if err := r.move(ctx, "resume TENANT t0: payment.Service.Resume", func() (any, int, error) {
		res, err := svc.Resume(ctx, scope, nil)
		return res, repacedCount(res), err
	}); err != nil {
		return err
	}
	if err := r.check(ctx, "after the resume", o.Payments); err != nil {
		return err
	}
	if err := r.orderKept(ctx); err != nil {
		return err
	}
	// 4. A HIGH file joins them: Phase A asks for the rail to be put in
	// order, and the reorder (RunLevers' call, made here once the file is
	// quiet) moves them all.
	highReqs := make([]payment.Request, high)
	for i := range highReqs {
		highReqs[i] = benchRequest("rh", i, instant)
		highReqs[i].TenantID, highReqs[i].DebtorAccount, highReqs[i].Priority = "t0", "ACC-t0", payment.PriorityHigh
	}
	took, sub, err := submitAndWait(ctx, db.Pool, svc, highReqs, o.MaxWait)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\na HIGH file of %s payments (file %s) joined them through Phase A in %.1f s\n", thousands(high), sub.BatchID, took.Seconds())
	time.Sleep(time.Second) // the reorder waits for the file to be quiet for half a second
	all := o.Payments + high
	if err := r.move(ctx, "the HIGH file put first: payment.Service.Reorder", func() (any, int, error) {
		res, err := svc.Reorder(ctx)
		if err == nil && res.Moved == 0 {
			err = errors.New("the reorder moved nothing: Phase A asked for none")
		}
		return res, repacedCount(res), err
	}); err != nil {
		return err
	}
	if err := r.check(ctx, "after the reorder", all); err != nil {
		return err
	}
	if err := r.priorityOrder(ctx, payment.PriorityHigh, payment.PriorityNormal); err != nil {
		return err
	}
	// 5. The file's priority changed: LOW, behind every NORMAL one.
	if err := r.move(ctx, fmt.Sprintf("the HIGH file made LOW: payment.Service.SetBatchPriority (%s payments), then its Repace", thousands(high)),
		func() (any, int, error) {
			res, err := svc.SetBatchPriority(ctx, sub.BatchID, "", payment.PriorityLow, nil)
			return res, repacedCount(res.Repaced), err
		}); err != nil {
		return err
	}
	if err := r.check(ctx, "after the priority change", all); err != nil {
		return err
	}
	if err := r.priorityOrder(ctx, payment.PriorityNormal, payment.PriorityLow); err != nil {
		return err
	}

	// No payment executed: no money moved. The check says so too.
	var accepted int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE accepted_at IS NOT NULL`).Scan(&accepted); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\nno money moved: %d of %s payments executed (none should: no dispatcher ran)\n", accepted, thousands(all))
	if accepted > 0 {
		return fmt.Errorf("%d payments executed", accepted)
	}
	return ledgerCheck(ctx, db.Pool, o.Out)
}

// startPhaseA runs Phase A as app.StartInitWorker does, without its
// levers' follow-ups (RunLevers): the bench calls the reorder itself, once,
// to time it and count its statements.
func startPhaseA(db *postgres.DB, tc *ptemporal.Conn, log *slog.Logger) (func(), error) {
	w := worker.New(tc.Client, payment.InitTaskQueue, worker.Options{
		MaxConcurrentWorkflowTaskExecutionSize: app.DefaultWorkflowTaskSlots,
		MaxConcurrentActivityExecutionSize:     app.InitActivitySlots(),
	})
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{
		Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool), Pacer: pacing.New(pacing.Config{Pool: db.Pool}), Log: log, Rails: app.Rails(db),
	}))
	if err := w.Start(); err != nil {
		return nil, err
	}
	return w.Stop, nil
}

// submitAndWait submits a bulk file and waits for Phase A to have stored
// every chunk (an empty payment_intake).
func submitAndWait(ctx context.Context, pool *pgxpool.Pool, svc *payment.Service, reqs []payment.Request, wait time.Duration) (time.Duration, payment.BatchSubmission, error) {
	start := time.Now()
	taken, err := svc.Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs, Whole: true})
	sub := taken.BatchSubmission
	if err := errors.Join(err, taken.Refused()); err != nil {
		return 0, sub, err
	}
	for {
		var pending bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_intake)`).Scan(&pending); err != nil {
			return 0, sub, err
		}
		if !pending {
			return time.Since(start), sub, nil
		}
		if time.Since(start) > wait {
			return 0, sub, fmt.Errorf("chunks still in Phase A %s after the file", wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// repacedCount is how many payments a move changed.
func repacedCount(r payment.Repaced) int { return r.Moved + r.Rolled + r.Held + r.Rejected }

// repaceRun holds what the moves share.
type repaceRun struct {
	o        RepaceOptions
	pool     *pgxpool.Pool
	instant  time.Time
	limit    int
	baseline time.Duration
}

// move times one lever's call and prints its answer, wall time, payments
// moved per second, the machine's CPU, the CPU stolen meanwhile, and the
// statements PostgreSQL ran for it.
func (r *repaceRun) move(ctx context.Context, what string, call func() (answer any, n int, err error)) error {
	w := r.o.Out
	fmt.Fprintf(w, "\n== %s\n", what)
	// Every move starts on new connections, so none inherits another's
	// cached statements, and their ends (below) flush the backends'
	// table and WAL counts, which they would otherwise report up to
	// seconds later.
	r.pool.Reset()
	if err := resetPGStats(ctx, r.pool); err != nil {
		return err
	}
	cpu0, cpuOK := readCPU()
	proc0 := processCPU()
	stack0, stackOK := stackCPU()
	start := time.Now()
	answer, n, err := call()
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	used := processCPU() - proc0
	busy := busySince(cpu0)
	stolen, stolenOK := stolenSince(cpu0)
	stack, _ := stackCPU()
	fmt.Fprintf(w, "its answer: %s\n", describeJSON(answer))
	fmt.Fprintln(w, moveTimes(took, n, r.baseline, r.o.Payments))
	if cpuOK && stackOK && busy > 0 {
		fmt.Fprintf(w, "the machine's CPU time: %.2f s; the stack's (this process and its PostgreSQL) %.2f s, this process %.2f s%s\n",
			busy.Seconds(), (stack - stack0).Seconds(), used.Seconds(), stealNote(stolen, stolenOK))
	}
	r.pool.Reset()
	if err := waitStatsFlushed(ctx, r.pool); err != nil {
		return err
	}
	return reportMoveStatements(ctx, w, r.pool, max(n, 1))
}

// moveTimes says a move's wall time for n payments beside the baseline's
// for all the run's payments: the rate, the time a payment and its
// multiple of the baseline's time a row. A move of none is counted as of
// one, and a baseline of no time has no multiple.
func moveTimes(took time.Duration, n int, baseline time.Duration, payments int) string {
	each := float64(took.Microseconds()) / float64(max(n, 1))
	baseEach := float64(baseline.Microseconds()) / float64(max(payments, 1))
	return fmt.Sprintf("wall time %.2f s for %s payments: %s a second (%.1f µs each; the baseline's bare UPDATEs %.1f µs a row, this %.1f × it)",
		took.Seconds(), thousands(n), thousands(int(rateIn(n, took))), each, baseEach, quotient(each, baseEach))
}

// waitStatsFlushed waits for the closed backends' row counts to reach
// pg_stat_user_tables: until two readings a quarter of a second apart
// agree and show writes, or five seconds.
func waitStatsFlushed(ctx context.Context, pool *pgxpool.Pool) error {
	prev := int64(-1)
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables`).Scan(&n); err != nil {
			return fmt.Errorf("pg_stat_user_tables: %w", err)
		}
		if n > 0 && n == prev {
			return nil
		}
		prev = n
	}
	return nil
}

// ownStatement leaves out the bench's own statements (its reset and
// these reports).
const ownStatement = `query NOT LIKE '%pg_stat%' AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`

// reportMoveStatements prints the statements PostgreSQL ran since the
// reset: how many the client sent (top-level), each kind's calls, time
// and rows, in all and per payment, and the leading ones run inside
// PL/pgSQL functions; then the WAL and the row writes per payment.
func reportMoveStatements(ctx context.Context, w io.Writer, pool *pgxpool.Pool, n int) error {
	rows, err := pool.Query(ctx, `SELECT toplevel, regexp_replace(left(query, 400), '\s+', ' ', 'g'), calls, total_exec_time, rows
		FROM pg_stat_statements WHERE `+ownStatement+` ORDER BY toplevel DESC, total_exec_time DESC`)
	if err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	type stmt struct {
		top         bool
		name        string
		calls, rows int64
		ms          float64
	}
	var top, nested []stmt
	var sent, inside int64
	var topMs float64
	for rows.Next() {
		var s stmt
		var q string
		if err := rows.Scan(&s.top, &q, &s.calls, &s.ms, &s.rows); err != nil {
			rows.Close()
			return err
		}
		s.name = statementName(q)
		if s.top {
			top, sent, topMs = append(top, s), sent+s.calls, topMs+s.ms
		} else {
			nested, inside = append(nested, s), inside+s.calls
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	p := float64(n)
	fmt.Fprintf(w, "statements sent: %d (%.4f a payment) of %d kinds, %.0f ms (%.1f µs a payment); and %d run inside PL/pgSQL functions (%.3f a payment)\n",
		sent, float64(sent)/p, len(top), topMs, 1000*topMs/p, inside, float64(inside)/p)
	fmt.Fprintf(w, "  %7s %9s %9s %10s %10s  %s\n", "calls", "rows", "ms", "µs/p", "rows/p", "statement (sent)")
	for _, s := range top {
		fmt.Fprintf(w, "  %7d %9d %9.1f %10.2f %10.2f  %s\n", s.calls, s.rows, s.ms, 1000*s.ms/p, float64(s.rows)/p, s.name)
	}
	for i, s := range nested {
		if i == 6 {
			fmt.Fprintf(w, "  … %d more kinds inside functions\n", len(nested)-i)
			break
		}
		fmt.Fprintf(w, "  %7d %9d %9.1f %10.2f %10.2f  inside a function: %s\n", s.calls, s.rows, s.ms, 1000*s.ms/p, float64(s.rows)/p, s.name)
	}
	var records, fpi, bytes float64
	if err := pool.QueryRow(ctx, `SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal`).Scan(&records, &fpi, &bytes); err != nil {
		return fmt.Errorf("pg_stat_wal: %w", err)
	}
	fmt.Fprintf(w, "WAL per payment: %.1f records, %.2f full-page images, %.0f bytes\n", records/p, fpi/p, bytes/p)
	return reportTableWrites(ctx, w, pool, p)
}

// moveBaseline times the least a move of every payment can write: in one
// transaction, one bare UPDATE of each payment's time, of its queue
// item's and of its slot's, in copies of their tables (indexes included),
// nothing placed, checked or audited.
func moveBaseline(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	if _, err := pool.Exec(ctx, `CREATE TABLE repace_base_payments (LIKE payments INCLUDING ALL);
		INSERT INTO repace_base_payments OVERRIDING SYSTEM VALUE SELECT * FROM payments;
		CREATE TABLE repace_base_queue (LIKE exec_queue INCLUDING ALL);
		INSERT INTO repace_base_queue SELECT * FROM exec_queue;
		CREATE TABLE repace_base_slots (LIKE pacing_slot INCLUDING ALL);
		INSERT INTO repace_base_slots SELECT * FROM pacing_slot;
		ANALYZE repace_base_payments, repace_base_queue, repace_base_slots`); err != nil {
		return 0, fmt.Errorf("move baseline: %w", err)
	}
	defer func() {
		_, _ = pool.Exec(context.WithoutCancel(ctx), `DROP TABLE repace_base_payments, repace_base_queue, repace_base_slots`)
	}()
	start := time.Now()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`UPDATE repace_base_payments SET scheduled_execution_time = scheduled_execution_time + interval '1 second', updated_at = now()`,
			`UPDATE repace_base_queue SET scheduled_exec_time = scheduled_exec_time + interval '1 second', updated_at = now()`,
			`UPDATE repace_base_slots SET scheduled_time = scheduled_time + interval '1 second'`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("move baseline: %w", err)
	}
	return time.Since(start), nil
}

// check fails unless the schedule keeps its promises: no window over the
// limit in force, every window's counter equal to its slots, and want
// waiting payments, none paused, each with its queue item READY at its
// time and its slot at its time.
func (r *repaceRun) check(ctx context.Context, when string, want int) error {
	over, unequal, err := r.windows(ctx)
	if err != nil {
		return err
	}
	var waiting, notReady, queueOff, slotOff, other int
	var first, last time.Time
	if err := r.pool.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE q.queue_status IS DISTINCT FROM 'READY'),
		count(*) FILTER (WHERE q.scheduled_exec_time IS DISTINCT FROM p.scheduled_execution_time),
		count(*) FILTER (WHERE s.scheduled_time IS DISTINCT FROM p.scheduled_execution_time),
		(SELECT count(*) FROM payments WHERE status <> 'SCHEDULED' OR paused_by IS NOT NULL),
		coalesce(min(p.scheduled_execution_time), 'epoch'), coalesce(max(p.scheduled_execution_time), 'epoch')
		FROM payments p
		LEFT JOIN exec_queue q ON q.item_type = $1 AND q.item_id = p.payment_id
		LEFT JOIN pacing_slot s ON s.event_id = p.payment_id
		WHERE p.status = 'SCHEDULED' AND p.paused_by IS NULL`, payment.ItemType).Scan(
		&waiting, &notReady, &queueOff, &slotOff, &other, &first, &last); err != nil {
		return fmt.Errorf("check %s: %w", when, err)
	}
	ok := over == 0 && unequal == 0 && waiting == want && notReady == 0 && queueOff == 0 && slotOff == 0 && other == 0
	fmt.Fprintf(r.o.Out, "check %s: windows over the limit (%d) %d, counters not equal to their slots %d; %s of %s payments waiting, "+
		"queue items not READY %d, not at their payment's time %d, slots not at it %d, others (paused, not SCHEDULED) %d; slots %+.1f s … %+.1f s after the instant: %s\n",
		when, r.limit, over, unequal, thousands(waiting), thousands(want), notReady, queueOff, slotOff, other,
		first.Sub(r.instant).Seconds(), last.Sub(r.instant).Seconds(), verdict(ok))
	if !ok {
		return fmt.Errorf("the schedule %s broke its promises", when)
	}
	return nil
}

// checkPaused fails unless every payment is paused by tag, SCHEDULED, its
// queue item PARKED and its slot given back, and the windows keep theirs.
func (r *repaceRun) checkPaused(ctx context.Context, when, tag string, want int) error {
	over, unequal, err := r.windows(ctx)
	if err != nil {
		return err
	}
	var paused, notParked, slotted, other int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE p.paused_by = $2 AND p.status = 'SCHEDULED'),
		count(*) FILTER (WHERE q.queue_status IS DISTINCT FROM 'PARKED'),
		count(*) FILTER (WHERE s.event_id IS NOT NULL),
		count(*) FILTER (WHERE p.paused_by IS DISTINCT FROM $2 OR p.status <> 'SCHEDULED')
		FROM payments p
		LEFT JOIN exec_queue q ON q.item_type = $1 AND q.item_id = p.payment_id
		LEFT JOIN pacing_slot s ON s.event_id = p.payment_id`, payment.ItemType, tag).Scan(&paused, &notParked, &slotted, &other); err != nil {
		return fmt.Errorf("check %s: %w", when, err)
	}
	ok := over == 0 && unequal == 0 && paused == want && notParked == 0 && slotted == 0 && other == 0
	fmt.Fprintf(r.o.Out, "check %s: windows over the limit %d, counters not equal to their slots %d; %s of %s payments paused and SCHEDULED, "+
		"queue items not PARKED %d, slots not given back %d, others %d: %s\n",
		when, over, unequal, thousands(paused), thousands(want), notParked, slotted, other, verdict(ok))
	if !ok {
		return fmt.Errorf("the pause broke its promises")
	}
	return nil
}

// windows counts the config's windows over the limit in force and those
// whose counter is not the number of their slots.
func (r *repaceRun) windows(ctx context.Context) (over, unequal int, err error) {
	err = r.pool.QueryRow(ctx, `WITH s AS (SELECT window_start, count(*)::int AS n FROM pacing_slot WHERE config_name = $1 GROUP BY 1),
		     w AS (SELECT window_start, slot_count FROM pacing_window WHERE config_name = $1)
		SELECT count(*) FILTER (WHERE greatest(coalesce(s.n, 0), coalesce(w.slot_count, 0)) > $2),
		       count(*) FILTER (WHERE coalesce(s.n, 0) <> coalesce(w.slot_count, 0))
		FROM s FULL JOIN w USING (window_start)`, repaceConfig, r.limit).Scan(&over, &unequal)
	if err != nil {
		return 0, 0, fmt.Errorf("count the windows: %w", err)
	}
	return over, unequal, nil
}

// keepOrder notes the waiting payments' order before the pause, outside
// what is measured.
func (r *repaceRun) keepOrder(ctx context.Context) error {
	_, err := r.pool.Exec(ctx, `CREATE UNLOGGED TABLE repace_order AS
		SELECT payment_id, scheduled_execution_time AS before FROM payments WHERE status = 'SCHEDULED'`)
	return err
}

// orderKept fails unless the resumed payments kept their order: none
// has a slot before the one that was before it.
func (r *repaceRun) orderKept(ctx context.Context) error {
	var n, inverted int
	if err := r.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE now_at < prev_at) FROM (
		SELECT p.scheduled_execution_time AS now_at, lag(p.scheduled_execution_time) OVER (ORDER BY o.before, o.payment_id) AS prev_at
		FROM repace_order o JOIN payments p USING (payment_id)) x`).Scan(&n, &inverted); err != nil {
		return fmt.Errorf("check the order: %w", err)
	}
	fmt.Fprintf(r.o.Out, "check the order after the resume: %s payments, %d before the one that was before them: %s\n", thousands(n), inverted, verdict(inverted == 0))
	if _, err := r.pool.Exec(ctx, `DROP TABLE repace_order`); err != nil {
		return err
	}
	if inverted > 0 {
		return fmt.Errorf("the resume changed the order of %d payments", inverted)
	}
	return nil
}

// priorityOrder fails unless every waiting payment of priority first has
// a slot before every one of then.
func (r *repaceRun) priorityOrder(ctx context.Context, first, then payment.Priority) error {
	var lastFirst, firstThen time.Time
	var nFirst, nThen int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE priority = $1), coalesce(max(scheduled_execution_time) FILTER (WHERE priority = $1), 'epoch'),
		count(*) FILTER (WHERE priority = $2), coalesce(min(scheduled_execution_time) FILTER (WHERE priority = $2), 'epoch')
		FROM payments WHERE status = 'SCHEDULED'`, string(first), string(then)).Scan(&nFirst, &lastFirst, &nThen, &firstThen); err != nil {
		return fmt.Errorf("check the priorities: %w", err)
	}
	ok := nFirst > 0 && nThen > 0 && lastFirst.Before(firstThen)
	fmt.Fprintf(r.o.Out, "check the priorities: the last of %s %s payments at %+.2f s, the first of %s %s at %+.2f s: %s\n",
		thousands(nFirst), first, lastFirst.Sub(r.instant).Seconds(), thousands(nThen), then, firstThen.Sub(r.instant).Seconds(), verdict(ok))
	if !ok {
		return fmt.Errorf("%s payments are not all before the %s ones", first, then)
	}
	return nil
}
