package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/temporal"
)

func runDemo(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "demo", "[flags]",
		"Runs paydispatch's main job end to end, with nothing to configure: a private PostgreSQL, the\n"+
			"embedded Temporal, the rail simulator and every role start in a fresh data directory; three\n"+
			"tenants submit payments (JSON-lines files and single API calls) all due at one instant, some\n"+
			"bad, some bound to fail in the saga, some refused by the rail, the end of a file past the\n"+
			"cut-off of one of two rails set up over the API; a payment over an approval rule waits for a\n"+
			"second principal, and a file and a payment sent again are caught as duplicates. They are\n"+
			"paced out at --rate while a live table follows them, rail by rail. At the end it verifies the\n"+
			"outcome (the rails' ledgers and cut-offs, the tenants' cut-off rules, the projections, the\n"+
			"controls, the ledger check, the queue) and writes an HTML report; it exits 1 when a check\n"+
			"fails.")
	var (
		o        demo.Options
		keep     bool
		viaKafka bool
		dataDir  string
		pgBin    string
		store    string
		lg       config.Log
		seed     int
	)
	settings := []*config.Setting{
		config.Int("payments", 10_000, 100, 1_000_000, "payments due at the instant", &o.Payments),
		config.Duration("at", "30s", 10*time.Second, "the instant: this long after the start", &o.At),
		config.Int("rate", 40, 1, 10_000, "executions a second the pacing allows, split five to three between the two rails (the default drains the day's payments in about 4 minutes on 2 cores)", &o.Rate),
		config.Int("seed", 1, 0, 1<<31-1, "seed of the payment mix and of the rail's refusals", &seed),
		config.ExecMode("payments' exec_mode: BATCH or PER_ITEM (default: as configured, BATCH)", &o.ExecMode),
		config.Duration("max-wait", "30m", time.Minute, "give up this long after the instant", &o.MaxWait),
		{Flag: "report", Usage: "where to write the HTML report (default: paydispatch-demo-<time>.html in the temporary directory)",
			Parse: func(v string) error { o.ReportPath = v; return nil }},
		config.Bool("keep", "keep the data directory at the end (and print how to serve on it)", &keep),
		config.Bool("kafka", "also run the Kafka intake and event stream on an embedded Kafka-protocol cluster: one ordinary payment in four goes through the topic, and every payment's events are read back and checked", &viaKafka),
		{Flag: "data-dir", Usage: "the data directory, which must not exist yet (default: a new temporary one)",
			Parse: func(v string) error { dataDir = v; return nil }},
		{Flag: "pg-bin-dir", Env: "PAYDISPATCH_PG_BIN_DIR", Usage: "directory of the PostgreSQL server binaries (default: found on PATH, pg_config, /usr/lib/postgresql/*/bin)",
			Parse: func(v string) error { pgBin = v; return nil }},
		{Flag: "temporal-store", Default: "auto", Usage: "the embedded Temporal's store: auto (sqlite), sqlite or postgres",
			Parse: func(v string) error {
				if _, err := temporal.ParseStore(v); err != nil {
					return err
				}
				store = v
				return nil
			}},
	}
	set := config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...)
	// The stack's info lines would scroll the live table away; --log-level
	// given later wins.
	if err := parse(set, append([]string{"--log-level=warn"}, args...)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: demo takes only flags", fs.Arg(0))}
	}
	o.Seed = uint64(seed)
	if dataDir == "" {
		d, err := os.MkdirTemp("", "paydispatch-demo-")
		if err != nil {
			return err
		}
		dataDir = d
	} else if _, err := os.Stat(dataDir); err == nil {
		return usageError{fmt.Errorf("--data-dir %s exists: the demo starts from nothing; name a new directory", dataDir)}
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	_ = os.Chmod(dataDir, 0o755) // the PostgreSQL server's user enters it
	dataDir, _ = filepath.Abs(dataDir)
	if !keep {
		defer os.RemoveAll(dataDir)
	}
	if o.ReportPath == "" {
		o.ReportPath = filepath.Join(os.TempDir(), "paydispatch-demo-"+time.Now().Format("20060102-150405")+".html")
	}
	o.ReportPath, _ = filepath.Abs(o.ReportPath)

	// The stack: serve's defaults, on loopback ports of its own, with an
	// admin token the demo holds.
	adminToken, err := auth.NewSecret()
	if err != nil {
		return err
	}
	stackEnv := map[string]string{
		"PAYDISPATCH_DATA_DIR": dataDir, "PAYDISPATCH_PG_BIN_DIR": pgBin, "PAYDISPATCH_HTTP_ADDR": "127.0.0.1:0",
		"PAYDISPATCH_TEMPORAL_PORT": "0", "PAYDISPATCH_TEMPORAL_STORE": store, "PAYDISPATCH_DB_MAX_CONNS": "40",
		"PAYDISPATCH_BOOTSTRAP_TOKEN": adminToken, "PAYDISPATCH_TOKEN_RATE_LIMIT": "0",
		// The tenants' webhook endpoints are on loopback, over http.
		"PAYDISPATCH_WEBHOOK_ALLOW_HTTP": "true", "PAYDISPATCH_WEBHOOK_ALLOW_PRIVATE": "true",
		"PAYDISPATCH_WEBHOOK_BACKOFF_BASE": "200ms", "PAYDISPATCH_WEBHOOK_BACKOFF_MAX": "5s",
	}
	if viaKafka {
		stackEnv["PAYDISPATCH_KAFKA_BROKERS"] = "embedded"
		stackEnv["PAYDISPATCH_KAFKA_TOPIC"] = "paydispatch.payment-requests"
		stackEnv["PAYDISPATCH_KAFKA_EVENTS_TOPIC"] = "paydispatch.payment-events"
	}
	var c serverConfig
	stackSet := config.NewSet(flag.NewFlagSet("demo stack", flag.ContinueOnError), func(k string) string { return stackEnv[k] },
		append(append(append(config.DatabaseSettings(&c.db), config.ServerSettings(&c.srv)...), config.TemporalSettings(&c.tc)...),
			append(config.DispatchSettings(&c.dm), append(append(config.RailSettings(&c.rl), config.RelaySettings(&c.rc)...),
				append(config.WebhookSettings(&c.wh), config.KafkaSettings(&c.kc)...)...)...)...)...)
	if err := stackSet.Parse(nil); err != nil {
		return err
	}
	// About 1 % of the instructions refused by the rail (→ RETURNED).
	c.railSim = railsim.Behaviour{TerminalFraction: 0.01, Seed: o.Seed}
	stackLog := newLogger(env, lg)
	fmt.Fprintf(env.stdout, "paydispatch demo: starting PostgreSQL, Temporal, the rail simulator and every role in %s ...\n", dataDir)
	started := time.Now()
	run, err := startServer(ctx, &environment{stdout: io.Discard, stderr: env.stderr, getenv: func(k string) string { return stackEnv[k] }}, c, stackLog)
	if err != nil {
		return err
	}
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = run.http.Shutdown(shutdown)
		run.stop()
	}()
	fmt.Fprintf(env.stdout, "started in %.1f s: API http://%s, Temporal %s, rail simulator %s\n",
		time.Since(started).Seconds(), run.addr, run.tconn.Address, run.railURL)

	o.API, o.AdminToken, o.Pool, o.RailURL = "http://"+run.addr, adminToken, run.store.Pool, run.railURL
	o.Out, o.Live = env.stdout, isTerminal(env.stdout)
	o.CancelShare, o.Webhooks, o.Rails, o.Controls = true, true, true, true
	if viaKafka {
		o.Kafka = &demo.KafkaOptions{Brokers: run.kafkaBrokers, Topic: c.kc.Topic, EventsTopic: c.kc.EventsTopic}
		fmt.Fprintf(env.stdout, "Kafka: embedded cluster on %v, intake topic %s, events topic %s\n", run.kafkaBrokers, c.kc.Topic, c.kc.EventsTopic)
	}
	res, err := demo.Run(ctx, o)
	if keep {
		tokenFile := filepath.Join(dataDir, "admin-token")
		_ = os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600)
		fmt.Fprintf(env.stdout, "\ndata directory kept: %s\nlook around: PAYDISPATCH_DATA_DIR=%s paydispatch serve   (admin token in %s)\n",
			dataDir, dataDir, tokenFile)
	}
	if err != nil {
		return err
	}
	if !res.Passed() {
		return errors.New("demo: the verification failed (see the checks above)")
	}
	fmt.Fprintln(env.stdout, "demo: every check passed")
	return nil
}

// isTerminal reports whether w is a terminal (a live table can redraw).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
