package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
	"github.com/paydispatch/paydispatch/railsim"
)

// Options say what a run does.
type Options struct {
	Binary   string // the paydispatch binary whose roles run as processes
	Dir      string // a new directory for the stack's data and logs
	PGBinDir string

	Payments int
	Rate     int // executions a second the pacing allows
	// ExecMode is payments' exec_mode for the run (empty: as configured).
	ExecMode string
	Seed     uint64

	KillEvery      time.Duration // mean pause between two kills
	MinKills       int           // fewer kills fail the run
	TemporalOutage time.Duration
	Stretch        time.Duration // how long each rail fault, the kill switch and the rate cut last
	MaxWait        time.Duration // give up this long after the instant

	Out io.Writer
	Log *slog.Logger // the suite's own log (faults, restarts)
}

// Result is one run's outcome.
type Result struct {
	Seed     uint64
	Checks   []demo.Check
	Faults   []injected
	Restarts map[string]int // exits of each process nobody asked for
	Report   string
	Took     time.Duration
}

// Passed reports whether every check passed.
func (r Result) Passed() bool {
	if len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Run starts the stack, runs the demo's payments through it while the
// faults are injected, verifies and prints the tables.
func Run(ctx context.Context, o Options) (Result, error) {
	started := time.Now()
	res := Result{Seed: o.Seed}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	token, err := auth.NewSecret()
	if err != nil {
		return res, err
	}
	base := railsim.Behaviour{TerminalFraction: 0.01, Seed: o.Seed}
	fmt.Fprintf(o.Out, "chaos: seed %d; starting PostgreSQL, the Temporal server, the rail simulator, a Kafka-protocol cluster and 13 role processes in %s\n", o.Seed, o.Dir)
	s, err := startStack(ctx, o.Binary, o.Dir, o.PGBinDir, base, token, o.Log)
	if err != nil {
		return res, err
	}
	defer s.close()
	fmt.Fprintf(o.Out, "stack up in %.1f s: API http://%s, Temporal %s, rail %s; logs in %s\n",
		time.Since(started).Seconds(), s.apiAddr, s.temporalAddr, s.railURL, filepath.Join(o.Dir, "logs"))

	in := &injector{s: s, o: o, base: base, stop: ctx}
	res.Report = filepath.Join(o.Dir, "report.html")
	dr, err := demo.Run(ctx, demo.Options{
		Payments: o.Payments, Rate: o.Rate, Seed: o.Seed, ExecMode: o.ExecMode, MaxWait: o.MaxWait, At: 20 * time.Second,
		API: "http://" + s.apiAddr, AdminToken: token, Pool: s.pool, RailURL: s.railURL, ReportPath: res.Report,
		Out: o.Out, Disrupt: in.run,
		Kafka: &demo.KafkaOptions{Brokers: s.kafka.Brokers(), Topic: KafkaTopic, EventsTopic: KafkaEventsTopic, Late: true},
		MoreChecks: func(ctx context.Context) []demo.Check {
			return append(checks(ctx, s.pool, s.temporalAddr, o, in.faults()), kafkaCheck(ctx, s.pool, s.kafka.Brokers()))
		},
	})
	res.Checks, res.Faults, res.Took = dr.Checks, in.faults(), time.Since(started)
	writeTimeline(filepath.Join(o.Dir, "faults.txt"), res.Faults)
	res.Restarts = map[string]int{}
	for _, p := range s.list() {
		p.mu.Lock()
		if p.ownExits > 0 {
			res.Restarts[p.name] = p.ownExits
		}
		p.mu.Unlock()
	}
	if err != nil {
		return res, err
	}
	PrintTables(o.Out, []Result{res})
	return res, nil
}

// writeTimeline leaves each fault's time in the run's directory, to read
// beside the processes' logs when a run fails.
func writeTimeline(path string, faults []injected) {
	var b strings.Builder
	for _, f := range faults {
		fmt.Fprintf(&b, "%s\tinstant%+.1fs\ttook %.1fs\t%s\t%s", f.when.UTC().Format("15:04:05.000"), f.at.Seconds(), f.took.Seconds(), f.kind, f.detail)
		if f.err != nil {
			fmt.Fprintf(&b, "\terror: %v", f.err)
		}
		b.WriteString("\n")
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}

// PrintTables prints the faults injected and the invariants checked over
// one or more runs.
func PrintTables(w io.Writer, runs []Result) {
	count := map[string]int{}
	first := map[string]string{} // each fault's detail, as first injected
	killed := map[string]int{}   // kills by process
	restarts := map[string]int{}
	var seeds []string
	for _, r := range runs {
		seeds = append(seeds, fmt.Sprint(r.Seed))
		for _, f := range r.Faults {
			count[f.kind]++
			if f.kind == faultKill {
				killed[f.detail]++
			} else if _, ok := first[f.kind]; !ok {
				first[f.kind] = f.detail
			}
		}
		for p, n := range r.Restarts {
			restarts[p] += n
		}
	}
	first[faultKill] = byName(killed)
	fmt.Fprintf(w, "\nfaults injected (seed %s):\n", strings.Join(seeds, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  fault\tcount\tdetail")
	for _, k := range faultKinds {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, count[k], first[k])
	}
	tw.Flush()
	if len(restarts) > 0 {
		fmt.Fprintf(w, "processes that exited on their own and were started again: %s\n", byName(restarts))
	}
	fmt.Fprintf(w, "\ninvariants checked:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tinvariant\truns passed\tdetail (last run)")
	names := []string{}
	passed := map[string]int{}
	last := map[string]demo.Check{}
	for _, r := range runs {
		for _, c := range r.Checks {
			if _, ok := last[c.Name]; !ok {
				names = append(names, c.Name)
			}
			last[c.Name] = c
			if c.OK {
				passed[c.Name]++
			}
		}
	}
	for _, n := range names {
		mark := "ok"
		if passed[n] < len(runs) {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%s\n", mark, n, passed[n], len(runs), last[n].Detail)
	}
	tw.Flush()
}

// byName lists counts by name: "exec-1 ×2, serve ×1".
func byName(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for name, n := range counts {
		parts = append(parts, fmt.Sprintf("%s ×%d", name, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// NewDir makes a new directory for a run under parent (the temporary
// directory when empty), open to the PostgreSQL server's user.
func NewDir(parent string) (string, error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", err
		}
	}
	d, err := os.MkdirTemp(parent, "paydispatch-chaos-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(d)
}

// ErrFailed is returned when a check failed.
var ErrFailed = errors.New("chaos: an invariant failed (see the table above)")
