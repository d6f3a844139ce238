package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// IntakeOptions configure the bulk intake benchmark.
type IntakeOptions struct {
	Env

	Payments     int
	MaxPerWindow int
	Window       time.Duration
	ChunkSize    int
	MaxWait      time.Duration
	// CPUProfile, when set, is where the intake's CPU profile of this
	// process is written (and summarised by component).
	CPUProfile string
	// PGStats has the embedded PostgreSQL count the intake's statements.
	PGStats bool
	// DuplicateFileDays is serve's duplicate file window (0: off).
	DuplicateFileDays int
}

// IntakeSettings binds the benchmark's flags.
func IntakeSettings(o *IntakeOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 500_000, 100, 2_000_000, "payments in the one file, all due at one instant", &o.Payments),
		config.Int("max-per-window", 100, 1, 100_000, "the pacing config's events per window", &o.MaxPerWindow),
		isoFlag("window", "PT1S", time.Second, "the pacing config's window (ISO-8601)", &o.Window),
		config.Int("chunk-size", payment.ChunkSize, 1, 100_000, "payments per chunk workflow (serve's --bulk-chunk-size)", &o.ChunkSize),
		config.Duration("max-wait", "30m", time.Minute, "give up this long after the POST", &o.MaxWait),
		{Flag: "cpuprofile", Usage: "write this process's CPU profile of the intake here (go tool pprof)",
			Parse: func(v string) error { o.CPUProfile = v; return nil }},
		config.Bool("pg-stats", "count PostgreSQL's statements during the intake (pg_stat_statements) and print the leading ones per payment", &o.PGStats),
		config.Int("duplicate-file-days", 7, 0, 90, "the duplicate file check's window, as serve's PAYDISPATCH_DUPLICATE_FILE_DAYS (0: off)", &o.DuplicateFileDays),
	}
}

// RunIntake posts one JSON-lines file of payments due at one instant to
// serve's HTTP handler, on a fresh private PostgreSQL and embedded
// Temporal with the init worker running, and measures the time from the
// POST to the last payment SCHEDULED and queued (its queue item, or its
// slot past the queue's mark, whose item the dispatcher's feeder writes
// as it comes near): rows per
// second, beside a COPY of the same number of payment rows into a
// scratch table of the same shape, measured in the same run.
func RunIntake(ctx context.Context, o IntakeOptions) error {
	fmt.Fprintf(o.Out, "paydispatch bench intake: %d CPUs, %s; embedded PostgreSQL and Temporal; one file of %s payments due at one instant, paced %d per %s, chunks of %d\n",
		runtime.NumCPU(), memTotal(), thousands(o.Payments), o.MaxPerWindow, pacing.FormatISODuration(o.Window), o.ChunkSize)
	log := o.Logger
	stack, err := openPrivateStack(ctx, "intake", o.PGBinDir, log, ptemporal.Options{},
		pacing.Limit{MaxPerWindow: o.MaxPerWindow, Window: o.Window}, pgStatSettings(o.PGStats))
	if err != nil {
		return err
	}
	defer stack.close()
	db, tc := stack.db, stack.tc
	if _, err := queue.New(db.Pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
		return err
	}
	stopInit, err := app.StartInitWorker(db, tc, log, app.Options{})
	if err != nil {
		return err
	}
	defer stopInit()
	router, err := httpapi.NewRouter(httpapi.RouterConfig{Log: log, MaxBody: 1 << 20, MaxBulkBody: 2 << 30, Services: httpapi.Services{Payments: app.PaymentService(db, tc,
		payment.ServiceConfig{ChunkSize: o.ChunkSize, DuplicateFileWindow: time.Duration(o.DuplicateFileDays) * 24 * time.Hour})}})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(router)
	defer srv.Close()
	api, err := benchClient(srv.URL)
	if err != nil {
		return err
	}

	// Far enough ahead that nothing executes; the dispatcher does not run.
	// Its feed, which serve's dispatcher runs every cycle before its
	// claim, is run once: it sets the queue's mark (Phase A writes the
	// queue items of the slots before it only).
	qcfg, err := queue.New(db.Pool).GetConfig(ctx, payment.ItemType)
	if err != nil {
		return err
	}
	if _, err := payment.NewFeeder(db.Pool, queue.New(db.Pool)).Feed(ctx, time.Now().Add(qcfg.PreStartBuffer+dispatch.FeedAhead(qcfg))); err != nil {
		return err
	}
	instant := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for i := range o.Payments {
		if err := enc.Encode(benchRequest("in", i, instant)); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "the file: %.0f MB of JSON lines\n", float64(body.Len())/1e6)

	if o.PGStats {
		if err := resetPGStats(ctx, db.Pool); err != nil {
			return err
		}
	}
	// What the machine wrote before (the cluster's creation, an earlier
	// run, a build) goes to disk now, not during the intake, whose CPU
	// the kernel's writeback would otherwise share; the baseline's COPY
	// starts the same way.
	syscall.Sync()
	cpuAtStart, cpuOK := readCPU()
	procAtStart := processCPU()
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	start := time.Now()
	if _, err := client.Result[*client.BatchAcceptedHeaders](api.CreatePaymentBatch(ctx,
		&client.CreatePaymentBatchReqApplicationXNdjson{Data: &body}, client.CreatePaymentBatchParams{})); err != nil {
		return fmt.Errorf("POST /v1/payment-batches: %w", err)
	}
	answered := time.Since(start)
	fmt.Fprintf(o.Out, "POST answered 202 after %.1f s (the file read, checked and its chunk workflows started)\n", answered.Seconds())
	// Phase A deletes a chunk's intake row when it concludes: an empty
	// payment_intake after the answer is every chunk done. Counting the
	// payments instead, every 200 ms, scanned all N rows each time, and
	// its CPU was counted as the intake's.
	deadline := start.Add(o.MaxWait)
	for {
		var pending bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_intake)`).Scan(&pending); err != nil {
			return err
		}
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chunks still in Phase A %s after the POST", o.MaxWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	stopProfile()
	stolen, stolenOK := stolenSince(cpuAtStart)
	busy, used := busySince(cpuAtStart), processCPU()-procAtStart
	// Queued: a queue item, or a slot past the queue's mark, whose item
	// the dispatcher's feeder writes as it comes near.
	var stored, queued, items, suspected int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'SCHEDULED'),
		(SELECT count(*) FROM payments p WHERE p.status = 'SCHEDULED' AND (p.scheduled_execution_time >= (SELECT mark FROM payment_queue_mark)
			OR EXISTS (SELECT 1 FROM exec_queue q WHERE q.item_type = $1 AND q.item_id = p.payment_id))),
		(SELECT count(*) FROM exec_queue WHERE item_type = $1),
		(SELECT count(*) FROM payments WHERE status_reason LIKE 'DUPLICATE suspected%')`, payment.ItemType).Scan(&stored, &queued, &items, &suspected); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "queue items written: %s (the other payments' slots are past the queue's mark: fed as they come near)\n", thousands(items))
	// The file's payments are alike within a tenant: each but its first
	// is a suspected duplicate (WARN), the duplicate control's most work.
	fmt.Fprintf(o.Out, "duplicate checks: the file's window %d days; payments: %s suspected duplicates, warned\n", o.DuplicateFileDays, thousands(suspected))
	if stored != o.Payments || queued != o.Payments {
		return fmt.Errorf("phase A done, but %d of %d payments SCHEDULED and %d queued", stored, o.Payments, queued)
	}
	// Read before the baseline's COPY, which is not the intake's.
	var pgStats bytes.Buffer
	if o.PGStats {
		if err := reportPGStats(ctx, &pgStats, db.Pool, "intake", o.Payments); err != nil {
			return err
		}
	}

	// The baseline: the same number of payment rows, COPYed into a
	// scratch table shaped like payments, once autovacuum is done with the
	// intake's tables: its workers' CPU made the COPY up to a third slower,
	// and more so the sooner the intake ended.
	settled, quiet, err := awaitAutovacuum(ctx, db, 2*time.Minute)
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(o.Out, "autovacuum still at work %.0f s after the intake: the baseline COPY shares the machine with it\n", settled.Seconds())
	}
	// And once what the intake wrote is on disk, as it was not when the
	// intake began: the kernel writes back pages 30 s old (the intake
	// leaves about 1.3 GB dirty), and in some runs that writeback landed
	// in the COPY.
	if _, err := db.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint before the baseline: %w", err)
	}
	syscall.Sync()
	baseline, err := copyBaseline(ctx, db, o.Payments, instant)
	if err != nil {
		return err
	}
	var over, empty int
	if err := db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pacing_window WHERE slot_count > $1),
		(SELECT count(*) FROM generate_series((SELECT min(window_start) FROM pacing_window),
		        (SELECT max(window_start) FROM pacing_window WHERE slot_count > 0), $2 * interval '1 millisecond') g(w)
		   WHERE NOT EXISTS (SELECT 1 FROM pacing_window x WHERE x.window_start = g.w AND x.slot_count > 0))`,
		o.MaxPerWindow, o.Window.Milliseconds()).Scan(&over, &empty); err != nil {
		return err
	}

	m := intakeMeasures{payments: o.Payments, took: took, baseline: baseline, busy: busy, used: used, cpuOK: cpuOK, stolen: stolen, stolenOK: stolenOK}
	rate, baseRate := m.write(o.Out)
	o.Figures.add(Figure{What: fmt.Sprintf("%s payments POSTed → SCHEDULED and enqueued", thousands(o.Payments)), Value: rate, Unit: "payments/s",
		Baseline: "COPY of as many payment rows", BaseVal: baseRate, BaseUnit: "rows/s"})
	fmt.Fprintf(o.Out, "the schedule: windows over the limit %d, empty windows between the first and the last slot %d\n", over, empty)
	if over > 0 || empty > 0 {
		return fmt.Errorf("the schedule broke its promises: %d windows over the limit, %d empty", over, empty)
	}
	if _, err := o.Out.Write(pgStats.Bytes()); err != nil {
		return err
	}
	if o.CPUProfile != "" {
		return reportProfile(o.Out, o.CPUProfile, o.Payments)
	}
	return nil
}

// intakeMeasures are what the intake bench timed and counted.
type intakeMeasures struct {
	payments       int
	took, baseline time.Duration // the intake's, the COPY's
	busy, used     time.Duration // the machine's CPU, this process's
	cpuOK          bool
	stolen         float64
	stolenOK       bool
}

// write prints the intake's rate against the COPY's, their ratio, the CPU
// stolen and the CPU per payment, and returns the two rates.
func (m intakeMeasures) write(w io.Writer) (rate, baseRate float64) {
	rate, baseRate = rateIn(m.payments, m.took), rateIn(m.payments, m.baseline)
	fmt.Fprintf(w, "\nPOST → the last of %s payments SCHEDULED and queued (its queue item, or its slot past the queue's mark): %.1f s, %s payments/s (target: 500,000 in 30 s)\n",
		thousands(m.payments), m.took.Seconds(), thousands(int(rate)))
	fmt.Fprintf(w, "baseline, COPY of %s payment rows into a table shaped like payments: %.1f s, %s rows/s\n",
		thousands(m.payments), m.baseline.Seconds(), thousands(int(baseRate)))
	fmt.Fprintf(w, "ratio intake / COPY: %.3f\n", quotient(rate, baseRate))
	if m.stolenOK {
		fmt.Fprintf(w, "CPU time stolen by the hypervisor during the intake: %.0f%%\n", m.stolen*100)
	}
	if m.cpuOK && m.busy > 0 {
		fmt.Fprintf(w, "the machine's CPU time during the intake: %.1f s, %.2f ms per payment (this process %.2f ms: the handler, Temporal, Phase A; the rest mostly PostgreSQL)\n",
			m.busy.Seconds(), msPer(m.busy, m.payments), msPer(m.used, m.payments))
	}
	return rate, baseRate
}

// rateIn is n in d, per second (no time: zero).
func rateIn(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// quotient is a / b, zero for a b of zero: a ratio against a baseline
// that measured nothing is no figure.
func quotient(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// awaitAutovacuum waits, up to limit, until no autovacuum worker has run
// for two seconds; it returns how long it waited and whether they stopped.
func awaitAutovacuum(ctx context.Context, db *postgres.DB, limit time.Duration) (time.Duration, bool, error) {
	start, idle := time.Now(), 0
	for time.Since(start) < limit {
		var workers int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`).Scan(&workers); err != nil {
			return 0, false, fmt.Errorf("autovacuum's workers: %w", err)
		}
		if idle = idle + 1; workers > 0 {
			idle = 0
		}
		if idle > 4 {
			return time.Since(start), true, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return time.Since(start), false, nil
}

// copyBaseline times a COPY of n payment rows like intake's into a scratch
// table shaped like payments.
func copyBaseline(ctx context.Context, db *postgres.DB, n int, at time.Time) (time.Duration, error) {
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE intake_copy_baseline (LIKE payments INCLUDING ALL)`); err != nil {
		return 0, err
	}
	defer func() { _, _ = db.Pool.Exec(context.WithoutCancel(ctx), `DROP TABLE intake_copy_baseline`) }()
	cols := []string{"payment_id", "external_id", "tenant_id", "debtor_account", "amount", "currency", "creditor_name", "creditor_iban",
		"requested_execution_time", "scheduled_execution_time", "status", "request"}
	rows := make([][]any, n)
	for i := range rows {
		r := benchRequest("cp", i, at)
		raw, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		rows[i] = []any{payment.Key(r.TenantID, r.PaymentID), r.PaymentID, r.TenantID, r.DebtorAccount, r.Amount, r.Currency, r.Creditor.Name, r.Creditor.IBAN,
			at, at.Add(time.Duration(i/100) * time.Second), "SCHEDULED", string(raw)}
	}
	// The intake's garbage collected first, not during the COPY.
	runtime.GC()
	start := time.Now()
	copied, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"intake_copy_baseline"}, cols, pgx.CopyFromRows(rows))
	if err != nil {
		return 0, fmt.Errorf("COPY baseline: %w", err)
	}
	if copied != int64(n) {
		return 0, fmt.Errorf("COPY baseline: %s of %d rows", strconv.FormatInt(copied, 10), n)
	}
	return time.Since(start), nil
}
