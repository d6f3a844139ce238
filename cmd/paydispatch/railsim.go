package main

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
)

// runRailSim serves the rail simulator on its own, for relayers in other
// processes (serve embeds one when PAYDISPATCH_RAIL_URL is empty).
func runRailSim(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "rail-sim", "[flags]",
		"Serves a simulated payment rail until SIGINT or SIGTERM: the rail HTTP API the relayer speaks\n"+
			"(POST /v1/instructions JSON, POST /v1/pacs008 ISO 20022, GET /v1/instructions/{key} inquiry), idempotent\n"+
			"by key, in memory. It plays several rails at once: DEFAULT at the root, rail NAME under /rails/NAME\n"+
			"(point a rail's endpoint at http://<--http-addr>/rails/NAME), each with its own ledger and, with\n"+
			"--cutoffs or PUT /admin/rails/NAME {\"cutoff\":\"16:00:00\",\"timeZone\":\"Europe/Berlin\"}, a cut-off past\n"+
			"which an instruction for its value date is refused TM01. GET /ledger shows what it received (received,\n"+
			"unique, duplicates, per participant gaps and reordering, per rail; ?instructions=true: every key with\n"+
			"its arrival); POST /ledger/reset forgets it; GET and PUT /admin/behaviour read and change the behaviour\n"+
			"below at run time; these admin routes answer only a loopback Host (127.0.0.1, localhost, [::1]).\n"+
			"Point relayers at it with PAYDISPATCH_RAIL_URL=http://<--http-addr>. Not for production: it has no tokens.")
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
	_, stop, err := app.StartRailSim(ctx, rs.Addr, rs.Options(), log)
	if err != nil {
		return fmt.Errorf("%w (set --http-addr or PAYDISPATCH_RAIL_SIM_ADDR to a free address)", err)
	}
	var started parts
	started.add("the rail simulator", stop)
	<-ctx.Done()
	log.Info("rail simulator stopping", "shutdown_timeout", shutdown)
	return started.stopBy(time.Now().Add(shutdown))
}
