package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestReportProfile: a sample counts once, for the first component one of
// its frames belongs to (SQLite inside history counts for history, and
// for the SQLite line); our code run by the SDK counts as ours.
func TestReportProfile(t *testing.T) {
	t.Parallel()
	fn := map[string]*profile.Function{}
	var locs uint64
	loc := func(names ...string) []*profile.Location {
		var out []*profile.Location
		for _, n := range names { // innermost first
			if fn[n] == nil {
				fn[n] = &profile.Function{ID: uint64(len(fn) + 1), Name: n}
			}
			locs++
			out = append(out, &profile.Location{ID: locs, Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Value: []int64{1, 3e9}, Location: loc("modernc.org/sqlite/lib._sqlite3VdbeExec", "go.temporal.io/server/common/persistence/sql.(*x).Y", "go.temporal.io/server/service/history.(*h).Z")},
			{Value: []int64{1, 2e9}, Location: loc("github.com/paydispatch/paydispatch/payment.(*ExecActivities).Finish", "go.temporal.io/sdk/internal.(*w).run")},
			{Value: []int64{1, 1e9}, Location: loc("runtime.memmove", "runtime.gcBgMarkWorker")},
			{Value: []int64{1, 1e9}, Location: loc("syscall.Syscall6")},
		},
	}
	for _, f := range fn {
		p.Function = append(p.Function, f)
	}
	for _, s := range p.Sample {
		p.Location = append(p.Location, s.Location...)
	}
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out bytes.Buffer
	if err := reportProfile(&out, path, 1000); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Temporal server: history                                    3.0     3.00    43%",
		"paydispatch: execution (payment, process, ledger)           2.0     2.00    29%",
		"Go runtime: garbage collector                               1.0     1.00    14%",
		"other (scheduler, syscalls, net/http, ...)                  1.0     1.00    14%",
		"total                                                       7.0     7.00",
		"in SQLite (the embedded Temporal's store): 3.0 s, 3.00 ms per payment",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
