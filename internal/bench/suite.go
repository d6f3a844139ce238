package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paydispatch/paydispatch/internal/config"
)

// Figure is a benchmark's headline: what it measured beside the baseline
// it measured in the same run (or, for a drain, the rate it was asked
// for).
type Figure struct {
	What     string  // e.g. "claim + mark dispatched"
	Value    float64 // in Unit
	Unit     string  // e.g. "items/s"
	Baseline string  // what the baseline is
	BaseVal  float64 // in BaseUnit
	BaseUnit string
	// Ratio is Value / BaseVal unless set (e.g. a time, where less is better).
	Ratio float64
}

// Figures collects the headlines of a run; a nil *Figures drops them.
type Figures struct {
	mu   sync.Mutex
	list []Figure
}

func (f *Figures) add(fig Figure) {
	if f == nil {
		return
	}
	if fig.Ratio == 0 && fig.BaseVal != 0 {
		fig.Ratio = fig.Value / fig.BaseVal
	}
	f.mu.Lock()
	f.list = append(f.list, fig)
	f.mu.Unlock()
}

// SuiteOptions configure `paydispatch bench` over every benchmark.
type SuiteOptions struct {
	Only     []string // benchmarks to run (default: all, in Suite's order)
	Quick    bool     // CI-sized data
	OutFile  string   // where to write the Markdown table ("": none)
	PGBinDir string
	Out      io.Writer
	Logger   *slog.Logger
}

// suiteBench is one benchmark of the suite: the arguments of its quick
// and full runs (full: its defaults unless set), and how it runs.
type suiteBench struct {
	name  string
	quick []string
	run   func(ctx context.Context, args []string, o SuiteOptions, figs *Figures) error
	full  []string
}

// Suite is every benchmark, in the order `paydispatch bench` runs them.
var Suite = []suiteBench{
	{"queue", []string{"--rows", "20000", "--small-depth", "2000", "--samples", "50", "--max-duration", "20s"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o QueueOptions
			if err := parseDefaults(args, QueueSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunQueue(ctx, o)
		}, nil},
	{"pacing", []string{"--singles", "5000", "--bulk", "20000"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o PacingOptions
			if err := parseDefaults(args, PacingSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunPacing(ctx, o)
		}, nil},
	{"saga", []string{"--quick"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o SagaOptions
			if err := parseDefaults(args, SagaSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunSaga(ctx, o)
		}, nil},
	{"outbox", []string{"--quick"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o OutboxOptions
			if err := parseDefaults(args, OutboxSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunOutbox(ctx, o)
		}, nil},
	{"intake", []string{"--payments", "20000"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o IntakeOptions
			if err := parseDefaults(args, IntakeSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunIntake(ctx, o)
		}, nil},
	{"drain", []string{"--payments", "600", "--max-per-window", "40", "--window", "PT1S", "--svg", ""},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o DrainOptions
			if err := parseDefaults(append([]string{"--svg", ""}, args...), DrainSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunDrain(ctx, o)
		},
		// 20,000 at 25/s would take 14 minutes; 3,000 shows the same.
		[]string{"--payments", "3000"}},
	{"pipeline", []string{"--n", "1000"},
		func(ctx context.Context, args []string, s SuiteOptions, figs *Figures) error {
			var o PipelineOptions
			if err := parseDefaults(args, PipelineSettings(&o)); err != nil {
				return err
			}
			o.PGBinDir, o.Out, o.Logger, o.Figures = s.PGBinDir, s.Out, s.Logger, figs
			return RunPipeline(ctx, o)
		},
		[]string{"--n", "20000"}},
}

// SuiteNames lists the benchmarks, comma-separated.
func SuiteNames() string {
	var names []string
	for _, b := range Suite {
		names = append(names, b.name)
	}
	return strings.Join(names, ", ")
}

// parseDefaults binds settings to their defaults, then args.
func parseDefaults(args []string, settings []*config.Setting) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return config.NewSet(fs, func(string) string { return "" }, settings...).Parse(args)
}

// suiteRow is one line of the suite's table.
type suiteRow struct {
	bench string
	fig   Figure
	steal float64 // -1: unknown
	took  time.Duration
	err   error
}

// RunSuite runs the selected benchmarks one after the other, then prints
// their headlines as one table (and writes it as Markdown to OutFile).
func RunSuite(ctx context.Context, o SuiteOptions) error {
	for _, name := range o.Only {
		if !slices.ContainsFunc(Suite, func(b suiteBench) bool { return b.name == name }) {
			return fmt.Errorf("unknown benchmark %q: want some of %s", name, SuiteNames())
		}
	}
	size := "full"
	if o.Quick {
		size = "quick (CI-sized)"
	}
	fmt.Fprintf(o.Out, "paydispatch bench: %d CPUs, %s; %s runs\n", runtime.NumCPU(), memTotal(), size)
	var rows []suiteRow
	failed := 0
	for _, b := range Suite {
		if len(o.Only) > 0 && !slices.Contains(o.Only, b.name) {
			continue
		}
		args := b.full
		if o.Quick {
			args = b.quick
		}
		fmt.Fprintf(o.Out, "\n=== bench %s %s\n", b.name, strings.Join(args, " "))
		figs := &Figures{}
		cpu0, cpuOK := readCPU()
		start := time.Now()
		err := b.run(ctx, args, o, figs)
		steal := -1.0
		if st, ok := stolenSince(cpu0); cpuOK && ok {
			steal = st
		}
		if err != nil {
			failed++
			fmt.Fprintf(o.Out, "bench %s failed: %v\n", b.name, err)
			rows = append(rows, suiteRow{bench: b.name, steal: steal, took: time.Since(start), err: err})
			continue
		}
		if len(figs.list) == 0 {
			rows = append(rows, suiteRow{bench: b.name, steal: steal, took: time.Since(start), err: fmt.Errorf("reported no figure")})
			failed++
		}
		for _, f := range figs.list {
			rows = append(rows, suiteRow{bench: b.name, fig: f, steal: steal, took: time.Since(start)})
		}
	}
	table := suiteTable(rows, runtime.NumCPU(), o.Quick)
	fmt.Fprintf(o.Out, "\n%s", table)
	if o.OutFile != "" {
		if err := os.WriteFile(o.OutFile, []byte(table), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(o.Out, "\nwritten to %s\n", o.OutFile)
	}
	if failed > 0 {
		return fmt.Errorf("%d of the benchmarks failed", failed)
	}
	return nil
}

// suiteTable is the headlines as a Markdown table.
func suiteTable(rows []suiteRow, cores int, quick bool) string {
	var b strings.Builder
	size := "full"
	if quick {
		size = "quick"
	}
	fmt.Fprintf(&b, "Machine: %d cores, %s; %s runs; %s.\n\n", cores, memTotal(), size, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString("| bench | measured | baseline (same run) | ratio | CPU stolen | took |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		steal := "unknown"
		if r.steal >= 0 {
			steal = fmt.Sprintf("%.0f %%", r.steal*100)
		}
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | failed: %s | | | %s | %.0f s |\n", r.bench, strings.ReplaceAll(r.err.Error(), "|", "/"), steal, r.took.Seconds())
			continue
		}
		f := r.fig
		fmt.Fprintf(&b, "| %s | %s: %s %s | %s: %s %s | %.3g × | %s | %.0f s |\n", r.bench, f.What, figureNum(f.Value), f.Unit,
			f.Baseline, figureNum(f.BaseVal), f.BaseUnit, f.Ratio, steal, r.took.Seconds())
	}
	return b.String()
}

func figureNum(v float64) string {
	if v >= 1000 {
		return thousands(int(v + 0.5))
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
