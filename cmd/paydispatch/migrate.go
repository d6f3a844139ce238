package main

import (
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"

	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/schema"
)

func runMigrate(ctx context.Context, env *environment, args []string) error {
	action := "up"
	if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
		action, args = args[0], args[1:]
	}
	fs := newFlagSet(env, "migrate", "[up|status] [flags]",
		"up (the default) applies every pending migration under a database lock, so concurrent runs are safe;\n"+
			"running it again applies nothing. status lists the migrations and whether each is applied.")
	var (
		db config.Database
		lg config.Log
	)
	set := config.NewSet(fs, env.getenv, append(config.DatabaseSettings(&db), config.LogSettings(&lg)...)...)
	if err := parse(set, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: want up or status", fs.Arg(0))}
	}
	log := newLogger(env, lg)
	store, err := openDatabase(ctx, db, log)
	if err != nil {
		return err
	}
	defer store.Close()
	m, err := schema.NewMigrator(store.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()

	if action == "status" {
		migrations, scripts, err := m.Status(ctx)
		if err != nil {
			return err
		}
		for _, s := range migrations {
			state := "pending"
			if s.Applied {
				state = "applied"
			}
			fmt.Fprintf(env.stdout, "%05d  %-8s %s\n", s.Version, state, s.Name)
		}
		for _, s := range scripts {
			state := "changed"
			if s.Current {
				state = "current"
			}
			fmt.Fprintf(env.stdout, "script %-8s %s\n", state, s.Name)
		}
		return nil
	}
	applied, err := app.Migrate(ctx, store.Pool, nil)
	if err != nil {
		return err
	}
	for _, s := range applied.Migrations {
		fmt.Fprintf(env.stdout, "applied %05d %s\n", s.Version, s.Name)
	}
	for _, name := range applied.Scripts {
		fmt.Fprintf(env.stdout, "applied script %s\n", name)
	}
	if applied.Empty() {
		fmt.Fprintf(env.stdout, "schema is up to date (version %d); nothing applied\n", m.Latest())
	}
	return nil
}
