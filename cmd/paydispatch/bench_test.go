package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/bench"
)

// TestBenchQuick runs every benchmark CI-sized through the one entry
// point: each reports a headline beside its baseline, and the Markdown
// table has a row for each.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every benchmark")
	}
	// Not parallel: the benchmarks measure the machine. The built binary:
	// the suite runs each benchmark in a process of its own.
	out := filepath.Join(t.TempDir(), "results.md")
	output, err := exec.Command(binary(t), "bench", "--quick", "--out", out).CombinedOutput()
	stdout := string(output)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	table, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Split(bench.SuiteNames(), ", ") {
		if !strings.Contains(string(table), "\n| "+name+" | ") {
			t.Errorf("no row for %s in\n%s", name, table)
		}
	}
	for _, want := range []string{"cores", "| ratio |", "CPU stolen"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(string(table), "failed") {
		t.Errorf("a benchmark failed:\n%s", table)
	}
	if !strings.Contains(stdout, "ledger check (paydispatch verify): 0 violations") {
		t.Errorf("no ledger check in the output")
	}
}
