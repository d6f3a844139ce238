package main

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/internal/bench"
	"github.com/paydispatch/paydispatch/internal/config"
)

func runBench(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] != "queue" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(env.stdout, "Usage: paydispatch bench queue [flags]\n\nBenchmarks:\n  queue  claim and dispatch throughput and claim latency of the dispatch queue")
			return nil
		}
		return usageError{fmt.Errorf("name a benchmark: 'paydispatch bench queue'")}
	}
	fs := newFlagSet(env, "bench queue", "[flags]",
		"Loads READY rows into a throw-away database (a fresh private PostgreSQL, or a scratch schema\n"+
			"on DATABASE_URL) and prints claim latency at two queue depths, the claim's EXPLAIN, and\n"+
			"claim + mark-dispatched throughput with concurrent claimers against a bare-UPDATE baseline.")
	var (
		db  config.Database
		lg  config.Log
		opt bench.QueueOptions
	)
	settings := append(config.DatabaseSettings(&db), config.LogSettings(&lg)...)
	set := config.NewSet(fs, env.getenv, append(settings, bench.QueueSettings(&opt)...)...)
	if err := parse(set, args[1:]); err != nil {
		return err
	}
	opt.DatabaseURL, opt.PGBinDir = db.URL, db.PGBinDir
	opt.Out = env.stdout
	opt.Logger = newLogger(env, lg)
	return bench.RunQueue(ctx, opt)
}
