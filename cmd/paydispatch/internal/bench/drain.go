package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/svgchart"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
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
	MaxWait      time.Duration
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
	// Retention is how long the embedded Temporal keeps a closed workflow
	// (0: Temporal's 24 hours): shorter than the drain, the deletions are
	// part of what the drain costs.
	Retention time.Duration
}

// DrainSettings binds the benchmark's flags.
func DrainSettings(o *DrainOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 20000, 100, 1_000_000, "payments due at one instant", &o.Payments),
		config.Int("max-per-window", 100, 1, 100_000, "the pacing config's events per window", &o.MaxPerWindow),
		isoFlag("window", "PT4S", time.Second, "the pacing config's window (ISO-8601, whole seconds)", &o.Window),
		config.Int("lead-ms", -1, -1, 60_000, "the paced lead in ms (exec_rate_config paced_lead_ms; -1: as configured)", &o.LeadMs),
		config.Int("interval", 0, 0, 60, "the dispatcher's interval in seconds (exec_rate_config dispatch_interval_secs; 0: as configured)", &o.Interval),
		config.Int("max-in-flight", -1, -1, 1_000_000, "cap on items claimed or dispatched and not yet settled (exec_rate_config max_in_flight; 0: none; -1: as configured)", &o.MaxInFlight),
		{Flag: "svg", Default: "pacing-histogram.svg", Usage: "write the histogram of executions per second here (empty: don't)",
			Parse: func(v string) error { o.SVG = v; return nil }},
		config.Duration("max-wait", "60m", time.Minute, "give up this long after the instant", &o.MaxWait),
		config.Int("task-queue-partitions", 0, 0, 16, "partitions of the embedded Temporal's task queues (0: the embedded default, 1; Temporal's own is 4)", &o.Partitions),
		config.Bool("all-visibility-indexes", "keep every index of the embedded Temporal's visibility table (default: the kept ones)", &o.AllVisibilityIndexes),
		config.Bool("no-eager-start", "start execution workflows without Temporal's eager start (the comparison)", &o.NoEagerStart),
		config.Bool("no-settle", "leave queue items to the dispatcher's reconcile, not settled by the execution (the comparison)", &o.NoSettle),
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
		{Flag: "memprofile", Usage: "write this process's heap profile at the Go heap's peak (sampled every second, intake included) here (go tool pprof)",
			Parse: func(v string) error { o.MemProfile = v; return nil }},
	}
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
	rate := float64(o.MaxPerWindow) / o.Window.Seconds()
	fmt.Fprintf(o.Out, "paydispatch bench drain: %d CPUs, %s; embedded PostgreSQL and Temporal; %s payments due at one instant, paced %d per %s (%.1f/s)\n",
		runtime.NumCPU(), memTotal(), thousands(o.Payments), o.MaxPerWindow, pacing.FormatISODuration(o.Window), rate)
	log := o.Logger
	stack, err := openPrivateStack(ctx, "drain", o.PGBinDir, log, ptemporal.Options{
		EmbeddedAllVisibilityIndexes: o.AllVisibilityIndexes, EmbeddedTaskQueuePartitions: o.Partitions,
		HeldWorkflowTypes: []string{payment.ExecWorkflowName, dispatch.BatchWorkflowName}, EmbeddedStore: o.TemporalStore,
		EmbeddedRetention: o.Retention,
	}, pacing.Config{MaxPerWindow: o.MaxPerWindow, Window: o.Window}, pgStatSettings(o.PGStats))
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
	fmt.Fprintf(o.Out, "dispatcher every %v, exec mode %s, batch size %d, paced lead %v, pre-start buffer %v, max in flight %s, execution workflow %s\n",
		qcfg.DispatchInterval, qcfg.ExecMode, qcfg.BatchSize, qcfg.PacedLead, qcfg.PreStartBuffer, inFlight, qcfg.ExecWorkflowType)
	// The product's settings but for those the run compares.
	opts := app.Options{WorkflowTaskSlots: o.WorkflowTaskSlots, Pollers: o.Pollers, NoEagerStart: o.NoEagerStart, NoSettle: o.NoSettle}
	wopts := opts.WorkerOptions()
	fmt.Fprintf(o.Out, "payment workers: %d workflow task slots, %s pollers\n", wopts.MaxConcurrentWorkflowTaskExecutionSize,
		pollers(wopts.MaxConcurrentWorkflowTaskPollers))
	for _, start := range []func(*postgres.DB, *ptemporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, opts)
		if err != nil {
			return err
		}
		defer stop()
	}
	stop, err := app.StartDispatcher(ctx, "schedule", db, tc, log, opts)
	if err != nil {
		return err
	}
	defer stop()
	final := []string{string(payment.StatusProcessing)}
	if !o.ExecOnly {
		// The full path: the booking's rail instruction through the outbox
		// to the rail simulator, as serve runs it.
		stopDelivery, err := startDelivery(ctx, db, log)
		if err != nil {
			return err
		}
		defer stopDelivery()
		final = []string{string(payment.StatusDelivered), string(payment.StatusReturned), string(payment.StatusFailed)}
	}

	// Leave Phase A time to finish before the instant (a window boundary).
	instant := time.Now().Add(30*time.Second + time.Duration(o.Payments)*2*time.Millisecond).Truncate(o.Window).Add(o.Window)
	reqs := make([]payment.Request, o.Payments)
	for i := range reqs {
		reqs[i] = benchRequest("d", i, instant)
		if o.Debtors > 0 && o.Debtors < 10 {
			t := i % o.Debtors
			reqs[i].TenantID, reqs[i].DebtorAccount = fmt.Sprintf("t%d", t), fmt.Sprintf("ACC-t%d", t)
		}
	}
	fmt.Fprintf(o.Out, "debtor accounts: %d, one rail participant\n", cmp.Or(o.Debtors, 10))
	heap := heapPeak{path: o.MemProfile}
	if _, err := app.PaymentService(db, tc, 0).SubmitBatch(ctx, reqs); err != nil {
		return err
	}
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
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	deadline := instant.Add(o.MaxWait)
	for {
		// Cheap tests first, by index and on small tables: the payments
		// are counted (a scan of N rows, which would be counted as
		// PostgreSQL's share a payment) only once nothing is left in the
		// queue or the outbox.
		var busy bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'READY')
			OR EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'CLAIMED')
			OR EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND queue_status = 'DISPATCHED')
			OR EXISTS (SELECT 1 FROM payment_outbox_pending) OR EXISTS (SELECT 1 FROM payment_outbox_inflight)`,
			payment.ItemType).Scan(&busy); err != nil {
			return err
		}
		var done int
		if !busy {
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = ANY($1)`, final).Scan(&done); err != nil {
				return err
			}
		}
		if done == o.Payments {
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
	if rss := peakRSS(); rss > 0 {
		fmt.Fprintf(o.Out, "this process's peak memory (max RSS): %.0f MiB\n", float64(rss)/(1<<20))
	}
	if err := heap.write(o.Out); err != nil {
		return err
	}
	if used := processCPU() - procAtStart; used > 0 {
		fmt.Fprintf(o.Out, "this process's CPU time during the drain: %.1f s, %.1f ms per payment\n",
			used.Seconds(), float64(used.Microseconds())/1000/float64(o.Payments))
		if busy := busySince(cpuAtStart); cpuOK && busy > used {
			// The rest of the machine's busy time: PostgreSQL, mostly.
			fmt.Fprintf(o.Out, "the machine's CPU time during the drain: %.1f s, %.1f ms per payment (%.1f ms outside this process: PostgreSQL and the rest)\n",
				busy.Seconds(), float64(busy.Microseconds())/1000/float64(o.Payments), float64((busy-used).Microseconds())/1000/float64(o.Payments))
		}
	}

	// Executions per second since the instant.
	rows, err := db.Pool.Query(ctx, `SELECT floor(extract(epoch FROM accepted_at - $1::timestamptz))::int AS s, count(*)
		FROM payments GROUP BY 1 ORDER BY 1`, instant)
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
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE accepted_at < scheduled_execution_time`).Scan(&early); err != nil {
		return err
	}
	var p50, p99, pmax float64
	if err := db.Pool.QueryRow(ctx, `SELECT
		percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), max(lag)
		FROM (SELECT extract(epoch FROM accepted_at - scheduled_execution_time) * 1000 AS lag FROM payments) l`).Scan(&p50, &p99, &pmax); err != nil {
		return err
	}
	// The schedule itself: slots per window, and per second over every
	// full second of the span (an empty second counts as off).
	var slotOver, slotSecondsOff int
	if err := db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pacing_window WHERE slot_count > $1),
		(SELECT count(*) FROM generate_series(
		       date_trunc('second', (SELECT min(scheduled_time) FROM pacing_slot)) + interval '1 second',
		       date_trunc('second', (SELECT max(scheduled_time) FROM pacing_slot)) - interval '1 second', interval '1 second') AS g(s)
		   LEFT JOIN (SELECT date_trunc('second', scheduled_time) s, count(*) n FROM pacing_slot GROUP BY 1) x ON x.s = g.s
		   WHERE abs(coalesce(x.n, 0) - $2::float8) > 0.05 * $2::float8)`,
		o.MaxPerWindow, rate).Scan(&slotOver, &slotSecondsOff); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\nthe schedule (slots): windows over the limit %d, full seconds off the rate by more than 5%%: %d\n", slotOver, slotSecondsOff)
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
		FROM payments p JOIN exec_queue q ON q.item_type = $2 AND q.item_id = p.payment_id`,
		qcfg.PacedLead.Milliseconds(), payment.ItemType).Scan(&late, &margin50, &engine50, &engine99, &engineMax); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "start requests later than slot − lead: %d; slot − start request p50 %.0f ms\n", late, margin50)
	fmt.Fprintf(o.Out, "engine lag (execution − later of slot and start request): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", engine50, engine99, engineMax)
	if err := reportDrain(o, rate, perSecond, first, last, early, stolen.bySecond); err != nil {
		return err
	}
	var items, workflows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT exec_workflow_id) FROM exec_queue WHERE item_type = $1`,
		payment.ItemType).Scan(&items, &workflows); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "execution workflows: %s for %s payments (%.1f payments a workflow)\n", thousands(workflows), thousands(items), float64(items)/float64(max(workflows, 1)))
	if err := historyShape(ctx, o.Out, db.Pool, tc.Client, payment.ItemType, 20); err != nil {
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
	return ledgerCheck(ctx, db.Pool, o.Out)
}

// pollers names a worker's poller setting (0: the SDK's default).
func pollers(n int) string {
	if n == 0 {
		return "the SDK's default"
	}
	return strconv.Itoa(n)
}

func reportDrain(o DrainOptions, rate float64, perSecond map[int]int, first, last, early int, stolenBySecond map[int]float64) error {
	w := o.Out
	winSecs := int(o.Window / time.Second)
	// Full seconds of the drain: all but the first and last second seen.
	inBand, full, worst := 0, 0, 0.0
	for s := first + 1; s < last; s++ {
		full++
		dev := math.Abs(float64(perSecond[s])-rate) / rate
		worst = max(worst, dev)
		if dev <= 0.05 {
			inBand++
		}
	}
	overWindows, windows, maxWindow := 0, 0, 0
	for ws := (first / winSecs) * winSecs; ws <= last; ws += winSecs {
		n := 0
		for s := ws; s < ws+winSecs; s++ {
			n += perSecond[s]
		}
		windows++
		maxWindow = max(maxWindow, n)
		if n > o.MaxPerWindow {
			overWindows++
		}
	}
	fmt.Fprintf(w, "\nexecutions per second from the instant (second: count):\n")
	var line strings.Builder
	for s := first; s <= last; s++ {
		fmt.Fprintf(&line, "%5d:%-3d", s, perSecond[s])
		if (s-first)%10 == 9 {
			fmt.Fprintln(w, line.String())
			line.Reset()
		}
	}
	if line.Len() > 0 {
		fmt.Fprintln(w, line.String())
	}
	fmt.Fprintf(w, "\ndrain: seconds %d..%d after the instant (%d s for %s payments, %.1f/s)\n",
		first, last, last-first+1, thousands(o.Payments), float64(o.Payments)/float64(last-first+1))
	fmt.Fprintf(w, "windows of %s: %d, most executions in one %d (limit %d), over the limit %d: %s\n",
		pacing.FormatISODuration(o.Window), windows, maxWindow, o.MaxPerWindow, overWindows, verdict(overWindows == 0))
	// Issue 26's target: at least 95 % of the full seconds in the band.
	fmt.Fprintf(w, "full seconds within ±5%% of %.1f/s: %d of %d, %.1f%% (worst %.1f%%; target ≥ 95 %%): %s\n",
		rate, inBand, full, 100*float64(inBand)/float64(max(full, 1)), worst*100, verdict(full > 0 && inBand*100 >= full*95))
	fmt.Fprintf(w, "executions before their slot: %d\n", early)
	o.Figures.add(Figure{What: fmt.Sprintf("%s payments drained, full path; %d of %d full seconds within ±5 %%", thousands(o.Payments), inBand, full),
		Value: float64(o.Payments) / float64(last-first+1), Unit: "payments/s", Baseline: "the configured rate (asked, not measured)", BaseVal: rate, BaseUnit: "/s"})
	if in, out := stealByBand(perSecond, stolenBySecond, first, last, rate); len(out) > 0 && len(in) > 0 {
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
