package bench

import (
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"

	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/pacing"
)

// PacingOptions configure the slot assignment benchmark.
type PacingOptions struct {
	Env

	Clients      int // concurrent single assigners
	Singles      int // single assignments in all
	Bulk         int // events of the bulk run
	MaxPerWindow int
	Window       time.Duration
	Ephemeral    bool // fsync off: separates CPU from disk flushes
}

// PacingSettings binds the benchmark's flags.
func PacingSettings(o *PacingOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("clients", 64, 1, 1024, "concurrent clients of the single-assignment run", &o.Clients),
		config.Int("singles", 50_000, 100, 10_000_000, "single assignments, all for one instant", &o.Singles),
		config.Int("bulk", 500_000, 0, 10_000_000, "events of the bulk run, all for one instant (0: skip)", &o.Bulk),
		config.Int("max-per-window", 100, 1, 1_000_000, "the config's events per window", &o.MaxPerWindow),
		config.Bool("ephemeral", "run the private server without fsync (shows what is CPU and what is disk)", &o.Ephemeral),
		isoFlag("window", "PT4S", time.Millisecond, "the config's window (ISO-8601)", &o.Window),
	}
}

// RunPacing measures single assignments with concurrent clients against a
// bare single-row INSERT baseline from the same clients, then one bulk
// assignment of many events for one instant, and checks the windows.
func RunPacing(ctx context.Context, o PacingOptions) error {
	pool, where, cleanup, err := benchDatabase(ctx, dbOptions{URL: o.DatabaseURL, BinDir: o.PGBinDir, Logger: o.Logger, Ephemeral: o.Ephemeral, MaxConns: int32(o.Clients + 4)})
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := app.Migrate(ctx, pool, nil); err != nil {
		return err
	}
	var version, fsync string
	_ = pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync')`).Scan(&version, &fsync)
	fmt.Fprintf(o.Out, "paydispatch bench pacing: %d CPUs, %s, PostgreSQL %s (%s, fsync=%s); config %d per %s\n",
		runtime.NumCPU(), memTotal(), version, where, fsync, o.MaxPerWindow, pacing.FormatISODuration(o.Window))
	l := pacing.New(pacing.Config{Pool: pool})
	for _, name := range []string{"singles", "bulk"} {
		if _, err := l.PutConfig(ctx, pacing.Limit{Name: name, MaxPerWindow: o.MaxPerWindow, Window: o.Window, Headroom: pacing.DefaultHeadroom}); err != nil {
			return err
		}
	}
	instant := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)

	// Baseline: the same clients, each a one-row INSERT per round trip.
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_baseline (id text PRIMARY KEY, at timestamptz NOT NULL)`); err != nil {
		return err
	}
	base, err := concurrently(ctx, o.Clients, o.Singles, func(ctx context.Context, i int) error {
		_, err := pool.Exec(ctx, `INSERT INTO bench_baseline VALUES ($1, $2)`, "b-"+strconv.Itoa(i), instant)
		return err
	})
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	single, err := concurrently(ctx, o.Clients, o.Singles, func(ctx context.Context, i int) error {
		_, err := l.Assign(ctx, "singles", "s-"+strconv.Itoa(i), instant)
		return err
	})
	if err != nil {
		return fmt.Errorf("single assignments: %w", err)
	}
	fmt.Fprintf(o.Out, "\nsingle assignments, %d clients, %s events for one instant:\n", o.Clients, thousands(o.Singles))
	fmt.Fprintf(o.Out, "  baseline, one-row INSERT per round trip: %8.0f /s\n", base)
	fmt.Fprintf(o.Out, "  slot assignment:                         %8.0f /s  (%.2f × baseline)\n", single, quotient(single, base))
	fmt.Fprintf(o.Out, "  target ≥ 5,000 assignments/s: %s\n", verdict(single >= 5000))
	o.Figures.add(Figure{What: "single slot assignments", Value: single, Unit: "/s",
		Baseline: "one-row INSERT per round trip", BaseVal: base, BaseUnit: "/s"})
	if err := checkPacingWindows(ctx, o.Out, l, "singles", o.Singles, o.MaxPerWindow); err != nil {
		return err
	}

	if o.Bulk > 0 {
		events := make([]pacing.Event, o.Bulk)
		for i := range events {
			events[i] = pacing.Event{ID: "k-" + strconv.Itoa(i), RequestedTime: instant}
		}
		started := time.Now()
		slots, err := l.AssignBulk(ctx, "bulk", events)
		if err != nil {
			return fmt.Errorf("bulk: %w", err)
		}
		took := time.Since(started)
		exhausted := 0
		for _, s := range slots {
			if s.Status != pacing.StatusNew {
				exhausted++
			}
		}
		fmt.Fprintf(o.Out, "\nbulk: %s events for one instant in %.2f s (%.0f /s, %d round trips of %d); not NEW: %d\n",
			thousands(o.Bulk), took.Seconds(), float64(o.Bulk)/took.Seconds(), (o.Bulk+4999)/5000, 5000, exhausted)
		fmt.Fprintf(o.Out, "  target ≤ 10 s for 500,000: %s\n", verdict(o.Bulk < 500_000 || took <= 10*time.Second))
		if err := checkPacingWindows(ctx, o.Out, l, "bulk", o.Bulk, o.MaxPerWindow); err != nil {
			return err
		}
	}
	return nil
}

// concurrently runs n calls of f over clients goroutines and returns calls/s.
func concurrently(ctx context.Context, clients, n int, f func(context.Context, int) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	started := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// checkPacingWindows prints whether every window kept its limit and its
// counter matches its slots.
func checkPacingWindows(ctx context.Context, out io.Writer, l *pacing.Limiter, name string, events, max int) error {
	ws, err := l.Windows(ctx, name)
	if err != nil {
		return err
	}
	c := countPacingWindows(ws, max)
	fmt.Fprintf(out, "  check: %d windows used, %d slots for %s events, windows over the limit %d, counters off %d: %s\n",
		c.used, c.slots, thousands(events), c.over, c.mismatched, verdict(c.ok(events)))
	return nil
}

// pacingWindows is what a config's windows hold after the assignments.
type pacingWindows struct {
	used, slots, over, mismatched int
}

// countPacingWindows counts the windows with slots, the slots, the
// windows whose counter is over limit and those whose counter is not
// their number of slots.
func countPacingWindows(ws []pacing.WindowCount, limit int) pacingWindows {
	var c pacingWindows
	for _, w := range ws {
		if w.Counter > limit {
			c.over++
		}
		if w.Counter != w.Slots {
			c.mismatched++
		}
		c.slots += w.Slots
		if w.Slots > 0 {
			c.used++
		}
	}
	return c
}

// ok is every event given a slot, no window over, every counter right.
func (c pacingWindows) ok(events int) bool {
	return c.over == 0 && c.mismatched == 0 && c.slots == events
}
