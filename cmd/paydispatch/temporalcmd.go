package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/temporal"
)

// runTemporal runs only the embedded Temporal server, for roles in
// processes of their own (worker, and serve with TEMPORAL_ADDRESS) to
// share, without a cluster to install.
func runTemporal(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "temporal", "[flags]",
		"Runs Temporal's own server, as serve embeds it, until SIGINT or SIGTERM: its frontend on\n"+
			"127.0.0.1:--temporal-port, its store in the data directory (SQLite; or PostgreSQL at\n"+
			"DATABASE_URL with --temporal-store=postgres), and its Web UI on 127.0.0.1:--temporal-ui-port.\n"+
			"Point the other processes' TEMPORAL_ADDRESS at it.")
	var (
		db config.Database
		tc config.Temporal
		lg config.Log
	)
	settings := append(config.DatabaseSettings(&db), config.TemporalSettings(&tc)...)
	if err := parse(config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...), args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: temporal takes only flags", fs.Arg(0))}
	}
	if tc.Address != "" {
		return usageError{errors.New("temporal runs a server, so TEMPORAL_ADDRESS (--temporal-address) must be empty; its port is --temporal-port")}
	}
	log := newLogger(env, lg)
	conn, err := temporal.Connect(ctx, temporal.Options{
		EmbeddedStore: temporal.Store(tc.EmbeddedStore), EmbeddedPostgresURL: db.URL,
		Namespace: tc.Namespace, DataDir: db.DataDir, EmbeddedPort: tc.EmbeddedPort, EmbeddedLogLevel: tc.EmbeddedLogLevel,
		EmbeddedRetention: tc.EmbeddedRetention, EmbeddedUI: embeddedUI(tc), Logger: log,
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	log.Info("Temporal server running; point TEMPORAL_ADDRESS at it", "address", conn.Address, "namespace", conn.Namespace, "store", conn.Store,
		"web_ui", cmp.Or(conn.UIURL, "off"))
	<-ctx.Done()
	log.Info("Temporal server stopping")
	return nil
}
