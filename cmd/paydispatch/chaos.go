package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/chaos"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

func runChaos(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "chaos", "[flags]",
		"Attacks every guarantee: the roles run as OS processes of this binary (serve, init ×2, exec ×2,\n"+
			"relay ×2, a dispatcher in schedule mode and one in lease mode) against one PostgreSQL, a Temporal\n"+
			"server process and the rail simulator. While the demo's payments drain, a random role process is\n"+
			"killed (SIGKILL) and restarted every --kill-every on average; the Temporal server is stopped for\n"+
			"--temporal-outage; PostgreSQL is restarted after a fast, then an immediate shutdown; the rail\n"+
			"answers retryable errors, then times out after accepting; the kill switch goes off and on; the\n"+
			"dispatch rate is cut and restored. Then it checks every invariant and prints what it injected\n"+
			"and checked, with the seed that replays the schedule. --duration repeats runs (seed, seed+1, ...)\n"+
			"for that long. It exits 1 when an invariant fails.")
	var (
		o        chaos.Options
		seed     int
		duration time.Duration
		keep     bool
		parent   string
		lg       config.Log
	)
	settings := []*config.Setting{
		config.Int("payments", 2000, 100, 1_000_000, "payments due at the instant, per run", &o.Payments),
		config.Int("rate", 20, 1, 10_000, "executions a second the pacing allows", &o.Rate),
		config.ExecMode("payments' exec_mode for the runs: BATCH or PER_ITEM (default: as configured, BATCH); the suite also switches it for a while in each run", &o.ExecMode),
		config.Int("seed", 0, 0, 1<<31-1, "seed of the fault schedule and the payment mix (0: one from the clock, printed)", &seed),
		config.Duration("kill-every", "6s", time.Second, "mean pause between two kills of a role process", &o.KillEvery),
		config.Int("min-kills", 10, 0, 100_000, "fewest kills a run must see, or it fails", &o.MinKills),
		config.Duration("temporal-outage", "30s", time.Second, "how long the Temporal server stays stopped", &o.TemporalOutage),
		config.Duration("stretch", "10s", time.Second, "how long each rail fault, the kill switch and the rate cut last", &o.Stretch),
		config.Duration("max-wait", "20m", time.Minute, "give up on a run this long after its instant", &o.MaxWait),
		config.Duration("duration", "0s", 0, "repeat runs until this long has passed (0: one run)", &duration),
		config.Bool("keep", "keep each run's directory (data, logs, report), even when it passed", &keep),
		{Flag: "binary", Usage: "the paydispatch binary whose roles run as processes (default: this one)",
			Parse: func(v string) error { o.Binary = v; return nil }},
		{Flag: "dir", Usage: "where the runs' directories go (default: the temporary directory)",
			Parse: func(v string) error { parent = v; return nil }},
		{Flag: "pg-bin-dir", Env: "PAYDISPATCH_PG_BIN_DIR", Usage: "directory of the PostgreSQL server binaries (default: found on PATH, pg_config, /usr/lib/postgresql/*/bin)",
			Parse: func(v string) error { o.PGBinDir = v; return nil }},
	}
	if err := parse(config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...), append([]string{"--log-level=warn"}, args...)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: chaos takes only flags", fs.Arg(0))}
	}
	if o.Binary == "" {
		bin, err := os.Executable()
		if err != nil {
			return fmt.Errorf("chaos: find this binary, whose roles it runs: %w", err)
		}
		o.Binary = bin
	}
	if seed == 0 {
		seed = int(time.Now().UnixNano()%(1<<31-1)) + 1
	}
	o.Out, o.Log = env.stdout, newLogger(env, lg)
	started := time.Now()
	var (
		runs   []chaos.Result
		failed bool
		err    error
	)
	for i := 0; i == 0 || time.Since(started) < duration; i++ {
		o.Seed = uint64(seed + i)
		if o.Dir, err = chaos.NewDir(parent); err != nil {
			return err
		}
		res, err := chaos.Run(ctx, o)
		runs = append(runs, res)
		ok := err == nil && res.Passed()
		if !ok || keep {
			fmt.Fprintf(env.stdout, "run %d (seed %d) kept in %s (logs/, report.html)\n", i+1, o.Seed, o.Dir)
		} else {
			_ = os.RemoveAll(o.Dir)
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("chaos: interrupted during run %d (seed %d); every fault under way was undone", i+1, o.Seed)
			}
			return fmt.Errorf("chaos run %d (seed %d): %w", i+1, o.Seed, err)
		}
		failed = failed || !ok
		if ctx.Err() != nil {
			break
		}
	}
	if len(runs) > 1 {
		fmt.Fprintf(env.stdout, "\n%d runs in %s:\n", len(runs), time.Since(started).Round(time.Second))
		chaos.PrintTables(env.stdout, runs)
	}
	if failed {
		return chaos.ErrFailed
	}
	fmt.Fprintf(env.stdout, "chaos: every invariant held in %d run(s), %s\n", len(runs), time.Since(started).Round(time.Second))
	return nil
}
