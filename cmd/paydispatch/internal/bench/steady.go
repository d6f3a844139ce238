package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/postgres"
)

// SteadyOptions are the drain's steady-state settings: the database's
// retention cleaner during the run, and when the tables' sizes are
// sampled.
type SteadyOptions struct {
	// DBRetention, when set, is every PAYDISPATCH_RETENTION_* for the run,
	// and the cleaner runs as serve runs it (0: no cleaner).
	DBRetention time.Duration
	// CleanerInterval is the time between the cleaner's rounds.
	CleanerInterval time.Duration
	// SizesAfter is how many payments are done when the tables' sizes
	// are first sampled (0: a quarter of the payments).
	SizesAfter int
}

// DrainSettings binds the benchmark's flags.
func DrainSettings(o *DrainOptions) []*config.Setting {
	return append(drainSettings(o), steadySettings(&o.Steady)...)
}

func steadySettings(o *SteadyOptions) []*config.Setting {
	return []*config.Setting{
		{Flag: "db-retention", Usage: "every PAYDISPATCH_RETENTION_* for the run, e.g. 2m (from 10s, below serve's 1m: at 1,000/s a quarter of 200,000 payments takes 50 s), and the retention cleaner runs during the drain as serve runs it, so history is deleted as at steady state (default: no cleaner, nothing deleted)",
			Parse: func(v string) error {
				if v == "" {
					o.DBRetention = 0
					return nil
				}
				d, err := time.ParseDuration(v)
				if err != nil || d < minDBRetention {
					return fmt.Errorf("want a duration of at least %v, e.g. 2m", minDBRetention)
				}
				o.DBRetention = d
				return nil
			}},
		config.Duration("db-retention-interval", "15s", time.Second, "the time between the retention cleaner's rounds with --db-retention (PAYDISPATCH_RETENTION_INTERVAL)", &o.CleanerInterval),
		config.Int("sizes-after", 0, 0, 1_000_000, "sample the tables' sizes once this many payments are done, and again at the end (0: a quarter of --payments)", &o.SizesAfter),
	}
}

// minDBRetention is the shortest --db-retention: the history of a few
// seconds of payments, enough to keep what the cleaner's guards need
// (an open process, a pending instruction are never deleted anyway).
const minDBRetention = 10 * time.Second

// heldAtSteady is how many payments' history the tables hold once the
// cleaner keeps up: a row lives its retention and up to a round's
// interval more. The first sample compares with the end only from there.
func heldAtSteady(retention, interval time.Duration, rate float64) int {
	return int(math.Ceil((retention + interval).Seconds() * rate))
}

// sizesAfter is when the first sample is taken, in payments done: the
// flag, or a quarter of the payments (at least one).
func sizesAfter(payments, flag int) (int, error) {
	if flag > payments {
		return 0, fmt.Errorf("--sizes-after %d: more than the %d payments", flag, payments)
	}
	if flag > 0 {
		return flag, nil
	}
	return max(payments/4, 1), nil
}

// sizesDue is when the first n payments should have been executed at
// rate a second from the instant: the first sample's count of the
// payments is not run before then, as counting them each second would
// cost PostgreSQL a scan of the table each second.
func sizesDue(instant time.Time, n int, rate float64) time.Time {
	return instant.Add(time.Duration(float64(n) / rate * float64(time.Second)))
}

// tableSizes is each table's size on disk (heap, indexes, TOAST), a
// partitioned table's its partitions' together under its name.
type tableSizes map[string]int64

func readTableSizes(ctx context.Context, pool *pgxpool.Pool) (tableSizes, error) {
	rows, err := pool.Query(ctx, `SELECT root.relname::text, sum(pg_total_relation_size(c.oid))::bigint
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class root ON root.oid = coalesce(pg_partition_root(c.oid), c.oid)
		WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY(current_schemas(false))
		GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("bench: table sizes: %w", err)
	}
	defer rows.Close()
	s := tableSizes{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		s[name] = n
	}
	return s, rows.Err()
}

// tableGrowth is one table's size at the two samples.
type tableGrowth struct {
	Table      string
	First, End int64
}

// sizeComparison is the two samples, the money records apart from the
// rest.
type sizeComparison struct {
	Money, NonMoney tableGrowth // totals, Table empty
	// Tables are the tables that are not money records, the largest at
	// the end first.
	Tables []tableGrowth
}

// compareSizes splits the samples by money: a table in money is a money
// record; every other one (history, working state, configuration) is
// what retention keeps flat. A table in one sample only counts 0 in the
// other.
func compareSizes(first, end tableSizes, money []string) sizeComparison {
	var c sizeComparison
	names := map[string]bool{}
	for t := range first {
		names[t] = true
	}
	for t := range end {
		names[t] = true
	}
	for t := range names {
		g := tableGrowth{Table: t, First: first[t], End: end[t]}
		if slices.Contains(money, t) {
			c.Money.First += g.First
			c.Money.End += g.End
			continue
		}
		c.NonMoney.First += g.First
		c.NonMoney.End += g.End
		c.Tables = append(c.Tables, g)
	}
	slices.SortFunc(c.Tables, func(a, b tableGrowth) int {
		return cmp.Or(cmp.Compare(b.End, a.End), cmp.Compare(a.Table, b.Table))
	})
	return c
}

// ratio is the end's size over the first's (+Inf from nothing, 1 for
// nothing to nothing).
func (g tableGrowth) ratio() float64 {
	switch {
	case g.First == 0 && g.End == 0:
		return 1
	case g.First == 0:
		return math.Inf(1)
	}
	return float64(g.End) / float64(g.First)
}

// flat is the steady-state target: the end within 20 % of the first
// sample.
func (g tableGrowth) flat() bool { r := g.ratio(); return r >= 0.8 && r <= 1.2 }

func (g tableGrowth) ratioText() string {
	if r := g.ratio(); !math.IsInf(r, 1) {
		return fmt.Sprintf("%.2f×", r)
	}
	return "new"
}

// steadyRun samples the sizes during a drain and runs the cleaner.
type steadyRun struct {
	o           SteadyOptions
	after       int
	due         time.Time
	first, end  tableSizes
	firstAt     time.Duration
	reg         *prometheus.Registry
	stopCleaner func()
}

// startSteady starts the cleaner when --db-retention asks for it, as
// serve starts it, with its metrics on a registry of the run's own.
func startSteady(o DrainOptions, rate float64, db *postgres.DB, log *slog.Logger) (*steadyRun, error) {
	after, err := sizesAfter(o.Payments, o.Steady.SizesAfter)
	if err != nil {
		return nil, err
	}
	s := &steadyRun{o: o.Steady, after: after, stopCleaner: func() {}}
	if o.Steady.DBRetention == 0 {
		fmt.Fprintf(o.Out, "database retention: no cleaner during the drain (--db-retention), nothing deleted\n")
		return s, nil
	}
	d := o.Steady.DBRetention
	s.reg = prometheus.NewRegistry()
	s.stopCleaner, err = app.StartRetention(db, config.Retention{QueueCompleted: d, DispatchAudit: d, ProcessEnded: d, OutboxDone: d,
		Pacing: d, WebhookDelivered: d, PaymentNotifications: d, Interval: o.Steady.CleanerInterval}, s.reg, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "database retention: every table's history kept %v, the cleaner's rounds every %v\n", d, o.Steady.CleanerInterval)
	if held := heldAtSteady(d, o.Steady.CleanerInterval, rate); after < held {
		fmt.Fprintf(o.Out, "  the tables hold up to %s payments' history at steady state: the first sample, after %s, comes before it and the end will be larger (--sizes-after, --db-retention)\n",
			thousands(held), thousands(after))
	}
	return s, nil
}

// poll takes the first sample once the first payments are done: counted
// (by done, the drain's own: not a history's) no earlier than they are
// due, then each call until they are.
func (s *steadyRun) poll(ctx context.Context, pool *pgxpool.Pool, instant time.Time, rate float64, done func(context.Context) (int, error)) error {
	if s.first != nil {
		return nil
	}
	if s.due.IsZero() {
		s.due = sizesDue(instant, s.after, rate)
	}
	if time.Now().Before(s.due) {
		return nil
	}
	n, err := done(ctx)
	if err != nil {
		return err
	}
	if n < s.after {
		return nil
	}
	first, err := readTableSizes(ctx, pool)
	if err != nil {
		return err
	}
	s.first, s.firstAt = first, time.Since(instant)
	return nil
}

// finish takes the last sample and stops the cleaner, so what the drain
// reports afterwards reads the rows as they were at the end.
func (s *steadyRun) finish(ctx context.Context, pool *pgxpool.Pool) error {
	s.stopCleaner()
	end, err := readTableSizes(ctx, pool)
	if err != nil {
		return err
	}
	s.end = end
	return nil
}

// report prints the two samples and what the cleaner deleted.
func (s *steadyRun) report(w io.Writer) error {
	if s.first == nil {
		fmt.Fprintf(w, "\ntables' sizes: the first %s payments were not done before the end; no sample\n", thousands(s.after))
		return nil
	}
	c := compareSizes(s.first, s.end, app.MoneyTables)
	fmt.Fprintf(w, "\ntables' sizes on disk (heap, indexes, TOAST) after the first %s payments (%+.0f s) and at the end:\n", thousands(s.after), s.firstAt.Seconds())
	fmt.Fprintf(w, "  tables not money records (history, working state, configuration): %s → %s, %s (within 20 %%: %s)\n",
		mib(c.NonMoney.First), mib(c.NonMoney.End), c.NonMoney.ratioText(), verdict(c.NonMoney.flat()))
	fmt.Fprintf(w, "  money records (%s): %s → %s, %s\n", strings.Join(app.MoneyTables, ", "), mib(c.Money.First), mib(c.Money.End), c.Money.ratioText())
	fmt.Fprintf(w, "  %-34s %12s %12s %7s\n", "the largest not money records", "first", "end", "ratio")
	for i, g := range c.Tables {
		if i == 12 {
			fmt.Fprintf(w, "  … %d more tables, %s at the end\n", len(c.Tables)-i, mib(sumEnd(c.Tables[i:])))
			break
		}
		fmt.Fprintf(w, "  %-34s %12s %12s %7s\n", g.Table, mib(g.First), mib(g.End), g.ratioText())
	}
	if s.reg == nil {
		return nil
	}
	deleted, err := counterByTable(s.reg, "paydispatch_retention_deleted_rows_total")
	if err != nil {
		return err
	}
	failed, err := counterByTable(s.reg, "paydispatch_retention_errors_total")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the retention cleaner deleted (rows; a process's log, inbox and attention rows and an instruction's attempts go with it): %s; failed batches: %s\n",
		byTable(deleted), byTable(failed))
	fmt.Fprintf(w, "  (the figures below that read exec_queue or pacing_window count only the rows the cleaner left)\n")
	return nil
}

func sumEnd(gs []tableGrowth) int64 {
	var n int64
	for _, g := range gs {
		n += g.End
	}
	return n
}

// counterByTable reads a counter's values by their table label.
func counterByTable(reg *prometheus.Registry, name string) (map[string]int64, error) {
	fams, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("bench: the cleaner's metrics: %w", err)
	}
	out := map[string]int64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" {
					out[l.GetValue()] += int64(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out, nil
}

// byTable lists counts by table, the largest first ("none": all zero).
func byTable(n map[string]int64) string {
	tables := make([]string, 0, len(n))
	for t, v := range n {
		if v > 0 {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return "none"
	}
	slices.SortFunc(tables, func(a, b string) int { return cmp.Or(cmp.Compare(n[b], n[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(tables))
	for i, t := range tables {
		parts[i] = t + " " + thousands(int(n[t]))
	}
	return strings.Join(parts, ", ")
}

// rssPeaks are this process's peak resident sets: the intake's (the
// requests built and submitted) apart from the drain's, which is what
// the payments in flight cost and should not grow with their number.
type rssPeaks struct {
	intake int64 // VmHWM at the end of the intake
	reset  bool  // VmHWM was reset after the intake
}

// endIntake reads the intake's peak, hands the intake's freed heap back
// to the OS and resets the peak (Linux's clear_refs 5), so the drain's
// peak is its own.
func endIntake() rssPeaks {
	p := rssPeaks{intake: statusKiB("VmHWM") * 1024}
	debug.FreeOSMemory()
	p.reset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	return p
}

// write prints the peaks.
func (p rssPeaks) write(w io.Writer) {
	whole := peakRSS()
	if whole <= 0 {
		return
	}
	fmt.Fprintf(w, "this process's peak resident set (RSS): the whole run %.0f MiB; the intake (building and submitting the payments) %.0f MiB", float64(whole)/(1<<20), float64(p.intake)/(1<<20))
	if drain := statusKiB("VmHWM") * 1024; p.reset && drain > 0 {
		fmt.Fprintf(w, "; the drain (from the end of the intake, its heap handed back) %.0f MiB", float64(drain)/(1<<20))
	}
	fmt.Fprintln(w)
}

// statusKiB is a "Name: N kB" line of /proc/self/status (0: unknown).
func statusKiB(name string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseStatusKiB(string(b), name)
}

func parseStatusKiB(status, name string) int64 {
	for line := range strings.SplitSeq(status, "\n") {
		v, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	return 0
}
