package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/railsim"
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

func openPrivateStack(ctx context.Context, name, pgBin string, log *slog.Logger, topts ptemporal.Options, paced pacing.Limit, pgSettings map[string]string) (*privateStack, error) {
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
	if _, err := pacing.New(pacing.Config{Pool: db.Pool}).PutConfig(ctx, paced); err != nil {
		return fail(err)
	}
	return s, nil
}

// heapPeak keeps the heap profile taken when the Go heap's live objects
// were largest (sampled by the caller): what was held at the peak, not
// what is left at the end; and every sample, for their median.
type heapPeak struct {
	path    string
	max     uint64
	samples []uint64
	prof    bytes.Buffer
}

// The live heap as of the last collection: what a collection could not
// free, where /memory/classes/heap/objects also counts the dead not yet
// swept.
var heapObjects = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// sample takes a profile when the heap is a twentieth above its largest
// so far.
func (h *heapPeak) sample() {
	if h.path == "" {
		return
	}
	metrics.Read(heapObjects)
	v := heapObjects[0].Value.Uint64()
	h.samples = append(h.samples, v)
	if v > h.max+h.max/20 {
		h.max = v
		h.prof.Reset()
		_ = pprof.Lookup("heap").WriteTo(&h.prof, 0) // a bytes.Buffer takes every write
	}
}

// write saves the peak's profile and says where, with what the Go
// runtime holds now beside the resident set: the rest of the resident set
// is memory Go does not manage (the embedded Temporal's SQLite allocates
// its own).
func (h *heapPeak) write(w io.Writer) error {
	if h.path == "" {
		return nil
	}
	now := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(now)
	goHeld := now[0].Value.Uint64() - now[1].Value.Uint64()
	fmt.Fprintf(w, "at the end: the Go runtime holds %.0f MiB (%.0f MiB of it live heap); the resident set is %.0f MiB\n",
		float64(goHeld)/(1<<20), float64(now[2].Value.Uint64())/(1<<20), float64(currentRSS())/(1<<20))
	if err := os.WriteFile(h.path, h.prof.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	slices.Sort(h.samples)
	fmt.Fprintf(w, "the Go heap's live objects, sampled every second: median %.0f MiB, peak %.0f MiB (heap profile near the peak: %s)\n",
		float64(h.samples[len(h.samples)/2])/(1<<20), float64(h.samples[len(h.samples)-1])/(1<<20), h.path)
	return nil
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

// startDelivery starts the rest of the full path, as serve runs it: a
// rail simulator on loopback and a relayer taking the bookings' rail
// instructions through the outbox to it. stop stops both.
func startDelivery(ctx context.Context, db *postgres.DB, log *slog.Logger) (stop func(), err error) {
	stop, _, err = startDeliveryTo(ctx, db, log, false)
	return stop, err
}

// startDeliveryTo is startDelivery with the simulator in this process or,
// with apart, in its own (railProcess), returned to read its peak.
func startDeliveryTo(ctx context.Context, db *postgres.DB, log *slog.Logger, apart bool) (stop func(), rail *railProcess, err error) {
	var railURL string
	var stopRail func()
	if apart {
		if rail, err = startRailProcess(ctx); err != nil {
			return nil, nil, err
		}
		railURL, stopRail = rail.url, rail.stop
	} else if railURL, stopRail, err = app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{}, log); err != nil {
		return nil, nil, err
	}
	stopRelay, err := app.StartRelayer(ctx, db, app.RelayConfig{RailURL: railURL}, payment.OutboxHooks(), nil, log)
	if err != nil {
		stopRail()
		return nil, nil, err
	}
	return func() { stopRelay(); stopRail() }, rail, nil
}
