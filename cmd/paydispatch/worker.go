package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/payment"
)

var workerRoles = []string{"init", "exec", "dispatch"}

// runWorker runs some roles of serve in their own process, for scale: as
// many init and exec workers as load needs, against a shared Temporal.
func runWorker(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "worker", "--role init|exec|dispatch[,...] [flags]",
		"Runs the named roles until SIGINT or SIGTERM: init (PaymentPhaseA on payment-init-task-queue),\n"+
			"exec (PaymentExecution on payment-exec-task-queue), dispatch (the dispatcher: its worker and\n"+
			"schedules, or the lease loop with --dispatch-mode=lease). It needs a Temporal cluster that other\n"+
			"processes share (TEMPORAL_ADDRESS: the one serve embeds, 127.0.0.1:7233, or 'paydispatch temporal').")
	var (
		db       config.Database
		tc       config.Temporal
		dm       config.Dispatch
		lg       config.Log
		rt       config.Retention
		sc       config.Screening
		roles    []string
		shutdown time.Duration
	)
	settings := append(config.DatabaseSettings(&db), config.TemporalSettings(&tc)...)
	settings = append(settings, config.DispatchSettings(&dm)...)
	settings = append(settings, config.LogSettings(&lg)...)
	settings = append(settings, config.RetentionSettings(&rt)...)
	settings = append(settings, config.ScreeningSettings(&sc)...)
	settings = append(settings, config.ShutdownSetting(&shutdown))
	settings = append(settings, &config.Setting{Flag: "role", Env: "PAYDISPATCH_WORKER_ROLE", Usage: "roles to run, comma-separated: init, exec, dispatch",
		Parse: func(v string) error {
			roles = nil
			for _, r := range strings.Split(v, ",") {
				r = strings.TrimSpace(r)
				if !slices.Contains(workerRoles, r) {
					return fmt.Errorf("want one or more of init, exec, dispatch, e.g. --role exec")
				}
				if !slices.Contains(roles, r) {
					roles = append(roles, r)
				}
			}
			return nil
		}})
	if err := parse(config.NewSet(fs, env.getenv, settings...), args); err != nil {
		return err
	}
	if tc.Address == "" {
		return usageError{errors.New("worker needs TEMPORAL_ADDRESS (or --temporal-address): a worker of its own embedded Temporal would get no work; run 'paydispatch temporal' (or serve) and point it there, or 'serve' for all roles in one process")}
	}
	log := newLogger(env, lg)
	var started parts
	// A start that failed, or was cut short by SIGTERM; nothing once
	// stopBy ran.
	defer func() { _ = started.stopWithin(shutdown) }()
	store, tconn, err := startRole(ctx, env, "worker", db, tc, log, &started)
	if err != nil {
		return err
	}
	for _, role := range roles {
		var stop func()
		switch role {
		case "init":
			// No metrics registry in a worker: the screening hook's are
			// counted in serve's.
			var controls []payment.Control
			if controls, err = app.ScreeningControls(store, sc, nil, nil, log); err == nil {
				stop, err = app.StartInitWorker(store, tconn, log, app.Options{Controls: controls})
			}
		case "exec":
			stop, err = app.StartExecWorker(store, tconn, log, app.Options{})
		case "dispatch":
			stop, err = app.StartDispatcher(ctx, dm.Mode, store, tconn, log, app.Options{})
		}
		if err != nil {
			return err
		}
		started.add("the "+role+" role", stop)
		// The dispatch role keeps the queue: it runs the retention
		// cleaner too, one round at a time with serve's and the others'.
		if role == "dispatch" {
			stop, err := app.StartRetention(store, rt, nil, log)
			if err != nil {
				return err
			}
			started.add("the retention cleaner", stop)
		}
	}
	log.Info("worker running", "roles", roles)
	<-ctx.Done()
	log.Info("worker stopping", "shutdown_timeout", shutdown)
	return started.stopBy(time.Now().Add(shutdown))
}
