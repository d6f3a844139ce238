package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestRelayKilledMidFlight is the outbox's kill test with everything
// real: three `paydispatch relay` processes share one database and send,
// through the JSON and pacs.008 adapters, to a `paydispatch rail-sim`
// process that answers 2 % of sends "busy" and leaves 0.2 % of accepted
// ones without an answer (unknown outcomes, settled by inquiry). 10,000
// instructions over strict and throughput participants; one relayer is
// killed with SIGKILL while it holds claims. In the end the simulator's
// ledger (GET /ledger) has every instruction exactly once — no duplicate,
// no gap — and each strict participant's in sequence; the archive has one
// DISPATCHED attempt per instruction and no dead letter.
func TestRelayKilledMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs four processes")
	}
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	pool, err := postgres.NewPool(ctx, dbURL, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	strict := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	throughput := []string{"t1", "t2", "t3", "t4"}
	for _, p := range strict {
		if err := outbox.SetOrdering(ctx, pool, p, outbox.Strict); err != nil {
			t.Fatal(err)
		}
	}

	simAddr := freeAddr(t)
	sim := startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--retryable-fraction", "0.02",
		"--timeout-fraction", "0.002", "--seed", "7", "--log-level", "warn"}, nil)
	simURL := "http://" + simAddr
	waitHTTP(t, simURL+"/healthz")
	relays := make([]*bgProc, 3)
	for i := range relays {
		relays[i] = startProc(t, fmt.Sprintf("relay-%d", i), []string{"relay", "--metrics-addr", "127.0.0.1:0",
			"--relay-poll-interval", "100ms", "--relay-debounce", "5ms", "--relay-concurrency", "32",
			"--rail-timeout", "1s", "--relay-reaper-timeout", "3s", "--relay-backoff-base", "20ms", "--relay-backoff-max", "200ms",
			"--relay-max-attempts", "50", "--db-max-conns", "10", "--log-level", "warn"},
			[]string{"DATABASE_URL=" + dbURL, "PAYDISPATCH_RAIL_URL=" + simURL})
	}
	defer func() {
		if t.Failed() {
			for _, p := range append(relays, sim) {
				t.Logf("%s log:\n%s", p.name, p.stderr)
			}
		}
	}()

	// 10,000 instructions: 800 for each strict participant, 1,300 for each
	// throughput one, JSON and pacs.008 alternately, enqueued while the
	// relayers run.
	var ins []outbox.Instruction
	for i := 1; i <= 1300; i++ {
		railType := rail.RailSEPAJSON
		if i%2 == 0 {
			railType = rail.RailPacs008
		}
		for _, p := range throughput {
			ins = append(ins, railInstruction(p, i, railType))
		}
		if i <= 800 {
			for _, p := range strict {
				ins = append(ins, railInstruction(p, i, railType))
			}
		}
	}
	const total = 10_000
	if len(ins) != total {
		t.Fatalf("%d instructions", len(ins))
	}
	start := time.Now()
	enqueueAll(t, pool, ins)

	var l railsim.LedgerView
	waitUntil(t, 60*time.Second, func() bool { getLedger(t, simURL, &l); return l.Unique >= total/3 })
	victim := relays[0]
	var inFlight int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_outbox_inflight WHERE relayer_id LIKE $1`,
		"%-"+strconv.Itoa(victim.cmd.Process.Pid)+"-%").Scan(&inFlight); err != nil {
		t.Fatal(err)
	}
	victim.kill()
	killed := time.Now()
	t.Logf("killed %s after %v with %d claims in flight (%d delivered)", victim.name, killed.Sub(start).Round(time.Millisecond), inFlight, l.Unique)

	waitUntil(t, 90*time.Second, func() bool {
		getLedger(t, simURL, &l)
		if l.Unique < total {
			return false
		}
		d, err := outbox.ReadDepth(ctx, pool, time.Minute)
		return err == nil && d.Pending == 0 && d.InFlight == 0
	})
	t.Logf("all %d delivered %v after the start, %v after the kill", total, time.Since(start).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	if l.Unique != total || l.Received != total || l.Duplicates != 0 || l.Refused != 0 || l.Malformed != 0 ||
		l.Gaps != 0 || l.SequenceReused != 0 {
		t.Fatalf("ledger: %+v", l)
	}
	for _, p := range strict {
		if v := l.Participants[p]; v.Unique != 800 || v.Highest != 800 || v.Gaps != 0 || v.Reordered != 0 || v.Duplicates != 0 {
			t.Errorf("strict %s: %+v, want 1..800 once each, in sequence", p, v)
		}
	}
	for _, p := range throughput {
		if v := l.Participants[p]; v.Unique != 1300 || v.Duplicates != 0 || v.Gaps != 0 {
			t.Errorf("throughput %s: %+v, want 1,300 once each", p, v)
		}
	}
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d DISPATCHED attempts, want %d", n, total)
	}
	if n := count(`SELECT count(DISTINCT outbox_id) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d outbox ids DISPATCHED, want %d", n, total)
	}
	if n := count(`SELECT count(*) FROM payment_outbox_dead_letters`); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
	zombies := count(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'ZOMBIE_REQUEUE'`)
	if inFlight > 0 && zombies == 0 {
		t.Fatalf("%s died with %d claims and the reaper requeued none", victim.name, inFlight)
	}
	t.Logf("zombies requeued %d, found delivered by inquiry %d, unknown outcomes %d; rail: busy answers %d, accepted then cut off %d, inquiries %d",
		zombies, count(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED' AND inquiry_outcome = 'DELIVERED'`),
		count(`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'UNKNOWN'`), l.RetryableAnswers, l.TimeoutsAfterAccept, l.Inquiries)

	// The survivors stop cleanly on SIGTERM.
	for _, p := range append(relays[1:], sim) {
		if err := p.terminate(); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.name, err)
		}
	}
}

// bgProc is a paydispatch process the test runs.
type bgProc struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncWriter
	done   chan struct{}
	err    error // Wait's, once done
}

func startProc(t *testing.T, name string, args, env []string) *bgProc {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), "DATABASE_URL=", "PAYDISPATCH_RAIL_URL="), env...)
	p := &bgProc{name: name, cmd: cmd, stderr: &syncWriter{w: &bytes.Buffer{}}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	// Die with the test, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { _ = p.terminate() })
	return p
}

func (p *bgProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM and waits (SIGKILL after 30 s); it returns how
// the process ended.
func (p *bgProc) terminate() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("no exit within 30 s of SIGTERM")
	}
}

// enqueueAll commits instructions in batches of up to 1,000.
func enqueueAll(t *testing.T, pool *pgxpool.Pool, ins []outbox.Instruction) {
	t.Helper()
	for len(ins) > 0 {
		n := min(len(ins), 1000)
		err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
			_, err := outbox.EnqueueBatch(context.Background(), tx, ins[:n])
			return err
		})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		ins = ins[n:]
	}
}
