package bench

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	_ "modernc.org/sqlite" // read the embedded Temporal's store

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// PipelineOptions configure the before/after benchmark.
type PipelineOptions struct {
	Env

	Ns []int // payments per run, e.g. 10,000 and 50,000

	// The pipeline's dispatch settings for the run (exec_rate_config);
	// zero (BatchSize, Interval) or negative: as configured.
	BatchSize      int
	Interval       time.Duration
	Jitter         time.Duration
	PreStartBuffer time.Duration
	MaxInFlight    int
	ExecMode       string // empty: as configured

	StartConcurrency int           // the old design's intake: concurrent workflow starts
	MaxWait          time.Duration // per design, from the instant
	// Designs to run: "ab" (both, the comparison; also when empty), "a"
	// or "b" alone (a large N of one design in less than both take).
	Designs string
}

// PipelineSettings binds the benchmark's flags.
func PipelineSettings(o *PipelineOptions) []*config.Setting {
	return []*config.Setting{
		{Flag: "n", Default: "10000", Usage: "payments due at one instant, comma-separated for several runs (e.g. 10000,50000)",
			Parse: func(v string) error {
				o.Ns = nil
				for _, f := range strings.Split(v, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(f))
					if err != nil || n < 100 || n > 1_000_000 {
						return fmt.Errorf("want whole numbers from 100 to 1000000, comma-separated, e.g. 10000,50000")
					}
					o.Ns = append(o.Ns, n)
				}
				return nil
			}},
		config.Int("batch-size", 0, 0, queue.MaxBatchSize, "pipeline: items claimed per dispatch cycle (0: as configured)", &o.BatchSize),
		config.Duration("interval", "0s", 0, "pipeline: dispatch interval, whole seconds (0: as configured)", &o.Interval),
		config.Duration("jitter", "-1s", -time.Second, "pipeline: start jitter window (negative: as configured)", &o.Jitter),
		config.Duration("pre-start-buffer", "-1s", -time.Second, "pipeline: how far ahead of its time an item is claimed, whole seconds (negative: as configured)", &o.PreStartBuffer),
		config.Int("max-in-flight", -1, -1, 1_000_000, "pipeline: cap on items claimed or dispatched and not yet settled (0: none; -1: as configured)", &o.MaxInFlight),
		config.ExecMode("PAYMENT's exec_mode: PER_ITEM (a workflow a payment) or BATCH (a workflow a claimed batch); default: as configured", &o.ExecMode),
		config.Int("start-concurrency", 32, 1, 1024, "old design: concurrent workflow starts at intake", &o.StartConcurrency),
		config.Duration("max-wait", "45m", time.Minute, "per design: give up this long after the instant", &o.MaxWait),
		{Flag: "designs", Default: "ab", Usage: "which designs to run: ab (both, compared), a or b (one alone, in a fresh store)",
			Parse: func(v string) error {
				if v != "ab" && v != "a" && v != "b" {
					return fmt.Errorf("want ab, a or b")
				}
				o.Designs = v
				return nil
			}},
	}
}

// sleepingTaskQueue is where the old design's workflows run.
const sleepingTaskQueue = "bench-sleeping-task-queue"

// SleepingPaymentWorkflow is the design the pipeline replaces: one workflow
// per payment, started at intake, persisting it, sleeping in Temporal until
// the execution time, then executing it as the pipeline's execution does
// (PaymentExecution, inline: SubmitPayment's debit, booking and rail
// instruction, then the status and the notifications). The request was
// validated at intake, so its amount and IBAN are already in normal form.
func SleepingPaymentWorkflow(ctx workflow.Context, r payment.Request) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumAttempts: 10},
	})
	var sa *sleepingActivities
	if err := workflow.ExecuteLocalActivity(ctx, sa.PersistScheduled, r, r.RequestedExecutionTime).Get(ctx, nil); err != nil {
		return err
	}
	if d := r.RequestedExecutionTime.Sub(workflow.Now(ctx)); d > 0 {
		if err := workflow.Sleep(ctx, d); err != nil {
			return err
		}
	}
	pc, err := json.Marshal(payment.Context{Request: r, Amount: r.Amount, Enrichment: payment.Enrichment{CreditorIBAN: r.Creditor.IBAN}})
	if err != nil {
		return err
	}
	return payment.PaymentExecution(ctx, payment.Key(r.TenantID, r.PaymentID), string(pc))
}

// sleepingActivities are the old design's own steps.
type sleepingActivities struct{ store *payment.Store }

// PersistScheduled stores the payment SCHEDULED at execAt, as the old
// design's intake did: no pacing, no intake row, no queue item.
func (a *sleepingActivities) PersistScheduled(ctx context.Context, r payment.Request, execAt time.Time) error {
	m, _ := payment.Validate(r, time.Time{})
	if m.Currency == "" {
		return temporal.NewNonRetryableApplicationError("invalid amount or currency", payment.ErrTypeRejected, nil)
	}
	_, err := a.store.Record(ctx, r, &m, payment.StatusScheduled, "", &execAt)
	if errors.Is(err, payment.ErrConflict) {
		return temporal.NewNonRetryableApplicationError(err.Error(), payment.ErrTypeConflict, err)
	}
	return err
}

// designResult is what one design's run measured.
type designResult struct {
	ran         bool          // false: this design was not run (--designs)
	intake      time.Duration // submitting all N
	intakeLate  time.Duration // how far intake ran past the instant (0: done before)
	peakOpen    int           // open workflows, the most seen at once
	peakBytes   int64         // Temporal store growth at the peak
	peakRows    int64         // Temporal store row growth at the peak
	drain       time.Duration // instant → all delivered (DELIVERED, RETURNED or FAILED)
	processing  int           // payments delivered at the end
	timedOut    bool
	finalBytes  int64 // Temporal store growth at the end
	finalRows   int64
	openSamples int
	cpuMachine  time.Duration // CPU busy on the machine, intake → all delivered
	stolen      float64       // share of the CPU the hypervisor stole meanwhile (-1: unknown)
	cpuProcess  time.Duration // of it, this process's (the embedded Temporal included)
}

// RunPipeline runs the before/after benchmark for each N.
func RunPipeline(ctx context.Context, o PipelineOptions) error {
	fmt.Fprintf(o.Out, "paydispatch bench pipeline: %d CPUs, %s; embedded PostgreSQL and embedded Temporal (SQLite), fresh per N\n",
		runtime.NumCPU(), memTotal())
	o.Designs = cmp.Or(o.Designs, "ab")
	if strings.Contains(o.Designs, "a") {
		fmt.Fprintf(o.Out, "(a) one workflow per payment, started at intake, sleeping until the instant (%d concurrent starts)\n", o.StartConcurrency)
	}
	if strings.Contains(o.Designs, "b") {
		fmt.Fprintf(o.Out, "(b) the pipeline: bulk Phase A in chunks of 1,000, the queue, the dispatcher (its settings printed with each run)\n")
	}
	type row struct {
		n    int
		a, b designResult
	}
	var rows []row
	for _, n := range o.Ns {
		a, b, err := runPipelineN(ctx, o, n)
		if err != nil {
			return fmt.Errorf("pipeline at N=%d: %w", n, err)
		}
		rows = append(rows, row{n, a, b})
		printPipeline(o.Out, n, a, b)
		if a.ran && b.ran && !a.timedOut && !b.timedOut {
			// Less is better: the ratio is how many times faster (b) drains.
			o.Figures.add(Figure{What: fmt.Sprintf("N=%s, (b) the pipeline: instant → all delivered; peak open workflows %s vs %s", thousands(n), thousands(b.peakOpen), thousands(a.peakOpen)),
				Value: b.drain.Seconds(), Unit: "s", Baseline: "(a) a sleeping workflow per payment", BaseVal: a.drain.Seconds(), BaseUnit: "s",
				Ratio: a.drain.Seconds() / max(b.drain.Seconds(), 0.001)})
		}
	}
	if len(rows) > 1 && o.Designs == "ab" {
		fmt.Fprintf(o.Out, "\npeak open workflows, (a)/(b) by N:")
		for _, r := range rows {
			fmt.Fprintf(o.Out, "  N=%s: %.1f×", thousands(r.n), float64(r.a.peakOpen)/float64(max(r.b.peakOpen, 1)))
		}
		fmt.Fprintln(o.Out)
	}
	return nil
}

func printPipeline(w io.Writer, n int, a, b designResult) {
	fmt.Fprintf(w, "\nN = %s payments due at one instant\n", thousands(n))
	fmt.Fprintf(w, "  %-42s %16s %16s %10s\n", "", "(a) sleeping", "(b) pipeline", "(a)/(b)")
	both := a.ran && b.ran
	// row prints one figure of each design run, and their ratio when both
	// ran and ratio is set.
	row := func(name string, fig func(designResult) string, ratio func(designResult) float64) {
		cell := func(r designResult) string {
			if !r.ran {
				return "not run"
			}
			return fig(r)
		}
		q := ""
		if both && ratio != nil {
			q = "-"
			if y := ratio(b); y != 0 {
				q = fmt.Sprintf("%.1f×", ratio(a)/y)
			}
		}
		fmt.Fprintf(w, "  %-42s %16s %16s %10s\n", name, cell(a), cell(b), q)
	}
	perPayment := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000/float64(n)) }
	row("peak open workflows", func(r designResult) string { return thousands(r.peakOpen) },
		func(r designResult) float64 { return float64(r.peakOpen) })
	row("Temporal store growth at the peak (bytes)", func(r designResult) string { return mib(r.peakBytes) },
		func(r designResult) float64 { return float64(r.peakBytes) })
	row("Temporal store growth at the peak (rows)", func(r designResult) string { return thousands(int(r.peakRows)) },
		func(r designResult) float64 { return float64(r.peakRows) })
	row("instant → all delivered", secs, func(r designResult) float64 { return r.drain.Seconds() })
	row("intake call for all N", func(r designResult) string { return fmt.Sprintf("%.1f s", r.intake.Seconds()) }, nil)
	row("CPU per payment, machine (intake → done)", func(r designResult) string { return perPayment(r.cpuMachine) },
		func(r designResult) float64 { return r.cpuMachine.Seconds() })
	row("  of which this process (Temporal included)", func(r designResult) string { return perPayment(r.cpuProcess) }, nil)
	row("CPU stolen by the hypervisor meanwhile", func(r designResult) string { return pct(r.stolen) }, nil)
	row("Temporal store growth at the end (bytes)", func(r designResult) string { return mib(r.finalBytes) }, nil)
	row("Temporal store growth at the end (rows)", func(r designResult) string { return thousands(int(r.finalRows)) }, nil)
	for _, d := range []struct {
		name string
		r    designResult
	}{{"(a)", a}, {"(b)", b}} {
		if d.r.intakeLate > 0 {
			fmt.Fprintf(w, "  note: %s intake finished %.1f s after the instant\n", d.name, d.r.intakeLate.Seconds())
		}
		if d.r.timedOut {
			fmt.Fprintf(w, "  note: %s gave up with %d of %d delivered\n", d.name, d.r.processing, n)
		}
	}
	if !both {
		fmt.Fprintf(w, "  targets: compared only when both designs run (--designs ab)\n")
		return
	}
	fmt.Fprintf(w, "  target: (b) drains ≥ 1.5× faster than (a): %s\n", verdict(!b.timedOut && !a.timedOut && a.drain.Seconds() >= 1.5*b.drain.Seconds()))
	fmt.Fprintf(w, "  target: ≥ 200× fewer peak open workflows (set for N = 100,000): %s\n", verdict(a.peakOpen >= 200*b.peakOpen))
}

func pct(f float64) string {
	if f < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.0f %%", f*100)
}

func secs(r designResult) string {
	if r.timedOut {
		return "not reached"
	}
	return fmt.Sprintf("%.1f s", r.drain.Seconds())
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// pipelineEnv is one N's private PostgreSQL and embedded Temporal.
type pipelineEnv struct {
	o     PipelineOptions
	db    *postgres.DB
	tc    *ptemporal.Conn
	store *sql.DB // the Temporal SQLite file, read-only
}

func runPipelineN(ctx context.Context, o PipelineOptions, n int) (a, b designResult, err error) {
	dir, err := os.MkdirTemp("", "paydispatch-bench-pipeline-")
	if err != nil {
		return a, b, err
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755) // the server user must enter it
	log := o.Logger
	db, err := postgres.Open(ctx, postgres.Options{DataDir: dir, BinDir: o.PGBinDir, MaxConns: 40, Logger: log})
	if err != nil {
		return a, b, err
	}
	defer db.Close()
	if _, err := app.Migrate(ctx, db.Pool, nil); err != nil {
		return a, b, err
	}
	if err := openBenchAccounts(ctx, db.Pool); err != nil {
		return a, b, err
	}
	tc, err := ptemporal.Connect(ctx, ptemporal.Options{DataDir: dir, Logger: log, EmbeddedLogLevel: "fatal", HeldWorkflowTypes: []string{payment.ExecWorkflowName, dispatch.BatchWorkflowName}})
	if err != nil {
		return a, b, err
	}
	defer tc.Close()
	store, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "temporal", "temporal.db")+"?mode=ro&_pragma=busy_timeout%3D10000")
	if err != nil {
		return a, b, err
	}
	defer store.Close()
	e := &pipelineEnv{o: o, db: db, tc: tc, store: store}

	for _, start := range []func(*postgres.DB, *ptemporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, app.Options{})
		if err != nil {
			return a, b, err
		}
		defer stop()
	}
	// The full path in both designs: the booking's rail instruction through
	// the outbox to the rail simulator, as serve runs it.
	stopDelivery, err := startDelivery(ctx, db, log)
	if err != nil {
		return a, b, err
	}
	defer stopDelivery()
	sw := worker.New(tc.Client, sleepingTaskQueue, app.Options{}.WorkerOptions())
	sw.RegisterWorkflow(SleepingPaymentWorkflow)
	sw.RegisterActivity(&sleepingActivities{store: payment.NewStore(db.Pool)})
	payment.RegisterExec(sw, payment.NewExecActivities(payment.ExecConfig{Store: payment.NewStore(db.Pool), Slots: pacing.New(pacing.Config{Pool: db.Pool}),
		Process: process.NewActivities(process.ActivitiesConfig{DB: db.Pool, Registry: app.Processes()})}))
	if err := sw.Start(); err != nil {
		return a, b, err
	}
	defer sw.Stop()

	if strings.Contains(o.Designs, "a") {
		fmt.Fprintf(o.Out, "\nN=%s: (a) running ...\n", thousands(n))
		if a, err = e.runSleeping(ctx, n); err != nil {
			return a, b, err
		}
		a.ran = true
	}
	if strings.Contains(o.Designs, "b") {
		fmt.Fprintf(o.Out, "N=%s: (b) running ...\n", thousands(n))
		if b, err = e.runPipeline(ctx, n); err != nil {
			return a, b, err
		}
		b.ran = true
	}
	return a, b, ledgerCheck(ctx, db.Pool, o.Out)
}

// openBenchAccounts opens the accounts benchRequest's payments debit:
// ACC-t0 … ACC-t9, one per tenant, in EUR, each with more than enough.
func openBenchAccounts(ctx context.Context, pool *pgxpool.Pool) error {
	for i := range 10 {
		if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: fmt.Sprintf("ACC-t%d", i), TenantID: fmt.Sprintf("t%d", i),
			Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000_000)}); err != nil {
			return fmt.Errorf("open bench accounts: %w", err)
		}
	}
	return nil
}

// ledgerCheck runs paydispatch verify's check on the benchmark's
// database, prints its verdict and fails on any violation.
func ledgerCheck(ctx context.Context, pool *pgxpool.Pool, out io.Writer) error {
	vs, err := payment.Verify(ctx, pool)
	if err != nil {
		return fmt.Errorf("ledger check: %w", err)
	}
	fmt.Fprintf(out, "ledger check (paydispatch verify): %d violations: %s\n", len(vs), verdict(len(vs) == 0))
	for _, v := range vs {
		fmt.Fprintf(out, "  %s\n", v)
	}
	if len(vs) > 0 {
		return fmt.Errorf("the ledger check found %d violations", len(vs))
	}
	return nil
}

func benchRequest(prefix string, i int, at time.Time) payment.Request {
	return payment.Request{
		PaymentID: fmt.Sprintf("%s-%07d", prefix, i), TenantID: fmt.Sprintf("t%d", i%10), DebtorAccount: fmt.Sprintf("ACC-t%d", i%10),
		Amount: "1.00", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
		RequestedExecutionTime: at,
	}
}

// runSleeping is design (a).
func (e *pipelineEnv) runSleeping(ctx context.Context, n int) (designResult, error) {
	// Leave time for the starts: this machine did ~90-100 a second at
	// 10,000 and 20,000; a late intake is reported with the figures.
	instant := time.Now().Add(20*time.Second + time.Duration(n)*16*time.Millisecond).Truncate(time.Second)
	return e.measure(ctx, n, "a", instant, func(ctx context.Context) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, e.o.StartConcurrency)
		for range e.o.StartConcurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n || ctx.Err() != nil {
						return
					}
					r := benchRequest("a", i, instant)
					_, err := e.tc.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
						ID: "sleeping-" + r.PaymentID, TaskQueue: sleepingTaskQueue,
					}, SleepingPaymentWorkflow, r)
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	})
}

// runPipeline is design (b), through the intake and dispatcher serve runs.
func (e *pipelineEnv) runPipeline(ctx context.Context, n int) (designResult, error) {
	q := queue.New(e.db.Pool)
	settings := map[string]string{"enabled": "true"}
	if e.o.BatchSize > 0 {
		settings["batch_size"] = strconv.Itoa(e.o.BatchSize)
	}
	if e.o.Interval > 0 {
		settings["dispatch_interval_secs"] = strconv.Itoa(max(int(e.o.Interval/time.Second), 1))
	}
	if e.o.Jitter >= 0 {
		settings["jitter_window_ms"] = strconv.Itoa(int(e.o.Jitter / time.Millisecond))
	}
	if e.o.PreStartBuffer >= 0 {
		settings["pre_start_buffer_secs"] = strconv.Itoa(int(e.o.PreStartBuffer / time.Second))
	}
	if e.o.MaxInFlight >= 0 {
		settings["max_in_flight"] = strconv.Itoa(e.o.MaxInFlight)
	}
	if e.o.ExecMode != "" {
		settings["exec_mode"] = e.o.ExecMode
	}
	c, err := q.UpdateConfig(ctx, payment.ItemType, settings)
	if err != nil {
		return designResult{}, err
	}
	fmt.Fprintf(e.o.Out, "N=%s: (b) exec mode %s, dispatcher every %s, batch %d, jitter %s, pre-start buffer %s, max in flight %d\n",
		thousands(n), c.ExecMode, c.DispatchInterval, c.BatchSize, c.JitterWindow, c.PreStartBuffer, c.MaxInFlight)
	stop, err := app.StartDispatcher(ctx, "schedule", e.db, e.tc, e.o.Logger, app.Options{})
	if err != nil {
		return designResult{}, err
	}
	defer stop()
	svc := app.PaymentService(e.db, e.tc, payment.ServiceConfig{ChunkSize: 1000})
	instant := time.Now().Add(20*time.Second + time.Duration(n)*2*time.Millisecond).Truncate(time.Second)
	return e.measure(ctx, n, "b", instant, func(ctx context.Context) error {
		reqs := make([]payment.Request, n)
		for i := range reqs {
			reqs[i] = benchRequest("b", i, instant)
		}
		taken, err := svc.Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs, Whole: true})
		return errors.Join(err, taken.Refused())
	})
}

// measure runs intake, then samples the Temporal store every second until
// every payment with the prefix is delivered (DELIVERED, RETURNED or
// FAILED: through the outbox and the rail).
func (e *pipelineEnv) measure(ctx context.Context, n int, prefix string, instant time.Time, intake func(context.Context) error) (designResult, error) {
	var r designResult
	baseBytes, baseRows, err := e.storeSize(ctx)
	if err != nil {
		return r, err
	}
	baseOpen, err := e.openWorkflows(ctx) // e.g. the dispatch schedule's own workflow
	if err != nil {
		return r, err
	}
	var (
		mu       sync.Mutex
		stopSamp = make(chan struct{})
		sampErr  error
		sampDone = make(chan struct{})
	)
	sample := func() {
		open, err := e.openWorkflows(ctx)
		if err != nil {
			sampErr = err
			return
		}
		mu.Lock()
		defer mu.Unlock()
		r.openSamples++
		if open > r.peakOpen {
			bytes, rows, err := e.storeSize(ctx)
			if err != nil {
				sampErr = err
				return
			}
			r.peakOpen, r.peakBytes, r.peakRows = open, bytes-baseBytes, rows-baseRows
		}
	}
	go func() {
		defer close(sampDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopSamp:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	stopSampling := func() {
		close(stopSamp)
		<-sampDone
	}

	cpu0, _ := readCPU()
	proc0 := processCPU()
	started := time.Now()
	if err := intake(ctx); err != nil {
		stopSampling()
		return r, fmt.Errorf("intake: %w", err)
	}
	r.intake = time.Since(started)
	if late := time.Since(instant); late > 0 {
		r.intakeLate = late
	}
	deadline := instant.Add(e.o.MaxWait)
	for {
		var done int
		if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status IN ('DELIVERED', 'RETURNED', 'FAILED') AND external_id LIKE $1`, prefix+"-%").Scan(&done); err != nil {
			stopSampling()
			return r, err
		}
		r.processing = done
		if done == n {
			r.drain = time.Since(instant)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.timedOut = true
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.cpuMachine, r.cpuProcess = busySince(cpu0), processCPU()-proc0
	r.stolen = -1
	if st, ok := stolenSince(cpu0); ok {
		r.stolen = st
	}
	stopSampling()
	if sampErr != nil {
		return r, sampErr
	}
	// Let the last workflows close before the next design starts.
	for i := 0; i < 120; i++ {
		open, err := e.openWorkflows(ctx)
		if err != nil {
			return r, err
		}
		if open <= baseOpen+1 { // a dispatch cycle may be running
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	bytes, rows, err := e.storeSize(ctx)
	if err != nil {
		return r, err
	}
	r.finalBytes, r.finalRows = bytes-baseBytes, rows-baseRows
	return r, nil
}

// openWorkflows counts open executions straight from Temporal's store
// (state CREATED or RUNNING), exact where visibility would lag.
func (e *pipelineEnv) openWorkflows(ctx context.Context) (int, error) {
	var n int
	err := e.store.QueryRowContext(ctx, `SELECT count(*) FROM current_executions WHERE state IN (1, 2)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count open workflows: %w", err)
	}
	return n, nil
}

// storeSize is the Temporal store's used bytes (pages in use) and its
// rows over all tables.
func (e *pipelineEnv) storeSize(ctx context.Context) (bytes, rows int64, err error) {
	conn, err := e.store.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	var pages, free, size int64
	for q, dst := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
		if err := conn.QueryRowContext(ctx, q).Scan(dst); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", q, err)
		}
	}
	tables, err := conn.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return 0, 0, err
	}
	var names []string
	for tables.Next() {
		var s string
		if err := tables.Scan(&s); err != nil {
			tables.Close()
			return 0, 0, err
		}
		names = append(names, s)
	}
	tables.Close()
	for _, t := range names {
		var c int64
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM "`+t+`"`).Scan(&c); err != nil {
			return 0, 0, fmt.Errorf("count %s: %w", t, err)
		}
		rows += c
	}
	return (pages - free) * size, rows, nil
}
