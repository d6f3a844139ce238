package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/demo"
)

// TestDemo runs the main job small, end to end on its own private stack:
// every check passes (a share cancelled before the instant, every
// payment's webhooks complete and in order among them; on the two rails,
// nothing sent after a cut-off, the end of acme's file rolled and of
// cobalt's held by their tenants' rules, each file's projection right;
// acme's treasury payment waited for a second principal and ran at the
// instant, cobalt's file and one of its lines sent again were caught),
// the report is written with its rails, and the data directory is
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
		"data directory kept: " + data, "payments before the instant (one ordinary payment in fifty)",
		"ok      the payments cancelled before the instant ended CANCELLED", "ok      webhooks: every payment's events delivered",
		"rail SEPA on the simulator", "rail URGENT on the simulator", "acme's file on SEPA, projected at intake",
		"ok      nothing reached a rail after its cut-off: SEPA: ", "ok      payments past the cut-off met their tenant's rule",
		"acme ", "(ROLL)", "cobalt ", "(HOLD)", "ok      the projection at intake was right within a few seconds",
		"ROLLED past its rail's cut-off to ", "HELD     ",
		"controls: acme's payments of 20000.00 or more sent alone need an approval", "its submitter's approval refused (403 own-payment)",
		"ok      four eyes: acme's treasury payment waited for a second principal, then executed at its instant",
		"duplicates: cobalt's file sent again: 409", "ok      duplicates: cobalt's file sent again refused",
		"DUPLICATE: a suspected duplicate"} {
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
	for _, want := range []string{`<tr data-rail="SEPA">`, `<tr data-rail="URGENT">`, `<table id="projection">`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "admin-token")); err != nil {
		t.Errorf("--keep: %v", err)
	}
	// The engine's store holds no creditor's name or IBAN: its workflows
	// are given keys, and read the rest from PostgreSQL.
	scanned := 0
	err = filepath.WalkDir(filepath.Join(data, "temporal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned += len(raw)
		for _, personal := range demo.PersonalData() {
			if bytes.Contains(raw, []byte(personal)) {
				t.Errorf("the workflow engine's store (%s) holds %q", path, personal)
			}
		}
		return nil
	})
	if err != nil || scanned < 1<<20 {
		t.Fatalf("scanned %d bytes of the engine's store: %v", scanned, err)
	}
}
