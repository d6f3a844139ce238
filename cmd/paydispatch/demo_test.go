package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs the main job small, end to end on its own private stack:
// every check passes, the report is written, and the data directory is
// removed (or kept with --keep).
func TestDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a private stack")
	}
	dir := t.TempDir()
	// The PostgreSQL server's user must enter the data directory.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(dir, "report.html")
	data := filepath.Join(dir, "data")
	code, out, errOut := runCLI([]string{"demo", "--payments", "300", "--rate", "50", "--at", "12s",
		"--report", report, "--data-dir", data, "--keep"}, nil)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"demo: every check passed", "report: " + report, "paydispatch verify (the ledger check): 0 violations",
		"data directory kept: " + data} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  FAILED  ") {
		t.Errorf("a check failed:\n%s", out)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `class="chart"`); n != 4 {
		t.Errorf("%d charts in the report, want 4", n)
	}
	if _, err := os.Stat(filepath.Join(data, "admin-token")); err != nil {
		t.Errorf("--keep: %v", err)
	}
}
