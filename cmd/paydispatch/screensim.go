package main

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/screening"
)

// runScreenSim serves the screening simulator until SIGINT or SIGTERM.
func runScreenSim(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "screen-sim", "[flags]",
		"Serves a simulated screening service until SIGINT or SIGTERM: POST /v1/screen answers a batch of\n"+
			"payments CLEAR, HIT or ERROR by the screening protocol (docs/design.md#the-screening-hook), after\n"+
			"--delay; GET /stats counts the calls, payments, hits and errors. Named creditors (--hit-names) are\n"+
			"always hits; --hit-fraction and --error-fraction choose others by a hash of --seed and the payment,\n"+
			"the same in every run. Point paydispatch at it with\n"+
			"PAYDISPATCH_SCREENING_URL=http://<--http-addr>/v1/screen. Not for production: it has no tokens.")
	var (
		ss       config.ScreenSim
		lg       config.Log
		shutdown time.Duration
	)
	settings := append(config.ScreenSimSettings(&ss), config.LogSettings(&lg)...)
	settings = append(settings, config.ShutdownSetting(&shutdown))
	if err := parse(config.NewSet(fs, env.getenv, settings...), args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: screen-sim takes only flags", fs.Arg(0))}
	}
	sim, err := screening.NewSimulator(ss.SimOptions)
	if err != nil {
		return usageError{err}
	}
	log := newLogger(env, lg)
	url, stop, err := sim.Start(ss.Addr)
	if err != nil {
		return fmt.Errorf("%w (set --http-addr to a free address)", err)
	}
	log.Info("screening simulator listening", "url", url, "delay", ss.Delay, "hit_names", len(ss.Names),
		"hit_fraction", ss.HitFraction, "error_fraction", ss.ErrorFraction, "seed", ss.Seed)
	<-ctx.Done()
	log.Info("screening simulator stopping", "shutdown_timeout", shutdown)
	stop()
	st := sim.Stats()
	log.Info("screening simulator stopped", "calls", st.Calls, "payments", st.Payments, "hits", st.Hits, "errors", st.Errors)
	return nil
}
