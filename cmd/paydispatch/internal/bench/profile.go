package bench

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/google/pprof/profile"
)

// components attribute a CPU sample to the first of these whose pattern
// one of its frames matches: the engine's services first (history calls
// its persistence, so SQLite is inside history), then paydispatch's own
// code before the SDK that runs it, then what is left.
var components = []struct {
	name string
	re   *regexp.Regexp
}{
	{"Temporal server: visibility", regexp.MustCompile(`^go\.temporal\.io/server/common/persistence/visibility`)},
	{"Temporal server: history", regexp.MustCompile(`^go\.temporal\.io/server/service/history`)},
	{"Temporal server: matching", regexp.MustCompile(`^go\.temporal\.io/server/service/matching`)},
	{"Temporal server: frontend", regexp.MustCompile(`^go\.temporal\.io/server/service/frontend`)},
	{"Temporal server: other", regexp.MustCompile(`^go\.temporal\.io/server`)},
	{"paydispatch: delivery (outbox, rail, rail simulator)", regexp.MustCompile(`^github\.com/paydispatch/paydispatch/(outbox|rail|railsim)[./]`)},
	{"paydispatch: execution (payment, process, ledger)", regexp.MustCompile(`^github\.com/paydispatch/paydispatch/(payment|process|ledger)[./]`)},
	{"paydispatch: dispatcher, queue, pacing, intake", regexp.MustCompile(`^github\.com/paydispatch/paydispatch/`)},
	{"Temporal SDK (workflow tasks, polling, its client)", regexp.MustCompile(`^go\.temporal\.io/sdk`)},
	{"gRPC transport (not attributed above)", regexp.MustCompile(`^google\.golang\.org/grpc`)},
	{"Go runtime: garbage collector", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge)`)},
}

var sqliteFrame = regexp.MustCompile(`^modernc\.org/sqlite`)

// reportProfile prints where a CPU profile's time went, by component, per
// payment.
func reportProfile(w io.Writer, path string, payments int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return fmt.Errorf("read the CPU profile: %w", err)
	}
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" })
	if cpu < 0 {
		return fmt.Errorf("%s is not a CPU profile", path)
	}
	by := make([]time.Duration, len(components)+1)
	var total, inSQLite time.Duration
	for _, s := range p.Sample {
		d := time.Duration(s.Value[cpu])
		total += d
		at, sqlite := len(components), false
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for i := 0; i < at; i++ {
					if components[i].re.MatchString(line.Function.Name) {
						at = i
						break
					}
				}
				sqlite = sqlite || sqliteFrame.MatchString(line.Function.Name)
			}
		}
		by[at] += d
		if sqlite {
			inSQLite += d
		}
	}
	if total == 0 {
		return nil
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(payments) }
	fmt.Fprintf(w, "\nwhere this process's CPU went (profile %s; a sample counts for the first component one of its frames belongs to):\n", path)
	fmt.Fprintf(w, "  %-54s %8s %8s %6s\n", "component", "CPU s", "ms/pay", "share")
	for i, d := range by {
		name := "other (scheduler, syscalls, net/http, ...)"
		if i < len(components) {
			name = components[i].name
		}
		fmt.Fprintf(w, "  %-54s %8.1f %8.2f %5.0f%%\n", name, d.Seconds(), per(d), 100*d.Seconds()/total.Seconds())
	}
	fmt.Fprintf(w, "  %-54s %8.1f %8.2f\n", "total", total.Seconds(), per(total))
	fmt.Fprintf(w, "  of which in SQLite (the embedded Temporal's store): %.1f s, %.2f ms per payment\n", inSQLite.Seconds(), per(inSQLite))
	return nil
}
