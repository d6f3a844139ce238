package main

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/railsim"
)

// runRailSim serves the rail simulator on its own, for relayers in other
// processes (serve embeds one when PAYDISPATCH_RAIL_URL is empty).
func runRailSim(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "rail-sim", "[flags]",
		"Serves a simulated payment rail until SIGINT or SIGTERM: the rail HTTP API the relayer speaks\n"+
			"(POST /v1/instructions JSON, POST /v1/pacs008 ISO 20022, GET /v1/instructions/{key} inquiry), idempotent\n"+
			"by key, in memory. GET /ledger shows what it received (received, unique, duplicates, and per\n"+
			"participant gaps and reordering); POST /ledger/reset forgets it; GET and PUT /admin/behaviour read\n"+
			"and change the behaviour below at run time; these admin routes answer only a loopback Host\n"+
			"(127.0.0.1, localhost, [::1]). Point relayers at it with PAYDISPATCH_RAIL_URL=http://<--http-addr>.\n"+
			"Not for production: it has no tokens.")
	var (
		rs       config.RailSim
		lg       config.Log
		shutdown time.Duration
	)
	settings := append(config.RailSimSettings(&rs), config.LogSettings(&lg)...)
	settings = append(settings, config.ShutdownSetting(&shutdown))
	if err := parse(config.NewSet(fs, env.getenv, settings...), args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: rail-sim takes only flags", fs.Arg(0))}
	}
	log := newLogger(env, lg)
	_, stop, err := app.StartRailSim(ctx, rs.Addr, railsim.Behaviour{
		Latency:           railsim.Duration(rs.Latency),
		Jitter:            railsim.Duration(rs.Jitter),
		RetryableFraction: rs.RetryableFraction,
		TerminalFraction:  rs.TerminalFraction,
		TimeoutFraction:   rs.TimeoutFraction,
		Seed:              rs.Seed,
	}, log)
	if err != nil {
		return fmt.Errorf("%w (set --http-addr or PAYDISPATCH_RAIL_SIM_ADDR to a free address)", err)
	}
	var started parts
	started.add("the rail simulator", stop)
	<-ctx.Done()
	log.Info("rail simulator stopping", "shutdown_timeout", shutdown)
	return started.stopBy(time.Now().Add(shutdown))
}
