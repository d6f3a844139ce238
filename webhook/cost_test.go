package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestRelayerCost measures a relayer alone, as docs/benchmarks.md reports
// it beside `bench webhooks`: 6,000 deliveries waiting (1,500 payments'
// four events), one endpoint on loopback answering 503 to one request in
// ten (PAYDISPATCH_WEBHOOK_COST_FAIL_EVERY), one relayer with the
// defaults. It prints the rate, and per event the CPU of this process
// and of PostgreSQL, the WAL written, the transactions and the buffers
// read. A measurement, not a timed test: it runs only with
// PAYDISPATCH_WEBHOOK_COST=1 (=plan also prints a claim's plan 5 s in).
func TestRelayerCost(t *testing.T) {
	if os.Getenv("PAYDISPATCH_WEBHOOK_COST") == "" {
		t.Skip("a measurement: set PAYDISPATCH_WEBHOOK_COST=1")
	}
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	// PAYDISPATCH_WEBHOOK_COST_FAIL_EVERY=0 answers 2xx to all: the rate
	// is then the relayer's, without the retries' backoff.
	failEvery := int64(10)
	if v := os.Getenv("PAYDISPATCH_WEBHOOK_COST_FAIL_EVERY"); v != "" {
		failEvery, _ = strconv.ParseInt(v, 10, 64)
	}
	r := newReceiver(t, func(n int64) int {
		if failEvery > 0 && n%failEvery == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	r.inOrder = true
	register(t, pool, "t-1", r)
	subjects := make([]string, 1500)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("pay-%04d", i)
	}
	const events = 6000
	// Published one event a statement, as a payment's status trigger
	// does: what that costs PostgreSQL, by the same measures.
	ppg0, pwal0 := pgCPU(t, pool), walLSN(t, pool)
	for seq := range 4 {
		for _, s := range subjects {
			publish(t, pool, "t-1", "payment.delivered", []string{s}, seq)
		}
	}
	t.Logf("publishing, per event: %.3f ms in PostgreSQL, %.0f bytes of WAL",
		ms(pgCPU(t, pool)-ppg0)/events, float64(walLSN(t, pool)-pwal0)/events)
	if _, err := pool.Exec(ctx, "ANALYZE webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	pg0, wal0, db0 := pgCPU(t, pool), walLSN(t, pool), dbStats(t, pool)
	self0 := selfCPU()
	start := time.Now()
	startRelayer(t, webhook.Config{Pool: pool, Policy: open})
	// A count every 100 ms: listing the deliveries would cost more than
	// what is measured.
	if os.Getenv("PAYDISPATCH_WEBHOOK_COST") == "plan" {
		time.Sleep(5 * time.Second)
		t.Logf("a claim 5 s in:\n%s", pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
			_, err := webhook.Claim(ctx, tx, 40, 40)
			return err
		}))
	}
	for n := 0; n < events; time.Sleep(100 * time.Millisecond) {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE state = 'DELIVERED'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("%d of %d delivered after 5 minutes", n, events)
		}
	}
	took := time.Since(start)
	self, pg, wal, db := selfCPU()-self0, pgCPU(t, pool)-pg0, walLSN(t, pool)-wal0, dbStats(t, pool)
	t.Logf("%d events in %.1f s: %.0f/s; per event: %.2f ms CPU here (receiver included), %.2f ms in PostgreSQL, %.0f bytes of WAL; %d requests",
		events, took.Seconds(), events/took.Seconds(), ms(self)/events, ms(pg)/events, float64(wal)/events, r.requests.Load())
	t.Logf("per event: %.2f transactions, %.0f buffers hit, %.0f index tuples read",
		float64(db[0]-db0[0])/events, float64(db[1]-db0[1])/events, float64(db[2]-db0[2])/events)
	for _, s := range subjects {
		if got := r.seqs(s); fmt.Sprint(got) != "[0 1 2 3]" {
			t.Fatalf("payment %s: accepted %v", s, got)
		}
	}
}

// dbStats is the database's commits, buffer hits and tuples read (from
// the statistics; a poll's own count is in them too).
func dbStats(t *testing.T, pool *pgxpool.Pool) [3]int64 {
	var s [3]int64
	if _, err := pool.Exec(context.Background(), "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if err := pool.QueryRow(context.Background(), `SELECT xact_commit, blks_hit, tup_fetched FROM pg_stat_database WHERE datname = current_database()`).Scan(&s[0], &s[1], &s[2]); err != nil {
		t.Fatal(err)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func walLSN(t *testing.T, pool *pgxpool.Pool) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn() - '0/0'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// pgCPU is the CPU the test server's processes have used: the
// postmaster's own and its exited children's, and its live children's.
func pgCPU(t *testing.T, pool *pgxpool.Pool) time.Duration {
	var backend int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	post := statOf(backend)[1]
	pm, _ := strconv.Atoi(post)
	total := cpuOf(statOf(pm), true)
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if f := statOf(pid); len(f) > 14 && f[1] == post {
			total += cpuOf(f, false)
		}
	}
	return total
}

// statOf is /proc/pid/stat's fields after the command: [0] the state, [1]
// the parent, [11]–[14] utime, stime, cutime, cstime.
func statOf(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func cpuOf(f []string, children bool) time.Duration {
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	for i := 11; i <= 14; i++ {
		if i >= 13 && !children {
			break
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}
