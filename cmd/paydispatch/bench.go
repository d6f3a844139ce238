package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/bench"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

const benchUsage = `Usage: paydispatch bench [--quick] [--only queue,pacing,...] [--out results.md]
       paydispatch bench queue|pipeline|pacing|drain|webhooks|intake|outbox|saga|redrive|kafka|repace|history [flags]

Without a name, runs every benchmark (or those --only names) one after the other and prints
their headlines as one table, each beside the baseline it measured in the same run, with the
machine's cores and the CPU the hypervisor stole during it; --quick runs CI-sized data, --out
also writes the table as Markdown. With a name, runs that benchmark with its own flags
('paydispatch bench NAME --help').

Benchmarks:
  queue     claim and dispatch throughput and claim latency of the dispatch queue
  pipeline  before/after: one sleeping workflow per payment vs this pipeline, on one embedded Temporal
  pacing    slot assignment: concurrent single assignments and one bulk assignment for one instant
  drain     pacing end to end: a paced bulk file through the whole pipeline, executions per second (SVG);
            with levers: a limit change, a tenant's pause and resume mid-run
  webhooks  the drain with one tenant's signed-webhook endpoint answering 503 to one request in ten: events/s,
            the last event's lag behind the last payment, each payment's events complete and in order
            (not in the suite)
  intake    one bulk file of 500,000 payments for one instant: POST → all SCHEDULED, beside a COPY baseline
  outbox    the relayer against the rail simulator: commit → receipt latency (NOTIFY, poll-only), instr/s
  saga      SubmitPayment on the ledger and process store (no Temporal): payments/s over many accounts and one
  redrive   dispatch dead letters requeued through a rate-limit config: executions per window, the requeue call's time
  repace    the levers on 100,000 waiting payments: a limit change, a pause, a resume, a priority reorder; time and statements
            (not in the suite)
  history   loads N payments' worth of a past run's rows by COPY into DATABASE_URL (or a private server): time and sizes
            (not in the suite)`

func runBench(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "--") && !slices.Contains([]string{"-h", "--help", "-help"}, args[0]) {
		return runBenchSuite(ctx, env, args)
	}
	// --figures-out FILE (the suite's, before the name's flags): the
	// benchmark's headlines are written there as JSON.
	if len(args) > 2 && args[1] == "--figures-out" {
		file := args[2]
		benchFigures = &bench.Figures{}
		err := runBench(ctx, env, append([]string{args[0]}, args[3:]...))
		if err == nil {
			err = benchFigures.WriteFile(file)
		}
		return err
	}
	switch args[0] {
	case "-h", "--help", "-help":
		fmt.Fprintln(env.stdout, benchUsage)
		return nil
	}
	if run, ok := benchCommands[args[0]]; ok {
		return run(ctx, env, args[1:])
	}
	return usageError{fmt.Errorf("unknown benchmark %q: use 'queue', 'pipeline', 'pacing', 'drain', 'webhooks', 'intake', 'outbox', 'saga', 'redrive', 'kafka', 'repace' or 'history'", args[0])}
}

// benchFigures receives a benchmark's headlines when the suite runs it
// (see --figures-out); nil otherwise.
var benchFigures *bench.Figures

func runBenchSuite(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "bench", "[--quick] [--only NAMES] [--out FILE]",
		"Runs every benchmark (or those --only names: "+bench.SuiteNames()+") one after the other and prints\n"+
			"their headlines as one table beside the baselines they measured in the same run.")
	var (
		pgBin string
		lg    config.Log
		opt   bench.SuiteOptions
	)
	settings := []*config.Setting{
		{Flag: "pg-bin-dir", Env: "PAYDISPATCH_PG_BIN_DIR", Usage: "directory of the PostgreSQL server binaries",
			Parse: func(v string) error { pgBin = v; return nil }},
		{Flag: "quick", Default: "false", Bool: true, Usage: "CI-sized data: every benchmark in a few minutes in all",
			Parse: func(v string) (err error) { opt.Quick, err = strconv.ParseBool(v); return err }},
		{Flag: "only", Usage: "comma-separated benchmarks to run (default: all): " + bench.SuiteNames(),
			Parse: func(v string) error {
				opt.Only = nil
				for _, n := range strings.Split(v, ",") {
					if n = strings.TrimSpace(n); n != "" {
						if !slices.Contains(strings.Split(bench.SuiteNames(), ", "), n) {
							return fmt.Errorf("unknown benchmark %q: want some of %s", n, bench.SuiteNames())
						}
						opt.Only = append(opt.Only, n)
					}
				}
				return nil
			}},
		{Flag: "out", Usage: "also write the table as Markdown to this file",
			Parse: func(v string) error { opt.OutFile = v; return nil }},
	}
	// The benchmarks' stacks log at warn unless --log-level says more.
	set := config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...)
	if err := parse(set, append([]string{"--log-level=warn"}, args...)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: name one benchmark first ('paydispatch bench %s --help'), or use --only", fs.Arg(0), fs.Arg(0))}
	}
	opt.PGBinDir, opt.Out, opt.LogLevel = pgBin, env.stdout, strings.ToLower(lg.Level.String())
	binary, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run each benchmark in: %w", err)
	}
	opt.Binary = binary
	return bench.RunSuite(ctx, opt)
}

// benchCommands are the benchmarks' subcommands: each one's help, its
// settings and its run. A benchmark on a throw-away database takes
// DATABASE_URL (a scratch schema there) as well as the private server's
// binaries; the others start their own private stack.
var benchCommands = map[string]func(ctx context.Context, env *environment, args []string) error{
	"queue": benchCommand("queue", true,
		"Loads READY rows into a throw-away database (a fresh private PostgreSQL, or a scratch schema\n"+
			"on DATABASE_URL) and prints claim latency at two queue depths, the claim's EXPLAIN, and\n"+
			"claim + mark-dispatched throughput with concurrent claimers against a bare-UPDATE baseline.",
		bench.QueueSettings, bench.RunQueue),
	"pipeline": benchCommand("pipeline", false,
		"For each N, on a fresh private PostgreSQL and embedded Temporal (SQLite), N payments due at one\n"+
			"instant go through (a) the old design, one workflow per payment started at intake and sleeping\n"+
			"until the instant, then (b) this pipeline (bulk Phase A, queue, dispatcher, exec workflows),\n"+
			"both on the full path (SubmitPayment, the outbox relayer, the rail simulator). Prints peak open\n"+
			"workflows, the Temporal store's growth at the peak, the time from the instant until all payments\n"+
			"are delivered, CPU per payment, and the (a)/(b) ratios. Takes minutes per 10,000 payments.",
		bench.PipelineSettings, bench.RunPipeline),
	"pacing": benchCommand("pacing", true,
		"On a throw-away database (a fresh private PostgreSQL, or a scratch schema on DATABASE_URL):\n"+
			"single slot assignments from concurrent clients, all for one instant, against a one-row INSERT\n"+
			"baseline from the same clients; then one bulk assignment of many events for one instant. Checks\n"+
			"that no window is over its limit and every counter matches its slots.",
		bench.PacingSettings, bench.RunPacing),
	"drain": benchCommand("drain", false,
		"On a fresh private PostgreSQL and embedded Temporal, with payments paced by a rate-limit config:\n"+
			"one bulk file of payments due at one instant goes through Phase A (slots), the queue, the\n"+
			"dispatcher and the exec workflows. Prints executions per second, checks every window against\n"+
			"its limit and every full second against the rate (±5 %), and writes the histogram as SVG.\n"+
			"Levers mid-run: --limit-change-at/--limit-change-to change the config's limit (PutConfig, then\n"+
			"RepaceConfig), --pause-at/--resume-at/--pause-tenant pause and resume a tenant; the seconds are\n"+
			"then judged against the rate in force each second.",
		bench.DrainSettings, bench.RunDrain),
	"webhooks": benchCommand("webhooks", false,
		"The drain (its flags, by default 6,000 payments of one tenant at 100/s) with that tenant's one\n"+
			"signed-webhook endpoint on a loopback receiver that checks every signature and answers 503 to one\n"+
			"request in --fail-every, and a webhook relayer with the product's defaults. Prints the events\n"+
			"received, events per second, the lag of the last event behind the last payment's final status, how\n"+
			"many payments' events arrived complete and in order (and how many events were missing or out of\n"+
			"order), payment.accepted per window by its createdAt against the limit, and the CPU stolen; fails on\n"+
			"an event missing or out of order. Ends with the ledger check.",
		bench.WebhooksSettings, bench.RunWebhooks),
	"repace": benchCommand("repace", false,
		"On a fresh private PostgreSQL (pg_stat_statements) and embedded Temporal with Phase A running and no\n"+
			"dispatcher: one bulk file of --payments payments of one tenant, due hours ahead, waits on one rail;\n"+
			"then each lever once on all of them: a limit change (RepaceConfig), a pause and a resume of the\n"+
			"tenant, a HIGH file of 1 % joining them put first (Reorder), that file made LOW (SetBatchPriority).\n"+
			"Prints each move's wall time, payments moved per second, the machine's CPU and the CPU stolen, the\n"+
			"statements it ran (count, per payment, by kind), beside bare UPDATEs of as many rows; checks after\n"+
			"each move that no window is over the limit, every counter equals its slots and every waiting\n"+
			"payment's queue item and slot are at its time, and fails if not. Moves no money; ends with the\n"+
			"ledger check.",
		bench.RepaceSettings, bench.RunRepace),
	"history": benchCommand("history", true,
		"Loads --payments payments' worth of what a long run leaves behind, by COPY, into DATABASE_URL's\n"+
			"database (migrated first; the debtor accounts ACC-t0 … must have no transactions yet), or without\n"+
			"it into a fresh private PostgreSQL removed after (the load's time and sizes only): finished payments\n"+
			"over --days past days and --tenants tenants (DELIVERED, 1 % each FAILED, CANCELLED, REJECTED), their\n"+
			"COMPLETED queue items and dispatch audit, pacing slots and windows, SubmitPayment processes (instance,\n"+
			"log, inbox), balanced debits, bookings, rail instructions' outbox keys and attempts, notifications;\n"+
			"then VACUUM (FREEZE, ANALYZE). 'paydispatch verify' stays clean. Prints the rows and time per table, payments and rows\n"+
			"per second, and the largest tables' sizes.",
		bench.HistorySettings, bench.RunHistory),
	"intake": benchCommand("intake", false,
		"On a fresh private PostgreSQL and embedded Temporal with the init worker running: one JSON-lines\n"+
			"file of payments due at one instant, paced by a rate-limit config, POSTed to serve's handler;\n"+
			"prints the time from the POST to the last payment SCHEDULED and queued (its queue item, or\n"+
			"its slot past the queue's mark, as serve's dispatcher leaves it), rows per second beside a\n"+
			"COPY of as many payment rows measured in the same run, the CPU stolen, and\n"+
			"checks the schedule (no window over the limit, none empty between the first and last slot).",
		bench.IntakeSettings, bench.RunIntake),
	"kafka": benchCommand("kafka", false,
		"On a fresh private PostgreSQL and embedded Temporal with the init worker running, and an embedded\n"+
			"Kafka-protocol cluster: one JSON-lines file of --records payments POSTed to serve's handler (the\n"+
			"baseline), then as many payment records on a topic of --partitions partitions taken in by the Kafka\n"+
			"intake; prints each one's payments per second to the last payment SCHEDULED and their ratio; then,\n"+
			"with the event stream on and a relayer publishing it, --events more records and the latency of their\n"+
			"SCHEDULED events from the status change to a consumer, p50 and p99. Prints the CPU stolen.",
		bench.KafkaSettings, bench.RunKafka),
	"outbox": benchCommand("outbox", true,
		"On a throw-away database (a fresh private PostgreSQL, durable settings, or a scratch schema on\n"+
			"DATABASE_URL) and a rail simulator in this process with no added latency, with the relayer serve\n"+
			"runs: the simulator's raw accept rate from a plain HTTP client loop (the baseline); latency from\n"+
			"the producer's commit to the rail's receipt, p50 and p99, with NOTIFY and poll-only; instructions\n"+
			"per second delivered in throughput mode and in strict mode. Prints the cores and the CPU stolen.",
		bench.OutboxSettings, bench.RunOutbox),
	"saga": benchCommand("saga", true,
		"On a throw-away database (a fresh private PostgreSQL, durable settings, or a scratch schema on\n"+
			"DATABASE_URL), without Temporal: SubmitPayment executions per second as the exec workflow's local\n"+
			"activities run them, (a) spread over --accounts accounts and (b) all from one account, each beside a\n"+
			"baseline from the same run (one plain debit UPDATE + INSERT per payment, same concurrency). Ends with\n"+
			"the ledger check and exits 1 on any violation. Prints the cores, CPU per payment and the CPU stolen.",
		bench.SagaSettings, bench.RunSaga),
	"redrive": benchCommand("redrive", false,
		"On a fresh private PostgreSQL and embedded Temporal, with the rail simulator, the relayer and serve's\n"+
			"HTTP handlers: payments due now are POSTed with PAYMENT's dispatch off (the kill switch), turned into\n"+
			"dispatch dead letters by the bench (claimed and released as failed starts until their retries are used\n"+
			"up: seeded, not real failures), requeued by POST /admin/dead-letters/requeue under a new rate-limit\n"+
			"config (timed, beside one bare UPDATE of as many queue rows), and dispatch switched on. Prints the\n"+
			"executions per window counted from the payments' accepted_at, the mean rate against the limit, the\n"+
			"drain against the ideal, the CPU stolen; fails on any window over the limit, any payment not executed\n"+
			"exactly once, or any violation of the ledger check.",
		bench.RedriveSettings, bench.RunRedrive),
}

// benchCommand is a benchmark's subcommand: its flags (the database's, or
// only the private server's binaries, the log's, and its own), then run
// with its options and their Env.
func benchCommand[O any, P interface {
	*O
	SetEnv(bench.Env)
}](name string, database bool, help string, settings func(*O) []*config.Setting,
	run func(context.Context, O) error) func(context.Context, *environment, []string) error {
	return func(ctx context.Context, env *environment, args []string) error {
		fs := newFlagSet(env, "bench "+name, "[flags]", help)
		var (
			db  config.Database
			lg  config.Log
			opt O
		)
		common := []*config.Setting{{Flag: "pg-bin-dir", Env: "PAYDISPATCH_PG_BIN_DIR", Usage: "directory of the PostgreSQL server binaries",
			Parse: func(v string) error { db.PGBinDir = v; return nil }}}
		if database {
			common = config.DatabaseSettings(&db)
		}
		set := config.NewSet(fs, env.getenv, slices.Concat(common, config.LogSettings(&lg), settings(&opt))...)
		if err := parse(set, args); err != nil {
			return err
		}
		P(&opt).SetEnv(bench.Env{DatabaseURL: db.URL, PGBinDir: db.PGBinDir, Out: env.stdout, Logger: newLogger(env, lg), Figures: benchFigures})
		return run(ctx, opt)
	}
}
