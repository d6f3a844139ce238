package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/paydispatch/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/postgres"
	ptemporal "github.com/paydispatch/paydispatch/temporal"
)

// privateStack is a benchmark's own PostgreSQL and embedded Temporal in a
// temporary directory, migrated, with the bench accounts open and a
// pacing config "payments"; close removes it all.
type privateStack struct {
	db    *postgres.DB
	tc    *ptemporal.Conn
	close func()
}

func openPrivateStack(ctx context.Context, name, pgBin string, log *slog.Logger, topts ptemporal.Options, paced pacing.Config, pgSettings map[string]string) (*privateStack, error) {
	dir, err := os.MkdirTemp("", "paydispatch-bench-"+name+"-")
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(dir, 0o755)
	s := &privateStack{close: func() { os.RemoveAll(dir) }}
	fail := func(err error) (*privateStack, error) { s.close(); return nil, err }
	db, err := postgres.Open(ctx, postgres.Options{DataDir: dir, BinDir: pgBin, MaxConns: 40, ServerSettings: pgSettings, Logger: log})
	if err != nil {
		return fail(err)
	}
	s.db, s.close = db, func() { db.Close(); os.RemoveAll(dir) }
	if _, err := app.Migrate(ctx, db.Pool, nil); err != nil {
		return fail(err)
	}
	if err := openBenchAccounts(ctx, db.Pool); err != nil {
		return fail(err)
	}
	topts.DataDir, topts.Logger, topts.EmbeddedLogLevel = dir, log, "fatal"
	topts.EmbeddedPostgresURL = db.Server.ConnString("postgres")
	tc, err := ptemporal.Connect(ctx, topts)
	if err != nil {
		return fail(err)
	}
	s.tc, s.close = tc, func() { tc.Close(); db.Close(); os.RemoveAll(dir) }
	paced.Name, paced.Headroom = "payments", pacing.DefaultHeadroom
	if _, err := pacing.New(db.Pool).PutConfig(ctx, paced); err != nil {
		return fail(err)
	}
	return s, nil
}

// startCPUProfile profiles this process into path until the returned
// stop is called (stop may be called more than once); "" profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			pprof.StopCPUProfile()
			f.Close()
		}
	}, nil
}
