package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// RedriveOptions configure the dead-letter redrive benchmark.
type RedriveOptions struct {
	Env

	Payments     int
	MaxPerWindow int
	Window       time.Duration
	// MaxWait bounds the drain from when dispatch is enabled (0: the ideal
	// drain, Payments at the config's rate, plus two minutes).
	MaxWait time.Duration
}

// RedriveSettings binds the benchmark's flags.
func RedriveSettings(o *RedriveOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 10_000, 50, 1_000_000, "payments made, turned into dispatch dead letters and requeued", &o.Payments),
		config.Int("max-per-window", 50, 1, 100_000, "the requeue's rate-limit config: executions per window", &o.MaxPerWindow),
		isoFlag("window", "PT1S", time.Second, "the requeue's rate-limit config's window (ISO-8601)", &o.Window),
		{Flag: "max-wait", Usage: "give up this long after dispatch is enabled, e.g. 10m (default: payments at the config's rate, plus 2m)",
			Parse: func(v string) error {
				if v == "" {
					o.MaxWait = 0
					return nil
				}
				d, err := time.ParseDuration(v)
				if err != nil || d < time.Minute {
					return fmt.Errorf("want a duration of at least 1m, e.g. 10m")
				}
				o.MaxWait = d
				return nil
			}},
	}
}

// RunRedrive measures a requeue of dispatch dead letters through a
// rate-limit config, end to end, as an operator makes it. On a fresh
// private PostgreSQL and embedded Temporal, with the rail simulator and
// the relayer serve runs, and serve's HTTP handlers: PAYMENT's dispatch is
// switched off (the kill switch, exec_rate_config enabled=false), the
// payments are POSTed as one bulk file due now and wait READY; the bench
// turns each queue item into a dead letter through the queue's own
// transitions (claimed and released as a failed start until its retries
// are used up, no workflow started: seeded, not real failures); a
// rate-limit config is created, every dispatch dead letter requeued under
// it by POST /admin/dead-letters/requeue (timed, beside one bare UPDATE of
// as many rows in a copy of the queue table), and dispatch switched on.
// Executions per window are then counted from the payments' accepted_at
// (the time each execution was let go, bucketed as pacing_execute aligns
// windows: on the epoch, in whole window lengths), not from the limiter's
// own counts; any window over the limit, any payment not executed exactly
// once, or any violation of the ledger check fails the run.
func RunRedrive(ctx context.Context, o RedriveOptions) error {
	if o.Window%time.Millisecond != 0 {
		return fmt.Errorf("--window %s: want whole milliseconds", pacing.FormatISODuration(o.Window))
	}
	rate := float64(o.MaxPerWindow) / o.Window.Seconds()
	ideal := time.Duration(float64(o.Payments) / rate * float64(time.Second))
	maxWait := o.MaxWait
	if maxWait == 0 {
		maxWait = ideal + 2*time.Minute
	}
	cfgName := fmt.Sprintf("redrive-%d", o.MaxPerWindow)
	fmt.Fprintf(o.Out, "paydispatch bench redrive: %d CPUs, %s; embedded PostgreSQL and Temporal, rail simulator, serve's HTTP handlers; %s payments dead-lettered, then requeued under %s (%d per %s, %.1f/s)\n",
		runtime.NumCPU(), memTotal(), thousands(o.Payments), cfgName, o.MaxPerWindow, pacing.FormatISODuration(o.Window), rate)
	runCPU, runCPUOK := readCPU()
	log := o.Logger
	// PAYMENT's own config ("payments") is ten times the redrive's: an
	// execution held to it rather than to the requeue's config would show
	// as a window over the limit.
	own := pacing.Limit{MaxPerWindow: 10 * o.MaxPerWindow, Window: o.Window}
	stack, err := openPrivateStack(ctx, "redrive", o.PGBinDir, log, ptemporal.Options{
		HeldWorkflowTypes: []string{payment.ExecWorkflowName, dispatch.BatchWorkflowName},
	}, own, nil)
	if err != nil {
		return err
	}
	defer stack.close()
	db, tc := stack.db, stack.tc

	router, err := httpapi.NewRouter(httpapi.RouterConfig{Log: log, MaxBody: 1 << 20, MaxBulkBody: 2 << 30, Services: httpapi.Services{
		Payments:        app.PaymentService(db, tc, payment.ServiceConfig{}),
		Pacer:           pacing.New(pacing.Config{Pool: db.Pool}),
		DispatchConfigs: queue.New(db.Pool),
		DeadLetters:     app.DeadLetters(db),
		Audit:           audit.New(audit.Config{DB: db.Pool}), // the admin changes are audited, or refused
	}})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(router)
	defer srv.Close()
	api, err := benchClient(srv.URL)
	if err != nil {
		return err
	}

	// The kill switch before anything runs: nothing is dispatched.
	qcfg, err := client.Result[*client.DispatchConfig](api.UpdateDispatchConfig(ctx, client.UpdateDispatchConfigReq{
		"enabled": client.NewBoolUpdateDispatchConfigReqItem(false), "pacing_config": client.NewStringUpdateDispatchConfigReqItem("payments"),
	}, client.UpdateDispatchConfigParams{ItemType: payment.ItemType}))
	if err != nil {
		return fmt.Errorf("PATCH /admin/dispatch/config/%s: %w", payment.ItemType, err)
	}
	fmt.Fprintf(o.Out, "PAYMENT: dispatch off (enabled=%t), exec mode %s, batch size %d, a cycle every %d s, paced lead %d ms, max in flight %d, %d dispatch retries; its own rate-limit config %q: %d per %s\n",
		qcfg.Enabled, qcfg.ExecMode, qcfg.BatchSize, qcfg.DispatchIntervalSecs, qcfg.PacedLeadMs.Or(0), qcfg.MaxInFlight, qcfg.MaxDispatchRetries.Or(0),
		qcfg.PacingConfig.Or(""), own.MaxPerWindow, pacing.FormatISODuration(own.Window))
	for _, start := range []func(*postgres.DB, *ptemporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, app.Options{})
		if err != nil {
			return err
		}
		defer stop()
	}
	stopDispatch, err := app.StartDispatcher(ctx, "schedule", db, tc, log, app.Options{})
	if err != nil {
		return err
	}
	defer stopDispatch()
	stopDelivery, err := startDelivery(ctx, db, log)
	if err != nil {
		return err
	}
	defer stopDelivery()

	// The payments, due now, through the bulk intake.
	if err := redriveIntake(ctx, o, api, db.Pool); err != nil {
		return err
	}
	dead, err := seedDeadLetters(ctx, o, db.Pool, qcfg.MaxDispatchRetries.Or(0))
	if err != nil {
		return err
	}
	baseline, err := requeueBaseline(ctx, db.Pool, dead)
	if err != nil {
		return err
	}

	// The requeue's config, then the requeue, timed.
	headroom := o.Payments/o.MaxPerWindow + 100
	if _, err := client.Result[*client.RateLimitConfig](api.PutRateLimitConfig(ctx, &client.RateLimitConfigRequest{
		ConfigName: cfgName, MaxPerWindow: o.MaxPerWindow, WindowSize: pacing.FormatISODuration(o.Window), Headroom: client.NewOptInt(headroom),
	})); err != nil {
		return fmt.Errorf("POST /admin/rate-limit/config: %w", err)
	}
	fmt.Fprintf(o.Out, "rate-limit config %s: %d per %s, headroom %d windows (POST /admin/rate-limit/config)\n",
		cfgName, o.MaxPerWindow, pacing.FormatISODuration(o.Window), headroom)
	reqCPU, reqCPUOK := readCPU()
	reqStart := time.Now()
	requeued, err := client.Result[*client.DeadLetterRequeued](api.RequeueDeadLetters(ctx, &client.DeadLetterRequeue{
		Filter:          client.NewOptDeadLetterFilter(client.DeadLetterFilter{Source: client.NewOptDeadLetterFilterSource(deadletter.SourceDispatch)}),
		RateLimitConfig: client.NewOptString(cfgName), Reason: client.NewOptString("bench redrive"),
	}))
	if err != nil {
		return fmt.Errorf("POST /admin/dead-letters/requeue: %w", err)
	}
	took := time.Since(reqStart)
	res := deadletter.Result{Requeued: requeued.Requeued, Refused: requeued.Refused.Value, Unslotted: requeued.Unslotted.Or(0),
		Configs: requeued.Configs, FirstSlot: requeued.FirstSlot.Or(time.Time{}), LastSlot: requeued.LastSlot.Or(time.Time{})}
	reqSteal, reqStealOK := stolenSince(reqCPU)
	fmt.Fprintf(o.Out, "\nPOST /admin/dead-letters/requeue {\"filter\":{\"source\":\"dispatch\"},\"rateLimitConfig\":%q}: %.2f s, %.0f ms per 1,000 letters%s\n",
		cfgName, took.Seconds(), float64(took.Milliseconds())*1000/float64(max(res.Requeued, 1)), stealNote(reqSteal, reqStealOK && reqCPUOK))
	fmt.Fprintf(o.Out, "  requeued %s, unslotted %d, refused %d, configs %v, slots %s .. %s (%.1f s)\n",
		thousands(res.Requeued), res.Unslotted, len(res.Refused), res.Configs, res.FirstSlot.UTC().Format("15:04:05.000"),
		res.LastSlot.UTC().Format("15:04:05.000"), res.LastSlot.Sub(res.FirstSlot).Seconds())
	fmt.Fprintf(o.Out, "  baseline, one bare UPDATE of %s rows DEAD_LETTER → READY in a copy of exec_queue: %.3f s (the requeue %.1f × it)\n",
		thousands(dead), baseline.Seconds(), took.Seconds()/baseline.Seconds())
	// The suite's table: the executions' headline first, this one after it.
	requeueFig := Figure{What: fmt.Sprintf("POST requeue of %s dead letters", thousands(res.Requeued)), Value: took.Seconds(), Unit: "s",
		Baseline: "one bare UPDATE of as many queue rows (a copy)", BaseVal: baseline.Seconds(), BaseUnit: "s"}
	if res.Requeued != o.Payments || res.Unslotted != 0 || len(res.Refused) != 0 {
		return fmt.Errorf("the requeue moved %d of %d dead letters (%d unslotted, %d refused)", res.Requeued, o.Payments, res.Unslotted, len(res.Refused))
	}

	// Dispatch on; the drain, with a deadline.
	if err := client.Check(api.UpdateDispatchConfig(ctx, client.UpdateDispatchConfigReq{"enabled": client.NewBoolUpdateDispatchConfigReqItem(true)},
		client.UpdateDispatchConfigParams{ItemType: payment.ItemType})); err != nil {
		return fmt.Errorf("PATCH /admin/dispatch/config/%s: %w", payment.ItemType, err)
	}
	enabled := time.Now()
	fmt.Fprintf(o.Out, "dispatch on (PATCH enabled=true) %.1f s after the first slot; waiting for every payment to execute (at most %v) ...\n",
		enabled.Sub(res.FirstSlot).Seconds(), maxWait.Round(time.Second))
	drainCPU, drainCPUOK := readCPU()
	deadline := enabled.Add(maxWait)
	for {
		var executed int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status <> 'SCHEDULED'`).Scan(&executed); err != nil {
			return err
		}
		if executed == o.Payments {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d payments executed %v after dispatch was enabled", executed, o.Payments, maxWait.Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	drainSteal, drainStealOK := stolenSince(drainCPU)
	drainBusy := busySince(drainCPU)
	// Then let the rail answer for every one, so the ledger check sees
	// the whole path settled.
	final := []string{string(payment.StatusDelivered), string(payment.StatusReturned), string(payment.StatusFailed)}
	settleBy := time.Now().Add(2 * time.Minute)
	for {
		var settled int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = ANY($1)`, final).Scan(&settled); err != nil {
			return err
		}
		if settled == o.Payments {
			break
		}
		if time.Now().After(settleBy) {
			return fmt.Errorf("%d of %d payments %s 2 minutes after the last executed", settled, o.Payments, strings.Join(final, "/"))
		}
		time.Sleep(time.Second)
	}

	failures := reportRedrive(ctx, o, db.Pool, cfgName, rate, ideal, enabled, res)
	o.Figures.add(requeueFig)
	if drainStealOK && drainCPUOK {
		fmt.Fprintf(o.Out, "CPU stolen by the hypervisor: %.0f %% during the drain", drainSteal*100)
		if st, ok := stolenSince(runCPU); ok && runCPUOK {
			fmt.Fprintf(o.Out, ", %.0f %% over the whole run", st*100)
		}
		fmt.Fprintln(o.Out)
	}
	if drainBusy > 0 {
		fmt.Fprintf(o.Out, "the machine's CPU time during the drain: %.1f s, %.1f ms per payment\n",
			drainBusy.Seconds(), float64(drainBusy.Microseconds())/1000/float64(o.Payments))
	}
	if err := ledgerCheck(ctx, db.Pool, o.Out); err != nil {
		failures = append(failures, err.Error())
	}
	if len(failures) > 0 {
		return fmt.Errorf("bench redrive: %s", strings.Join(failures, "; "))
	}
	return nil
}

// redriveIntake POSTs the payments as one JSON-lines file due now and
// waits until Phase A has them all SCHEDULED, each with its READY queue
// item.
func redriveIntake(ctx context.Context, o RedriveOptions, api *client.Client, pool *pgxpool.Pool) error {
	at := time.Now()
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for i := range o.Payments {
		if err := enc.Encode(benchRequest("rd", i, at)); err != nil {
			return err
		}
	}
	start := time.Now()
	if _, err := client.Result[*client.BatchAcceptedHeaders](api.CreatePaymentBatch(ctx,
		&client.CreatePaymentBatchReqApplicationXNdjson{Data: &body}, client.CreatePaymentBatchParams{})); err != nil {
		return fmt.Errorf("POST /v1/payment-batches: %w", err)
	}
	deadline := start.Add(10 * time.Minute)
	for {
		var pending bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_intake)`).Scan(&pending); err != nil {
			return err
		}
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chunks still in Phase A 10 minutes after the POST")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var scheduled, ready int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'SCHEDULED'),
		(SELECT count(*) FROM exec_queue WHERE item_type = $1 AND queue_status = 'READY')`, payment.ItemType).Scan(&scheduled, &ready); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "intake: %s payments due %s POSTed as one file (POST /v1/payment-batches): %s SCHEDULED, %s queue items READY after %.1f s; dispatch is off, none executes\n",
		thousands(o.Payments), at.UTC().Format("15:04:05"), thousands(scheduled), thousands(ready), time.Since(start).Seconds())
	if scheduled != o.Payments || ready != o.Payments {
		return fmt.Errorf("intake: %d of %d payments SCHEDULED, %d READY", scheduled, o.Payments, ready)
	}
	return nil
}

// seedLastError is what each seeded dead letter's last (simulated) start
// failure says.
const seedLastError = "bench: seeded: start refused (simulated by the redrive bench; no workflow was started)"

// seedDeadLetters turns every READY PAYMENT item into a dispatch dead
// letter through the queue's own transitions, as the dispatcher makes one
// when an execution's start keeps failing: claimed (queue.ClaimBatch) and
// released with the start's error (queue.ReleaseForRetryBatch), until its
// retries are used up and the release moves it to DEAD_LETTER. No
// workflow is started and no engine refused anything: the failures are
// the bench's.
func seedDeadLetters(ctx context.Context, o RedriveOptions, pool *pgxpool.Pool, maxRetries int) (int, error) {
	q := queue.New(pool)
	start := time.Now()
	claims := 0
	p := queue.ClaimParams{ItemType: payment.ItemType, BatchSize: 1000, PreStartBuffer: time.Hour, MaxRetries: maxRetries}
	for {
		b, err := q.ClaimBatch(ctx, p)
		if err != nil {
			return 0, err
		}
		if len(b.Items) == 0 {
			break
		}
		claims++
		fs := make([]queue.Failure, len(b.Items))
		for i, it := range b.Items {
			fs[i] = queue.Failure{ItemID: it.ID, Error: seedLastError}
		}
		if _, err := q.ReleaseForRetryBatch(ctx, payment.ItemType, b.ID, fs, maxRetries); err != nil {
			return 0, err
		}
	}
	var dead, other int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE queue_status = 'DEAD_LETTER' AND retry_count = $2 AND last_error = $3),
		count(*) FILTER (WHERE queue_status <> 'DEAD_LETTER') FROM exec_queue WHERE item_type = $1`,
		payment.ItemType, maxRetries, seedLastError).Scan(&dead, &other); err != nil {
		return 0, err
	}
	fmt.Fprintf(o.Out, "dead letters SEEDED by the bench, not real failures: %s PAYMENT items claimed and released as failed starts until their %d retries were used up (%d claims, queue.ClaimBatch + ReleaseForRetryBatch, the dispatcher's path for a refused start; no workflow started), %.1f s; last error %q\n",
		thousands(dead), maxRetries, claims, time.Since(start).Seconds(), seedLastError)
	if dead != o.Payments || other != 0 {
		return 0, fmt.Errorf("seeding: %d of %d items dead letters, %d not", dead, o.Payments, other)
	}
	return dead, nil
}

// requeueBaseline times the least a requeue of n dead letters can cost:
// one UPDATE of every dead row to READY, in a copy of exec_queue (its
// indexes included), nothing slotted, checked or audited.
func requeueBaseline(ctx context.Context, pool *pgxpool.Pool, n int) (time.Duration, error) {
	if _, err := pool.Exec(ctx, `CREATE TABLE redrive_baseline (LIKE exec_queue INCLUDING ALL);
		INSERT INTO redrive_baseline SELECT * FROM exec_queue WHERE queue_status = 'DEAD_LETTER';
		ANALYZE redrive_baseline`); err != nil {
		return 0, fmt.Errorf("requeue baseline: %w", err)
	}
	defer func() { _, _ = pool.Exec(context.WithoutCancel(ctx), `DROP TABLE redrive_baseline`) }()
	start := time.Now()
	tag, err := pool.Exec(ctx, `UPDATE redrive_baseline SET queue_status = 'READY', scheduled_exec_time = now(), paced = true,
		retry_count = 0, claimed_at = NULL, updated_at = now() WHERE queue_status = 'DEAD_LETTER'`)
	if err != nil {
		return 0, fmt.Errorf("requeue baseline: %w", err)
	}
	took := time.Since(start)
	if tag.RowsAffected() != int64(n) {
		return 0, fmt.Errorf("requeue baseline: %d of %d rows", tag.RowsAffected(), n)
	}
	return took, nil
}

// reportRedrive counts executions per window from the payments'
// accepted_at, prints the figures, and returns what failed.
func reportRedrive(ctx context.Context, o RedriveOptions, pool *pgxpool.Pool, cfgName string, rate float64, ideal time.Duration,
	enabled time.Time, res deadletter.Result) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	winMs := o.Window.Milliseconds()
	// Windows as pacing_execute aligns them: window_start = the epoch's
	// milliseconds less their remainder by the window's.
	rows, err := pool.Query(ctx, `SELECT floor(extract(epoch FROM accepted_at) * 1000 / $1)::bigint AS w, count(*)
		FROM payments WHERE accepted_at IS NOT NULL GROUP BY 1 ORDER BY 1`, winMs)
	if err != nil {
		return []string{err.Error()}
	}
	perWindow := map[int64]int{}
	var first, last int64
	for rows.Next() {
		var w int64
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			rows.Close()
			return []string{err.Error()}
		}
		if len(perWindow) == 0 {
			first = w
		}
		perWindow[w], last = n, w
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return []string{err.Error()}
	}
	var executed, early, noAccepted int
	var firstExec, lastExec time.Time
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE p.accepted_at IS NOT NULL),
		count(*) FILTER (WHERE p.accepted_at < q.scheduled_exec_time),
		count(*) FILTER (WHERE p.accepted_at IS NULL),
		min(p.accepted_at), max(p.accepted_at)
		FROM payments p LEFT JOIN exec_queue q ON q.item_type = $1 AND q.item_id = p.payment_id`, payment.ItemType).Scan(
		&executed, &early, &noAccepted, &firstExec, &lastExec); err != nil {
		return []string{err.Error()}
	}
	wc := countRedriveWindows(perWindow, first, last, o.MaxPerWindow)
	span, maxWindow, over, empty, full := wc.span, wc.most, wc.over, wc.empty, wc.full
	fmt.Fprintf(o.Out, "\nexecutions per %s window, counted from payments.accepted_at (window: count, from the first execution's window):\n", pacing.FormatISODuration(o.Window))
	var line strings.Builder
	for w := first; w <= last; w++ {
		fmt.Fprintf(&line, "%5d:%-4d", w-first, perWindow[w])
		if (w-first)%10 == 9 {
			fmt.Fprintln(o.Out, line.String())
			line.Reset()
		}
	}
	if line.Len() > 0 {
		fmt.Fprintln(o.Out, line.String())
	}
	meanRate := float64(executed) / (float64(span) * o.Window.Seconds())
	drain := lastExec.Sub(enabled)
	fmt.Fprintf(o.Out, "\nwindows of %s the executions span: %d; most executions in one: %d (limit %d); windows over the limit: %d: %s\n",
		pacing.FormatISODuration(o.Window), span, maxWindow, o.MaxPerWindow, over, verdict(over == 0))
	fmt.Fprintf(o.Out, "windows at the limit: %d; below it: %d, of them empty: %d\n", full, wc.rest, empty)
	fmt.Fprintf(o.Out, "mean rate over those windows: %.2f/s against the limit's %.2f/s: %.3f × the limit\n", meanRate, rate, quotient(meanRate, rate))
	fmt.Fprintf(o.Out, "drain, dispatch on → the last execution: %.1f s against the ideal %.1f s (%s at %.0f/s): %.3f ×; the first execution %.1f s after dispatch on\n",
		drain.Seconds(), ideal.Seconds(), thousands(o.Payments), rate, quotient(drain.Seconds(), ideal.Seconds()), firstExec.Sub(enabled).Seconds())
	fmt.Fprintf(o.Out, "the requeue's first slot → the last execution: %.1f s; executions before their new slot: %d\n",
		lastExec.Sub(res.FirstSlot).Seconds(), early)
	o.Figures.add(Figure{What: fmt.Sprintf("%s dead letters requeued at %d per %s, executed: most in a window %d, %d windows over", thousands(o.Payments),
		o.MaxPerWindow, pacing.FormatISODuration(o.Window), maxWindow, over),
		Value: meanRate, Unit: "executions/s", Baseline: "the config's limit (asked, not measured)", BaseVal: rate, BaseUnit: "/s"})
	if over > 0 {
		fail("%d windows over the limit of %d (most %d)", over, o.MaxPerWindow, maxWindow)
	}

	// Each payment executed exactly once: one SubmitPayment process and
	// one debit each, and the rail's answer; the limiter's own counts
	// beside ours.
	var processes, oneDebit, notOneDebit, limiterCounted, limiterMax, ownCounted int
	if err := pool.QueryRow(ctx, debitsPerPayment, cfgName).Scan(&processes, &oneDebit, &notOneDebit, &limiterCounted, &limiterMax, &ownCounted); err != nil {
		return append(failures, err.Error())
	}
	byStatus, err := statusCounts(ctx, pool)
	if err != nil {
		return append(failures, err.Error())
	}
	once := executed == o.Payments && noAccepted == 0 && processes == o.Payments && oneDebit == o.Payments && notOneDebit == 0
	fmt.Fprintf(o.Out, "executed: %s of %s payments (accepted_at set), %s; SubmitPayment processes %s; payments with exactly one debit %s, with another count %d: %s\n",
		thousands(executed), thousands(o.Payments), byStatus, thousands(processes), thousands(oneDebit), notOneDebit, verdict(once))
	fmt.Fprintf(o.Out, "the limiter's own counts: %s executions under %s (recounts of a missed window included), most %d in a window; %d under PAYMENT's own config\n",
		thousands(limiterCounted), cfgName, limiterMax, ownCounted)
	if !once {
		fail("not every payment executed exactly once: %d executed, %d without accepted_at, %d processes, %d with one debit, %d with another count",
			executed, noAccepted, processes, oneDebit, notOneDebit)
	}
	return failures
}

// redriveWindows is what the requeue's executions did per window, from
// the first execution's window to the last's.
type redriveWindows struct {
	span, most              int
	over, empty, full, rest int // rest: below the limit, empty ones included
}

// countRedriveWindows counts perWindow (by window number) from first to
// last against limit; a window with no execution between them counts as
// empty.
func countRedriveWindows(perWindow map[int64]int, first, last int64, limit int) redriveWindows {
	var c redriveWindows
	for w := first; w <= last; w++ {
		n := perWindow[w]
		c.span++
		c.most = max(c.most, n)
		switch {
		case n > limit:
			c.over++
		case n == 0:
			c.empty++
		case n == limit:
			c.full++
		}
	}
	c.rest = c.span - c.full - c.over
	return c
}

// debitsPerPayment counts, for the exactly-once check: SubmitPayment
// processes; payments with exactly one debit and with any other number
// (the references a process's debit is written under, as verify reads
// them); the limiter's counts under the requeue's config ($1), their most
// in a window, and its counts under PAYMENT's own config.
const debitsPerPayment = `WITH d AS (
	SELECT p.payment_id, count(t.transaction_id) AS n
	FROM payments p
	LEFT JOIN process_instance pi ON pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id
	LEFT JOIN account_transaction t ON t.type = 'DEBIT' AND t.reference = ANY (payment_debit_references(pi.process_id, 0))
	GROUP BY p.payment_id)
SELECT (SELECT count(*) FROM process_instance WHERE process_type = 'SubmitPayment'),
	(SELECT count(*) FROM d WHERE n = 1), (SELECT count(*) FROM d WHERE n <> 1),
	(SELECT coalesce(sum(executed), 0) FROM pacing_execution WHERE config_name = $1),
	(SELECT coalesce(max(executed), 0) FROM pacing_execution WHERE config_name = $1),
	(SELECT coalesce(sum(executed), 0) FROM pacing_execution WHERE config_name = 'payments')`

// statusCounts is the payments' statuses with their counts, e.g.
// "DELIVERED 10,000".
func statusCounts(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM payments GROUP BY 1 ORDER BY 2 DESC, 1`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return "", err
		}
		parts = append(parts, s+" "+thousands(n))
	}
	return strings.Join(parts, ", "), rows.Err()
}

// stealNote is " [steal N %]" when known.
func stealNote(stolen float64, ok bool) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf(" [steal %.0f %%]", stolen*100)
}

// benchClient is the generated API client for the bench's test server,
// whose router asks for no token: the client sends one all the same, as
// the contract says, and the router ignores it.
func benchClient(base string) (*client.Client, error) {
	return client.NewClient(base, benchToken{})
}

type benchToken struct{}

func (benchToken) Bearer(context.Context, client.OperationName) (client.Bearer, error) {
	return client.Bearer{Token: "bench"}, nil
}
