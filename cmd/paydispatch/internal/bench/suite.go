package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
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

// List is the headlines collected.
func (f *Figures) List() []Figure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// WriteFile writes the headlines as JSON (what the suite reads back).
func (f *Figures) WriteFile(path string) error {
	data, err := json.Marshal(f.List())
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// SuiteOptions configure `paydispatch bench` over every benchmark.
type SuiteOptions struct {
	// Binary is paydispatch itself: each benchmark runs in a process of
	// its own (`Binary bench NAME --figures-out F ...`), so none inherits
	// another's heap or goroutines.
	Binary   string
	LogLevel string   // the children's --log-level
	Only     []string // benchmarks to run (default: all, in Suite's order)
	Quick    bool     // CI-sized data
	OutFile  string   // where to write the Markdown table ("": none)
	PGBinDir string
	Out      io.Writer
}

// suiteBench is one benchmark of the suite and the arguments of its
// quick and full runs (full: its defaults unless set).
type suiteBench struct {
	name        string
	quick, full []string
}

// Suite is every benchmark, in the order `paydispatch bench` runs them.
var Suite = []suiteBench{
	{"queue", []string{"--rows", "20000", "--small-depth", "2000", "--samples", "50", "--max-duration", "20s"}, nil},
	{"pacing", []string{"--singles", "5000", "--bulk", "20000"}, nil},
	{"saga", []string{"--quick"}, nil},
	{"outbox", []string{"--quick"}, nil},
	{"intake", []string{"--payments", "20000"}, nil},
	// 20,000 at 25/s would take 14 minutes; 3,000 shows the same.
	{"drain", []string{"--payments", "600", "--max-per-window", "40", "--window", "PT1S", "--svg", ""}, []string{"--payments", "3000", "--svg", ""}},
	{"pipeline", []string{"--n", "1000"}, []string{"--n", "20000"}},
	// 300 dead letters at 50 per PT1S: six windows, the path without the wait.
	{"redrive", []string{"--payments", "300"}, nil},
	{"kafka", []string{"--records", "5000", "--events", "1000"}, nil},
}

// SuiteNames lists the benchmarks, comma-separated.
func SuiteNames() string {
	var names []string
	for _, b := range Suite {
		names = append(names, b.name)
	}
	return strings.Join(names, ", ")
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
		err := runChild(ctx, o, b.name, args, figs)
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

// runChild runs one benchmark in a process of its own and reads back its
// headlines.
func runChild(ctx context.Context, o SuiteOptions, name string, args []string, figs *Figures) error {
	dir, err := os.MkdirTemp("", "paydispatch-bench-figures-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "figures.json")
	argv := append([]string{"bench", name, "--figures-out", file}, args...)
	if o.LogLevel != "" {
		argv = append(argv, "--log-level", o.LogLevel)
	}
	if o.PGBinDir != "" {
		argv = append(argv, "--pg-bin-dir", o.PGBinDir)
	}
	cmd := exec.CommandContext(ctx, o.Binary, argv...)
	cmd.Stdout, cmd.Stderr = o.Out, o.Out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench %s: %w", name, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("bench %s: its figures: %w", name, err)
	}
	var list []Figure
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("bench %s: its figures: %w", name, err)
	}
	for _, f := range list {
		figs.add(f)
	}
	return nil
}
