package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/history"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/svgchart"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/screening"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// DrainOptions configure the end-to-end pacing benchmark.
type DrainOptions struct {
	Env

	Payments     int
	MaxPerWindow int
	Window       time.Duration
	SVG          string // where to write the histogram; empty: none
	Interval     int    // dispatch_interval_secs; 0: as configured
	MaxInFlight  int    // max_in_flight; negative: as configured
	LeadMs       int    // paced_lead_ms; negative: the item type's own
	// PreStartBuffer is pre_start_buffer_secs, how far ahead the
	// dispatcher claims (negative: as configured).
	PreStartBuffer int
	MaxWait        time.Duration
	// AllVisibilityIndexes keeps every index of the embedded Temporal's
	// visibility table (the before of devserver's trimming).
	AllVisibilityIndexes bool
	// Partitions of the embedded Temporal's task queues (0: its default).
	Partitions int
	// ExecOnly stops at the execution (PROCESSING): no relayer, no rail.
	ExecOnly bool
	// NoEagerStart starts execution workflows the ordinary way (through
	// the matching service), the before of eager start.
	NoEagerStart bool
	// NoSettle leaves every queue item to the reconcile, the before of
	// settlement by the execution.
	NoSettle bool
	// DispatchMode is the dispatcher's: schedule (the default: a Temporal
	// Schedule fires each cycle) or lease (an in-process tick under a
	// PostgreSQL lease).
	DispatchMode string
	// NoGroupCommit runs a batch execution's payments each on its own
	// transactions, the before of group commit.
	NoGroupCommit bool
	// Debtors is how many debtor accounts (and tenants) the payments come
	// from, 1 to 10: one is a payroll, every payment on one account.
	Debtors int
	// ExecMode is PAYMENT's exec_mode (empty: as configured).
	ExecMode string
	// BatchSize is the claim's batch_size (0: as configured).
	BatchSize int
	// WorkflowTaskSlots and Pollers are the payment workers' workflow
	// task slots and task pollers of each kind (0: the product's).
	WorkflowTaskSlots, Pollers int
	// TemporalStore is where the embedded Temporal keeps its data (auto:
	// the product's choice for a new data directory).
	TemporalStore ptemporal.Store
	// PGStats has the embedded PostgreSQL count its statements
	// (pg_stat_statements) and prints them per payment after the drain.
	PGStats bool
	// CPUProfile, when set, is where the drain's CPU profile of this
	// process (embedded Temporal, workers, dispatcher, relayer) is written.
	CPUProfile string
	// MemProfile, when set, is where the heap profile of this process at
	// the Go heap's peak is written.
	MemProfile string
	// RailProcess runs the rail simulator as its own process, as a
	// deployment's rail is (its record of every instruction is then not
	// in this process's heap and resident set).
	RailProcess bool
	// ScreeningDelay, when set, runs Phase A with the screening hook on,
	// against the screening simulator in its own process answering every
	// call after this delay (every payment clear).
	ScreeningDelay time.Duration
	// Retention is how long the embedded Temporal keeps a closed workflow
	// (0: Temporal's 24 hours): shorter than the drain, the deletions are
	// part of what the drain costs.
	Retention time.Duration
	// LimitChangeAt, when set, is how long after the instant the pacing
	// config's max per window becomes LimitChangeTo, as POST
	// /admin/rate-limit/config changes it (pacing.Limiter.PutConfig, then
	// payment.Service.RepaceConfig moves what waits).
	LimitChangeAt time.Duration
	LimitChangeTo int
	// PauseAt and ResumeAt, when set, are how long after the instant
	// PauseTenant's payments are paused and resumed (payment.Service.Pause,
	// Resume).
	PauseAt, ResumeAt time.Duration
	PauseTenant       string
	Steady            SteadyOptions
	// History is how many payments' worth of a past run's rows are
	// loaded (history.Load) before the drain: its cost on a database
	// with years behind it, beside one on an empty database (0), over
	// HistoryDays days, without what the default retention deletes
	// unless HistoryKeepAll.
	History, HistoryDays int
	HistoryKeepAll       bool

	// webhooks, when set (bench webhooks), is tenant t0's endpoint: its
	// receiver's report follows the drain's.
	webhooks *webhookRun
}

// drainSettings binds the benchmark's flags but the steady state's.
func drainSettings(o *DrainOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 20000, 100, 1_000_000, "payments due at one instant", &o.Payments),
		config.Int("max-per-window", 100, 1, 100_000, "the pacing config's events per window", &o.MaxPerWindow),
		isoFlag("window", "PT4S", time.Second, "the pacing config's window (ISO-8601, whole seconds)", &o.Window),
		config.Int("lead-ms", -1, -1, 60_000, "the paced lead in ms (exec_rate_config paced_lead_ms; -1: as configured)", &o.LeadMs),
		config.Int("pre-start-buffer", -1, -1, 3600, "how far ahead in seconds the dispatcher claims items (exec_rate_config pre_start_buffer_secs; a lever moves only what is not claimed; -1: as configured)", &o.PreStartBuffer),
		config.Int("interval", 0, 0, 60, "the dispatcher's interval in seconds (exec_rate_config dispatch_interval_secs; 0: as configured)", &o.Interval),
		config.Int("max-in-flight", -1, -1, 1_000_000, "cap on items claimed or dispatched and not yet settled (exec_rate_config max_in_flight; 0: none; -1: as configured)", &o.MaxInFlight),
		{Flag: "svg", Default: "pacing-histogram.svg", Usage: "write the histogram of executions per second here (empty: don't)",
			Parse: func(v string) error { o.SVG = v; return nil }},
		config.Duration("max-wait", "60m", time.Minute, "give up this long after the instant", &o.MaxWait),
		config.Int("task-queue-partitions", 0, 0, 16, "partitions of the embedded Temporal's task queues (0: the embedded default, 1; Temporal's own is 4)", &o.Partitions),
		config.Bool("all-visibility-indexes", "keep every index of the embedded Temporal's visibility table (default: the kept ones)", &o.AllVisibilityIndexes),
		config.Bool("no-eager-start", "start execution workflows without Temporal's eager start (the comparison)", &o.NoEagerStart),
		config.Bool("no-settle", "leave queue items to the dispatcher's reconcile, not settled by the execution (the comparison)", &o.NoSettle),
		{Flag: "dispatch-mode", Default: "schedule", Usage: "the dispatcher's mode: schedule (a Temporal Schedule fires each cycle) or lease (an in-process tick under a PostgreSQL lease), as serve's --dispatch-mode",
			Parse: func(v string) error {
				if v != "schedule" && v != "lease" {
					return fmt.Errorf("want schedule or lease, e.g. --dispatch-mode lease")
				}
				o.DispatchMode = v
				return nil
			}},
		config.Bool("no-group-commit", "run each of a batch execution's payments on its own transactions, not its group's together (the comparison)", &o.NoGroupCommit),
		config.Bool("exec-only", "stop at the execution (PROCESSING): no outbox relayer, no rail simulator (default: the full path, to DELIVERED)", &o.ExecOnly),
		config.ExecMode("PAYMENT's exec_mode: PER_ITEM (a workflow a payment) or BATCH (a workflow a claimed batch); default: as configured", &o.ExecMode),
		config.Int("debtors", 10, 1, 10, "debtor accounts (one a tenant) the payments come from; 1: a payroll, every payment debiting one account", &o.Debtors),
		config.Int("batch-size", 0, 0, queue.MaxBatchSize, "items a dispatch cycle claims (exec_rate_config batch_size; 0: as configured)", &o.BatchSize),
		config.Int("workflow-task-slots", 0, 0, 100_000, "the payment workers' workflow task slots (0: the product's, 1,000)", &o.WorkflowTaskSlots),
		config.Int("pollers", 0, 0, 64, "the payment workers' pollers of workflow and of activity tasks (0: the SDK's, 2 each)", &o.Pollers),
		storeFlag(&o.TemporalStore),
		config.Bool("pg-stats", "count PostgreSQL's statements during the drain (pg_stat_statements) and print the leading ones per payment", &o.PGStats),
		{Flag: "cpuprofile", Usage: "write this process's CPU profile of the drain here (go tool pprof)",
			Parse: func(v string) error { o.CPUProfile = v; return nil }},
		{Flag: "retention", Usage: "how long the embedded Temporal keeps a closed workflow, e.g. 1m: shorter than the drain, the engine deletes workflows during it, as at steady state, and the CPU figures include the deletions (default: Temporal's 24h, none deleted)",
			Parse: func(v string) error {
				if v == "" {
					o.Retention = 0
					return nil
				}
				d, err := time.ParseDuration(v)
				if err != nil || d < ptemporal.MinRetention {
					return fmt.Errorf("want a duration of at least %v, e.g. 1m", ptemporal.MinRetention)
				}
				o.Retention = d
				return nil
			}},
		config.Bool("rail-process", "run the rail simulator as its own process ('paydispatch rail-sim'), as a deployment's rail is: this process's resident set and CPU are then paydispatch's alone, the simulator's peak resident set is printed apart", &o.RailProcess),
		{Flag: "screening-delay", Usage: "run with the screening hook on, against 'paydispatch screen-sim --delay D' in its own process, e.g. 50ms: every payment screened (and clear) in Phase A, in calls of the product's defaults (default: no screening)",
			Parse: func(v string) error {
				if v == "" {
					o.ScreeningDelay = 0
					return nil
				}
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 || d > time.Second {
					return fmt.Errorf("want a delay a call above 0 and up to 1s, e.g. 50ms")
				}
				o.ScreeningDelay = d
				return nil
			}},
		{Flag: "memprofile", Usage: "write this process's heap profile at the Go heap's peak (sampled every second, intake included) here (go tool pprof)",
			Parse: func(v string) error { o.MemProfile = v; return nil }},
		offsetFlag("limit-change-at", "a lever: this long after the instant (e.g. 60s), change the config's max per window to --limit-change-to and move what waits (PutConfig, then RepaceConfig, as POST /admin/rate-limit/config does)", &o.LimitChangeAt),
		config.Int("limit-change-to", 0, 0, 100_000, "the config's max per window from --limit-change-at on (0: no change)", &o.LimitChangeTo),
		offsetFlag("pause-at", "a lever: this long after the instant (e.g. 20s), pause --pause-tenant's payments (payment.Service.Pause)", &o.PauseAt),
		offsetFlag("resume-at", "this long after the instant (e.g. 35s), resume them (payment.Service.Resume)", &o.ResumeAt),
		config.Int("history", 0, 0, 100_000_000, "load this many payments' worth of a past run's rows first (as 'paydispatch bench history' does; 0: an empty database); the drain's figures count its own payments only", &o.History),
		config.Int("history-days", 30, 1, 3650, "the days --history's payments are spread over (as bench history's --days)", &o.HistoryDays),
		config.Bool("history-keep-all", "load every row of --history's, also what the default retention would have deleted (as bench history's --keep-all)", &o.HistoryKeepAll),
		{Flag: "pause-tenant", Usage: "the tenant --pause-at pauses, one of the drain's t0 … t(debtors-1); with --debtors 2 or more the others keep running",
			Parse: func(v string) error { o.PauseTenant = v; return nil }},
	}
}

// offsetFlag is a time after the drain's instant: a Go duration above
// zero, or empty for none.
func offsetFlag(name, usage string, dst *time.Duration) *config.Setting {
	return &config.Setting{Flag: name, Usage: usage, Parse: func(v string) error {
		if v == "" {
			*dst = 0
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a time after the instant, e.g. 20s or 1m30s")
		}
		*dst = d
		return nil
	}}
}

// RunDrain submits the payments as one bulk file paced by a rate-limit
// config, lets serve's pipeline execute them, and prints the histogram of
// executions per second (a payment's execution time: when its exec
// workflow accepted it, SCHEDULED → ACCEPTED), per window and against the
// rate.
func RunDrain(ctx context.Context, o DrainOptions) error {
	if o.Window%time.Second != 0 {
		return fmt.Errorf("--window %s: want whole seconds (the histogram counts per second)", pacing.FormatISODuration(o.Window))
	}
	if err := o.checkLevers(); err != nil {
		return err
	}
	rate := float64(o.MaxPerWindow) / o.Window.Seconds()
	name := "drain"
	if o.webhooks != nil {
		name = "webhooks"
	}
	fmt.Fprintf(o.Out, "paydispatch bench %s: %d CPUs, %s; embedded PostgreSQL and Temporal; %s payments due at one instant, paced %d per %s (%.1f/s)\n",
		name, runtime.NumCPU(), memTotal(), thousands(o.Payments), o.MaxPerWindow, pacing.FormatISODuration(o.Window), rate)
	if o.levers() {
		fmt.Fprintf(o.Out, "levers: %s\n", o.leverPlan())
	}
	log := o.Logger
	stack, err := openPrivateStack(ctx, "drain", o.PGBinDir, log, ptemporal.Options{
		EmbeddedAllVisibilityIndexes: o.AllVisibilityIndexes, EmbeddedTaskQueuePartitions: o.Partitions,
		HeldWorkflowTypes: []string{payment.ExecWorkflowName, dispatch.BatchWorkflowName}, EmbeddedStore: o.TemporalStore,
		EmbeddedRetention: o.Retention,
	}, pacing.Limit{MaxPerWindow: o.MaxPerWindow, Window: o.Window}, pgStatSettings(o.PGStats))
	if err != nil {
		return err
	}
	defer stack.close()
	db, tc := stack.db, stack.tc
	retention := "Temporal's 24h"
	if o.Retention > 0 {
		retention = o.Retention.String() + fmt.Sprintf(", deletions spread over %v after it", ptemporal.RetentionJitter(o.Retention))
	}
	fmt.Fprintf(o.Out, "the embedded Temporal's store: %s; a closed workflow kept %s\n", tc.Store, retention)
	if o.History > 0 {
		// Before everything the drain measures: the statements' counts are
		// reset after it, and the drain's figures count only its own rows.
		fmt.Fprintf(o.Out, "loading the history of %s payments first ...\n", thousands(o.History))
		if _, err := loadHistory(ctx, o.Out, db.Pool, history.Options{Payments: o.History, Days: o.HistoryDays,
			Retention: historyRetention(o.HistoryKeepAll)}); err != nil {
			return err
		}
		if err := reportSizes(ctx, o.Out, db.Pool); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "history: %s payments before the drain's\n", thousands(o.History))
	} else {
		fmt.Fprintf(o.Out, "history: none (an empty database)\n")
	}
	settings := map[string]string{"pacing_config": "payments"}
	if o.Interval > 0 {
		settings["dispatch_interval_secs"] = strconv.Itoa(o.Interval)
	}
	if o.MaxInFlight >= 0 {
		settings["max_in_flight"] = strconv.Itoa(o.MaxInFlight)
	}
	if o.LeadMs >= 0 {
		settings["paced_lead_ms"] = strconv.Itoa(o.LeadMs)
	}
	if o.PreStartBuffer >= 0 {
		settings["pre_start_buffer_secs"] = strconv.Itoa(o.PreStartBuffer)
	}
	if o.ExecMode != "" {
		settings["exec_mode"] = o.ExecMode
	}
	if o.BatchSize > 0 {
		settings["batch_size"] = strconv.Itoa(o.BatchSize)
	}
	qcfg, err := queue.New(db.Pool).UpdateConfig(ctx, payment.ItemType, settings)
	if err != nil {
		return err
	}
	inFlight := "none"
	if qcfg.MaxInFlight > 0 {
		inFlight = thousands(qcfg.MaxInFlight)
	}
	fmt.Fprintf(o.Out, "dispatcher (%s mode) every %v, exec mode %s, batch size %d, paced lead %v, pre-start buffer %v, max in flight %s, execution workflow %s\n",
		cmp.Or(o.DispatchMode, "schedule"), qcfg.DispatchInterval, qcfg.ExecMode, qcfg.BatchSize, qcfg.PacedLead, qcfg.PreStartBuffer, inFlight, qcfg.ExecWorkflowType)
	// The product's settings but for those the run compares.
	opts := app.Options{WorkflowTaskSlots: o.WorkflowTaskSlots, Pollers: o.Pollers, NoEagerStart: o.NoEagerStart, NoSettle: o.NoSettle, NoGroupCommit: o.NoGroupCommit}
	wopts := opts.WorkerOptions()
	fmt.Fprintf(o.Out, "payment workers: %d workflow task slots, %s pollers\n", wopts.MaxConcurrentWorkflowTaskExecutionSize,
		pollers(wopts.MaxConcurrentWorkflowTaskPollers))
	var screen *screenProcess
	if o.ScreeningDelay > 0 {
		if screen, err = startScreenProcess(ctx, o.ScreeningDelay); err != nil {
			return err
		}
		defer screen.stop()
		sc := config.Screening{URL: screen.url(), Timeout: screening.DefaultTimeout, Batch: screening.DefaultBatchSize, MaxInFlight: screening.DefaultMaxInFlight}
		if opts.Controls, err = app.ScreeningControls(db, sc, nil, nil, log); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "screening: on, 'paydispatch screen-sim --delay %v' in its own process; %d payments a call, %d calls in flight, timeout %v\n",
			o.ScreeningDelay, sc.Batch, sc.MaxInFlight, sc.Timeout)
	}
	for _, start := range []func(*postgres.DB, *ptemporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, opts)
		if err != nil {
			return err
		}
		defer stop()
	}
	stop, err := app.StartDispatcher(ctx, cmp.Or(o.DispatchMode, "schedule"), db, tc, log, opts)
	if err != nil {
		return err
	}
	defer stop()
	final := []string{string(payment.StatusProcessing)}
	var rail *railProcess
	if !o.ExecOnly {
		// The full path: the booking's rail instruction through the outbox
		// to the rail simulator, as serve runs it.
		stopDelivery, r, err := startDeliveryTo(ctx, db, log, o.RailProcess)
		if err != nil {
			return err
		}
		defer stopDelivery()
		rail = r
		final = []string{string(payment.StatusDelivered), string(payment.StatusReturned), string(payment.StatusFailed)}
	}
	steady, err := startSteady(o, rate, db, log)
	if err != nil {
		return err
	}
	defer steady.stopCleaner()

	if o.webhooks != nil {
		if err := o.webhooks.start(ctx, db.Pool, log); err != nil {
			return err
		}
		defer o.webhooks.stop()
	}

	// Leave Phase A time to finish before the instant (a window boundary).
	instant := time.Now().Add(30*time.Second + time.Duration(o.Payments)*2*time.Millisecond).Truncate(o.Window).Add(o.Window)
	reqs := make([]payment.Request, o.Payments)
	for i := range reqs {
		reqs[i] = o.drainRequest(i, instant)
	}
	// Pacing windows from before the drain are the history's.
	windowsFrom := time.Now().Add(-time.Hour)
	fmt.Fprintf(o.Out, "debtor accounts: %d, one rail participant\n", cmp.Or(o.Debtors, 10))
	heap := heapPeak{path: o.MemProfile}
	taken, err := app.PaymentService(db, tc, payment.ServiceConfig{}).Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs, Whole: true})
	if err := errors.Join(err, taken.Refused()); err != nil {
		return err
	}
	rss := endIntake()
	heap.sample()
	fmt.Fprintf(o.Out, "instant %s; draining (about %.0f s) ...\n", instant.Format(time.RFC3339), float64(o.Payments)/rate)
	if o.PGStats {
		if err := resetPGStats(ctx, db.Pool); err != nil {
			return err
		}
	}
	cpuAtStart, cpuOK := readCPU()
	stolen := newStealSampler()
	procAtStart := processCPU()
	stackAtStart, stackOK := stackCPU()
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var levers *leverRun
	if o.levers() {
		// The limiter the config changes through is the one the moves
		// read it with, as serve's should be: a cached config would move
		// the payments to the old limit.
		lim := pacing.New(pacing.Config{Pool: db.Pool})
		svc := app.PaymentService(db, tc, payment.ServiceConfig{Pacer: lim, Log: log})
		levers = startLevers(ctx, o, instant, svc, lim)
		defer levers.stop()
	}
	deadline := instant.Add(o.MaxWait)
	for {
		// Cheap tests first, by index and on small tables: the payments
		// are counted (a scan of N rows, which would be counted as
		// PostgreSQL's share a payment) only once nothing is left in the
		// queue or the outbox. Before the instant nothing is done, and the
		// queue may well be empty: the payments' queue items are written
		// as their slots come near.
		busy := time.Now().Before(instant)
		if !busy {
			err = db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'READY')
			OR EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'CLAIMED')
			OR EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'DISPATCHED')
			OR EXISTS (SELECT 1 FROM payment_outbox_pending) OR EXISTS (SELECT 1 FROM payment_outbox_inflight)`,
				payment.ItemType).Scan(&busy)
		}
		if err != nil {
			return err
		}
		var done int
		if !busy {
			if done, err = o.countDone(ctx, db.Pool, instant, final); err != nil {
				return err
			}
		}
		if err := levers.failed(); err != nil {
			return err
		}
		if err := steady.poll(ctx, db.Pool, instant, rate, func(ctx context.Context) (int, error) {
			return o.countDone(ctx, db.Pool, instant, final)
		}); err != nil {
			return err
		}
		if done == o.Payments && levers.finished() {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not all %d payments %v %s after the instant", o.Payments, final, o.MaxWait)
		}
		time.Sleep(time.Second)
		stolen.sample(time.Since(instant))
		heap.sample()
	}
	stopProfile()
	fmt.Fprintf(o.Out, "instant → the last payment %s: %.1f s\n", strings.Join(final, "/"), time.Since(instant).Seconds())
	if err := steady.finish(ctx, db.Pool); err != nil {
		return err
	}
	if err := steady.report(o.Out); err != nil {
		return err
	}
	if o.PGStats {
		if err := reportPGStats(ctx, o.Out, db.Pool, "drain", o.Payments); err != nil {
			return err
		}
	}

	if stolen, ok := stolenSince(cpuAtStart); cpuOK && ok {
		// The embedded engine's pace is CPU: with much of it stolen it falls
		// behind, whatever the pacing.
		fmt.Fprintf(o.Out, "CPU time stolen by the hypervisor during the drain: %.0f%%\n", stolen*100)
	}
	// What the engine and the workers cost, whatever the machine's noise:
	// this process's CPU time (embedded Temporal, workers, dispatcher; not
	// PostgreSQL) per payment.
	rss.write(o.Out)
	if rail != nil {
		fmt.Fprintf(o.Out, "the rail simulator's own process (--rail-process): peak resident set %.0f MiB\n", float64(rail.peakRSS())/(1<<20))
	}
	if screen != nil {
		st, err := screen.stats(ctx)
		if err != nil {
			return fmt.Errorf("screening simulator: %w", err)
		}
		fmt.Fprintf(o.Out, "screening (--screening-delay %v): %s payments screened in %s calls, %s hits, %s errors\n",
			o.ScreeningDelay, thousands(int(st.Payments)), thousands(int(st.Calls)), thousands(int(st.Hits)), thousands(int(st.Errors)))
	}
	if err := heap.write(o.Out); err != nil {
		return err
	}
	cpu := drainCPU{process: processCPU() - procAtStart, machine: busySince(cpuAtStart), machineOK: cpuOK}
	if st, ok := stackCPU(); stackOK && ok {
		cpu.stack, cpu.stackOK = st-stackAtStart, true
	}
	cpu.write(o.Out, o.Payments)

	// The drain's own payments: the figures read these, not the history.
	keys := o.drainKeys(instant)
	// Executions per second since the instant.
	rows, err := db.Pool.Query(ctx, `SELECT floor(extract(epoch FROM accepted_at - $1::timestamptz))::int AS s, count(*)
		FROM payments WHERE payment_id = ANY($2) GROUP BY 1 ORDER BY 1`, instant, keys)
	if err != nil {
		return err
	}
	perSecond := map[int]int{}
	first, last := math.MaxInt, math.MinInt
	for rows.Next() {
		var s, n int
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return err
		}
		perSecond[s] = n
		first, last = min(first, s), max(last, s)
	}
	rows.Close()
	var early int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE accepted_at < scheduled_execution_time AND payment_id = ANY($1)`, keys).Scan(&early); err != nil {
		return err
	}
	var p50, p99, pmax float64
	if err := db.Pool.QueryRow(ctx, `SELECT
		percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), max(lag)
		FROM (SELECT extract(epoch FROM accepted_at - scheduled_execution_time) * 1000 AS lag FROM payments WHERE payment_id = ANY($1)) l`, keys).Scan(&p50, &p99, &pmax); err != nil {
		return err
	}
	// The rate-limit config's limit over the drain: the levers' changes
	// from when they committed.
	lim := constantLimit(o.MaxPerWindow, o.Window)
	lim.steps = append(lim.steps, levers.changes()...)
	// The schedule itself: each payment's last slot per second (a lever
	// moved some), and the config's counters per window.
	due, err := countBySecond(ctx, db.Pool, `SELECT floor(extract(epoch FROM scheduled_execution_time - $1::timestamptz))::int, count(*)
		FROM payments WHERE payment_id = ANY($2) GROUP BY 1`, instant, keys)
	if err != nil {
		return err
	}
	counters, err := countBySecond(ctx, db.Pool, `SELECT floor(extract(epoch FROM window_start - $1::timestamptz))::int, slot_count
		FROM pacing_window WHERE config_name = 'payments' AND window_start >= $2`, instant, windowsFrom)
	if err != nil {
		return err
	}
	// The limiter's own count of the executions it let go per window.
	limited, err := countBySecond(ctx, db.Pool, `SELECT floor(extract(epoch FROM window_start - $1::timestamptz))::int, executed
		FROM pacing_execution WHERE config_name = 'payments' AND window_start >= $2`, instant, windowsFrom)
	if err != nil {
		return err
	}
	dueFirst, dueLast := spanOf(due)
	slotFigures := judgeSeconds(due, due, dueFirst, dueLast, lim)
	fmt.Fprintf(o.Out, "\nthe schedule (slots): windows over the limit %d, full seconds off the rate by more than 5%%: %d\n",
		len(overCounters(counters, lim)), slotFigures.Full-slotFigures.InBand)
	if len(limited) > 0 {
		lf, ll := spanOf(limited)
		c := countWindows(limited, lf, ll, lim)
		fmt.Fprintf(o.Out, "the limiter's count of executions (pacing_execution): windows over the limit in force %d, most in one %d\n", len(c.Over), c.Most)
	}
	fmt.Fprintf(o.Out, "execution lag behind the slot: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", p50, p99, pmax)
	// Whose lag: the dispatcher's (the start request came after the slot
	// less the lead) or the engine's (from the later of the slot and the
	// start request to the execution).
	var late int
	var margin50, engine50, engine99, engineMax float64
	if err := db.Pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE q.dispatched_at > p.scheduled_execution_time - $1 * interval '1 millisecond'),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM p.scheduled_execution_time - q.dispatched_at) * 1000),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM p.accepted_at - greatest(p.scheduled_execution_time, q.dispatched_at)) * 1000),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM p.accepted_at - greatest(p.scheduled_execution_time, q.dispatched_at)) * 1000),
		max(extract(epoch FROM p.accepted_at - greatest(p.scheduled_execution_time, q.dispatched_at)) * 1000)
		FROM payments p JOIN exec_queue q ON q.item_type = $2 AND q.item_id = p.payment_id WHERE p.payment_id = ANY($3)`,
		qcfg.PacedLead.Milliseconds(), payment.ItemType, keys).Scan(&late, &margin50, &engine50, &engine99, &engineMax); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "start requests later than slot − lead: %d; slot − start request p50 %.0f ms\n", late, margin50)
	fmt.Fprintf(o.Out, "engine lag (execution − later of slot and start request): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", engine50, engine99, engineMax)
	if err := reportDrain(o, lim, levers.pulledLevers(), perSecond, due, first, last, early, stolen.bySecond); err != nil {
		return err
	}
	var items, workflows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT exec_workflow_id) FROM exec_queue WHERE item_type = $1 AND item_id = ANY($2)`,
		payment.ItemType, keys).Scan(&items, &workflows); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "execution workflows: %s for %s payments (%.1f payments a workflow)\n", thousands(workflows), thousands(items), float64(items)/float64(max(workflows, 1)))
	if err := historyShape(ctx, o.Out, db.Pool, tc.Client, payment.ItemType, keys, 20); err != nil {
		return err
	}
	// What the engine still keeps: with a retention shorter than the
	// drain, the runs that closed early were deleted during it.
	kept, err := tc.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{})
	if err != nil {
		return fmt.Errorf("bench: count workflows: %w", err)
	}
	fmt.Fprintf(o.Out, "workflow runs Temporal keeps at the end (its visibility): %s (kept %s)\n", thousands(int(kept.GetCount())), retention)
	if o.CPUProfile != "" {
		if err := reportProfile(o.Out, o.CPUProfile, o.Payments); err != nil {
			return err
		}
	}
	if o.webhooks != nil {
		if err := o.webhooks.report(ctx, o.Out, db.Pool, instant, deadline, final, lim); err != nil {
			_ = ledgerCheck(ctx, db.Pool, o.Out)
			return err
		}
	}
	return ledgerCheck(ctx, db.Pool, o.Out)
}

// pollers names a worker's poller setting (0: the SDK's default).
func pollers(n int) string {
	if n == 0 {
		return "the SDK's default"
	}
	return strconv.Itoa(n)
}

// drainRequest is the drain's i-th payment.
func (o DrainOptions) drainRequest(i int, instant time.Time) payment.Request {
	r := benchRequest("d", i, instant)
	if o.Debtors > 0 && o.Debtors < 10 {
		t := i % o.Debtors
		r.TenantID, r.DebtorAccount = fmt.Sprintf("t%d", t), fmt.Sprintf("ACC-t%d", t)
	}
	return r
}

// drainKeys are the keys of the drain's payments, built when a query
// needs them rather than held through the drain: the drain's peak
// resident set is the product's, not the bench's bookkeeping.
func (o DrainOptions) drainKeys(instant time.Time) []string {
	return o.drainKeysIn(instant, 0, o.Payments)
}

// drainKeysIn are the keys of the drain's payments from..to-1.
func (o DrainOptions) drainKeysIn(instant time.Time, from, to int) []string {
	keys := make([]string, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		r := o.drainRequest(i, instant)
		keys = append(keys, payment.Key(r.TenantID, r.PaymentID))
	}
	return keys
}

// doneChunk is how many of the drain's keys one count sends: the count
// runs each second near the end, and all 100,000 keys at once (strings
// and their encoding) were the largest live heap of the drain, a
// transient of the bench's own that the peak resident set then showed.
const doneChunk = 5000

// countDone counts the drain's payments in a final status, a chunk of
// keys at a time.
func (o DrainOptions) countDone(ctx context.Context, pool *pgxpool.Pool, instant time.Time, final []string) (int, error) {
	total := 0
	for from := 0; from < o.Payments; from += doneChunk {
		var n int
		keys := o.drainKeysIn(instant, from, min(from+doneChunk, o.Payments))
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = ANY($1) AND payment_id = ANY($2)`, final, keys).Scan(&n); err != nil {
			return 0, fmt.Errorf("count the drain's payments done: %w", err)
		}
		total += n
	}
	return total, nil
}

func reportDrain(o DrainOptions, lim limits, pulled []pulledLever, perSecond, due map[int]int, first, last, early int, stolenBySecond map[int]float64) error {
	w := o.Out
	rate := lim.rate(0)
	// Full seconds of the drain: all but the first and last second seen,
	// and those a limit changed in.
	f := judgeSeconds(perSecond, due, first, last, lim)
	c := countWindows(perSecond, first, last, lim)
	fmt.Fprintf(w, "\nexecutions per second from the instant (second: executed/due, the payments whose slots were in it; "+
		"marks: * off the rate in force, - fewer due than the rate, ! off what was due too, ~ the limit changed in it):\n")
	var line strings.Builder
	for s := first; s <= last; s++ {
		m, ok := f.Marks[s]
		if !ok {
			m = ' '
		}
		fmt.Fprintf(&line, "%5d:%3d/%-3d%c", s, perSecond[s], due[s], m)
		if (s-first)%8 == 7 {
			fmt.Fprintln(w, line.String())
			line.Reset()
		}
	}
	if line.Len() > 0 {
		fmt.Fprintln(w, line.String())
	}
	fmt.Fprintf(w, "\ndrain: seconds %d..%d after the instant (%d s for %s payments, %.1f/s)\n",
		first, last, last-first+1, thousands(o.Payments), rateIn(o.Payments, sec(last-first+1)))
	limitsSaid := fmt.Sprintf("limit %d", o.MaxPerWindow)
	if len(lim.steps) > 1 {
		limitsSaid = "limits in force " + lim.String()
	}
	fmt.Fprintf(w, "windows of %s: %d, most executions in one %d (%s), over the limit in force %d: %s\n",
		pacing.FormatISODuration(o.Window), c.Windows, c.Most, limitsSaid, len(c.Over), verdict(len(c.Over) == 0))
	for i, ov := range c.Over {
		if i == 10 {
			fmt.Fprintf(w, "  … %d more\n", len(c.Over)-i)
			break
		}
		fmt.Fprintf(w, "  window at %+d s: %d executions, limit %d\n", ov.Start, ov.N, ov.Limit)
	}
	// Issue 26's target: at least 95 % of the full seconds in the band.
	against := fmt.Sprintf("%.1f/s", rate)
	if len(lim.steps) > 1 {
		against = "the rate in force"
	}
	fmt.Fprintf(w, "full seconds within ±5%% of %s: %d of %d, %.1f%% (worst %.1f%%; target ≥ 95 %%): %s\n",
		against, f.InBand, f.Full, share(f.InBand, f.Full), f.Worst*100, verdict(f.Met()))
	if len(f.Changed) > 0 {
		fmt.Fprintf(w, "  not full seconds of one rate: %v (the limit changed in them)\n", f.Changed)
	}
	// A second the schedule did not fill (a paused tenant's slots given
	// back, the others not moved into them) cannot be in the band; its
	// executions are judged against what was due too.
	fmt.Fprintf(w, "  of them, seconds whose schedule had fewer payments due than the rate less 5 %%: %d (executions within ±5 %% of what was due in %d); "+
		"the other %d full seconds: %d within ±5 %% of the rate in force, %.1f%%\n",
		f.Short, f.ShortFollowed, f.Full-f.Short, f.FilledInBand, share(f.FilledInBand, f.Full-f.Short))
	fmt.Fprintf(w, "executions before their slot: %d\n", early)
	for _, p := range pulled {
		// Never a burst: a resume paces from now, a raised limit spreads.
		most, ofRate := afterLever(perSecond, p.At, 10, lim)
		fmt.Fprintf(w, "the %s at %+.2f s (its calls took %.2f s): most executions in one second of the 10 from it %d, at most %.0f%% of the rate in force: %s\n",
			p.What, p.At.Seconds(), p.Took.Seconds(), most, ofRate*100, burst(ofRate))
	}
	what := fmt.Sprintf("%s payments drained, full path; %d of %d full seconds within ±5 %%", thousands(o.Payments), f.InBand, f.Full)
	if o.levers() {
		what = fmt.Sprintf("%s payments drained with levers (%s); %d of %d full seconds within ±5 %% of the rate in force",
			thousands(o.Payments), o.leverPlan(), f.InBand, f.Full)
	}
	o.Figures.add(Figure{What: what,
		Value: rateIn(o.Payments, sec(last-first+1)), Unit: "payments/s", Baseline: "the configured rate (asked, not measured)", BaseVal: rate, BaseUnit: "/s"})
	if in, out := stealByBand(stolenBySecond, first, last, f.late); len(out) > 0 && len(in) > 0 {
		// Were the seconds out of the band the machine's, or the engine's?
		fmt.Fprintf(w, "CPU stolen per second: median %.0f%% in the band, %.0f%% (max %.0f%%) in and up to 5 s before the seconds out of it\n",
			median(in)*100, median(out)*100, slices.Max(out)*100)
	}
	if o.SVG != "" {
		if err := writeHistogramSVG(o.SVG, perSecond, first, last, rate); err != nil {
			return err
		}
		abs, _ := filepath.Abs(o.SVG)
		fmt.Fprintf(w, "histogram written to %s\n", abs)
	}
	return nil
}

// drainCPU is the CPU time the drain used: this process's, the machine's
// busy time and the stack's (this process and its PostgreSQL), the last
// two when the machine said.
type drainCPU struct {
	process            time.Duration
	machine, stack     time.Duration
	machineOK, stackOK bool
}

// write prints the drain's CPU figures, each also per payment. The
// machine's line needs more than this process's time (else /proc/stat's
// 10 ms ticks said too little to split), the stack's the machine's.
func (c drainCPU) write(w io.Writer, payments int) {
	if c.process <= 0 {
		return
	}
	fmt.Fprintf(w, "this process's CPU time during the drain: %.1f s, %.1f ms per payment\n",
		c.process.Seconds(), msPer(c.process, payments))
	if !c.machineOK || c.machine <= c.process {
		return
	}
	// The rest of the machine's busy time: PostgreSQL, mostly.
	fmt.Fprintf(w, "the machine's CPU time during the drain: %.1f s, %.1f ms per payment (%.1f ms outside this process: PostgreSQL and the rest)\n",
		c.machine.Seconds(), msPer(c.machine, payments), msPer(c.machine-c.process, payments))
	if !c.stackOK {
		return
	}
	// The machine is shared: what this stack used, apart from what other
	// users ran meanwhile. The two are read from different counters at
	// slightly different moments; other users' time is never below zero.
	fmt.Fprintf(w, "the stack's CPU time during the drain (this process and its PostgreSQL): %.1f s, %.1f ms per payment; the rest of the machine (other users): %.1f s\n",
		c.stack.Seconds(), msPer(c.stack, payments), max(c.machine-c.stack, 0).Seconds())
}

// msPer is d in milliseconds per one of n (none: zero, not a division by
// zero).
func msPer(d time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}

// burst says whether a second after a lever went past the band of the
// rate in force.
func burst(ofRate float64) string {
	if ofRate > 1.05 {
		return "a burst"
	}
	return "no burst"
}

// share is n of of in per cent.
func share(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

// writeHistogramSVG draws executions per second as columns, with the
// configured rate and its ±5 % band.
func writeHistogramSVG(path string, perSecond map[int]int, first, last int, rate float64) error {
	values := make([]float64, 0, last-first+1)
	for s := first; s <= last; s++ {
		values = append(values, float64(perSecond[s]))
	}
	svg := svgchart.Columns("executions per second", fmt.Sprintf("seconds after the instant (%d..%d); red: configured rate %.1f/s, green: ±5 %%", first, last, rate), values, rate, 0.05)
	return os.WriteFile(path, []byte(svg), 0o644)
}
