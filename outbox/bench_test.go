package outbox_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/postgres/pgserver"
)

// BenchmarkRelay measures the outbox on a durable PostgreSQL (fsync and
// synchronous_commit on: a private server started for the run, or the
// server of OUTBOX_BENCH_DATABASE_URL), each sub-benchmark on a fresh
// database, with a rail stub that answers at once:
//
//		go test -run '^$' -bench Relay -benchtime 20000x ./outbox/
//
//	  - drain: b.N instructions enqueued beforehand, delivered by 1 or 2
//	    relayers: instr/s from the relayers' start to the last delivery;
//	  - produce: 16 producers enqueue b.N instructions one per transaction
//	    while one relayer delivers: instr/s end to end;
//	  - latency: one instruction per transaction at 200/s; commit → Send,
//	    p50 and p99, with NOTIFY (poll at 500 ms) and poll-only (500 ms);
//	  - strict: drains with every participant strict (8 participants, and 1).
func BenchmarkRelay(b *testing.B) {
	admin := benchServer(b)
	b.Run("drain/relayers=1", func(b *testing.B) { benchDrain(b, admin, 1, 20, false) })
	b.Run("drain/relayers=2", func(b *testing.B) { benchDrain(b, admin, 2, 20, false) })
	b.Run("produce/producers=16", func(b *testing.B) { benchProduce(b, admin, 16) })
	b.Run("latency/notify/rate=200", func(b *testing.B) { benchLatency(b, admin, false, 5*time.Millisecond) })
	b.Run("latency/poll-only/rate=200", func(b *testing.B) { benchLatency(b, admin, true, 5*time.Millisecond) })
	b.Run("latency/notify/rate=20", func(b *testing.B) { benchLatency(b, admin, false, 50*time.Millisecond) })
	b.Run("latency/poll-only/rate=20", func(b *testing.B) { benchLatency(b, admin, true, 50*time.Millisecond) })
	b.Run("strict/participants=8", func(b *testing.B) { benchDrain(b, admin, 2, 8, true) })
	b.Run("strict/participants=1", func(b *testing.B) { benchDrain(b, admin, 2, 1, true) })
}

// countingRail delivers at once and counts, and remembers when each key
// was first sent.
type countingRail struct {
	sent  atomic.Int64
	mu    sync.Mutex
	first map[string]time.Time
	track bool
}

func (r *countingRail) Validate(outbox.Message) error { return nil }

func (r *countingRail) Send(ctx context.Context, m outbox.Message) outbox.Result {
	if r.track {
		now := time.Now()
		r.mu.Lock()
		if _, ok := r.first[m.IdempotencyKey]; !ok {
			r.first[m.IdempotencyKey] = now
		}
		r.mu.Unlock()
	}
	r.sent.Add(1)
	return outbox.Result{Outcome: outbox.Delivered, Reference: "R"}
}

func (r *countingRail) Inquire(context.Context, outbox.Message) outbox.Result {
	return outbox.Result{Outcome: outbox.NotReceived}
}

func benchDrain(b *testing.B, admin string, relayers, participants int, strict bool) {
	pool := benchDB(b, admin)
	ctx := context.Background()
	if strict {
		if err := outbox.SetOrdering(ctx, pool, outbox.DefaultParticipant, outbox.Strict); err != nil {
			b.Fatal(err)
		}
	}
	ins := make([]outbox.Instruction, b.N)
	for i := range ins {
		ins[i] = instruction(fmt.Sprintf("bank-%02d", i%participants), i)
	}
	outboxtest.Enqueue(b, pool, ins)
	rail := &countingRail{}
	b.ResetTimer()
	start := time.Now()
	for i := range relayers {
		cfg := outbox.Config{Pool: pool, Sender: rail, ID: fmt.Sprintf("bench-%d", i), Logger: testLogger()}
		startRelayer(b, cfg)
	}
	waitDrained(b, pool, rail, int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "instr/s")
}

func benchProduce(b *testing.B, admin string, producers int) {
	pool := benchDB(b, admin)
	rail := &countingRail{}
	b.ResetTimer()
	start := time.Now()
	startRelayer(b, outbox.Config{Pool: pool, Sender: rail})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				enqueue(b, pool, instruction(fmt.Sprintf("bank-%02d", i%20), int(i)))
			}
		})
	}
	wg.Wait()
	enqueued := time.Since(start)
	waitDrained(b, pool, rail, int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "instr/s")
	b.ReportMetric(float64(b.N)/enqueued.Seconds(), "enqueued/s")
}

func benchLatency(b *testing.B, admin string, pollOnly bool, every time.Duration) {
	pool := benchDB(b, admin)
	rail := &countingRail{track: true, first: map[string]time.Time{}}
	startRelayer(b, outbox.Config{Pool: pool, Sender: rail, DisableNotify: pollOnly, PollInterval: 500 * time.Millisecond, Logger: testLogger()})
	if !pollOnly {
		waitListener(b, pool)
	}
	committed := make(map[string]time.Time, b.N)
	tick := time.NewTicker(every)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		in := instruction("bank-a", i)
		enqueue(b, pool, in)
		committed[in.IdempotencyKey] = time.Now()
	}
	waitDrained(b, pool, rail, int64(b.N))
	b.StopTimer()
	lat := make([]time.Duration, 0, b.N)
	rail.mu.Lock()
	for k, c := range committed {
		lat = append(lat, max(rail.first[k].Sub(c), 0))
	}
	rail.mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// waitDrained waits for n sends and an empty outbox.
func waitDrained(b *testing.B, pool *pgxpool.Pool, rail *countingRail, n int64) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for rail.sent.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d sent after 10 minutes", rail.sent.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		d := depth(b, pool)
		if d.Pending == 0 && d.InFlight == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// benchServer returns a connection string to a durable server: the one
// of OUTBOX_BENCH_DATABASE_URL (its role may CREATE DATABASE), or a
// private one started for this benchmark run and stopped after it.
func benchServer(b *testing.B) string {
	b.Helper()
	if url := os.Getenv("OUTBOX_BENCH_DATABASE_URL"); url != "" {
		return url
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "paydispatch-outbox-bench-")
	if err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755) // the server user must enter it
	srv, err := pgserver.Start(ctx, pgserver.Options{
		Dir: filepath.Join(dir, "pg"), Database: "bench",
		Settings: map[string]string{"shared_buffers": "512MB", "max_connections": "200"},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(stopCtx)
		_ = os.RemoveAll(dir)
	})
	url := srv.ConnString("bench")
	pool, err := postgres.NewPool(ctx, url, 2)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var fsync, syncCommit string
	if err := pool.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&fsync, &syncCommit); err != nil {
		b.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, pool, ownSchema, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("private PostgreSQL, fsync=%s synchronous_commit=%s", fsync, syncCommit)
	return url
}

var benchDBs atomic.Int64

// benchDB is a fresh database cloned from the benchmark server's migrated
// one, dropped afterwards.
func benchDB(b *testing.B, admin string) *pgxpool.Pool {
	b.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("outbox_bench_%d_%d", os.Getpid(), benchDBs.Add(1))
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var template string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&template); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template)); err != nil {
		b.Fatal(err)
	}
	pool, err := postgres.NewPool(ctx, withDatabase(admin, name), 40)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		pool.Close()
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	return pool
}

// withDatabase points a connection string (URL or keyword/value) at
// another database.
func withDatabase(conn, db string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := neturl.Parse(conn)
		if err != nil {
			return conn
		}
		u.Path = "/" + db
		return u.String()
	}
	return conn + " dbname=" + db // a repeated keyword's last value wins
}
