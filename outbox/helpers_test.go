package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
)

const rail = "TEST_RAIL"

func instruction(participant string, n int) outbox.Instruction {
	id := fmt.Sprintf("%s-ins-%05d", participant, n)
	return outbox.Instruction{
		InstructionID:  id,
		ParticipantID:  participant,
		IdempotencyKey: "key-" + id,
		RailType:       rail,
		Payload:        json.RawMessage(fmt.Sprintf(`{"amount":"10.00","currency":"EUR","n":%d}`, n)),
	}
}

// enqueue commits one instruction in its own transaction.
func enqueue(t testing.TB, pool *pgxpool.Pool, in outbox.Instruction) (uuid.UUID, int64) {
	t.Helper()
	var id uuid.UUID
	var seq int64
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		id, seq, _, err = outbox.Enqueue(context.Background(), tx, in)
		return err
	})
	if err != nil {
		t.Fatalf("enqueue %s: %v", in.InstructionID, err)
	}
	return id, seq
}

// fastConfig is a relayer config for tests: short intervals and backoffs.
func fastConfig(pool *pgxpool.Pool, s outbox.Sender) outbox.Config {
	return outbox.Config{
		Pool:            pool,
		Sender:          s,
		PollInterval:    50 * time.Millisecond,
		Debounce:        5 * time.Millisecond,
		BackoffBase:     20 * time.Millisecond,
		BackoffMax:      200 * time.Millisecond,
		RailTimeout:     time.Second,
		ReaperInterval:  time.Second,
		ReaperTimeout:   5 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		Logger:          testLogger(),
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("OUTBOX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// startRelayer runs a relayer until the test ends (or stop is called).
func startRelayer(t testing.TB, cfg outbox.Config) (stop func()) {
	t.Helper()
	r, err := outbox.New(cfg)
	if err != nil {
		t.Fatalf("new relayer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("relayer: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func states(t testing.TB, pool *pgxpool.Pool, instructionID string) []outbox.State {
	t.Helper()
	as, err := outbox.Attempts(context.Background(), pool, instructionID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]outbox.State, len(as))
	for i, a := range as {
		out[i] = a.State
	}
	return out
}

func lastState(t testing.TB, pool *pgxpool.Pool, instructionID string) outbox.State {
	t.Helper()
	s := states(t, pool, instructionID)
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func countRows(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func depth(t testing.TB, pool *pgxpool.Pool) outbox.Depth {
	t.Helper()
	d, err := outbox.ReadDepth(context.Background(), pool, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fakeRail is an in-process rail: it remembers what it received by
// idempotency key, and a script decides each call's outcome.
type fakeRail struct {
	mu        sync.Mutex
	sends     map[string]int     // Send calls per key
	received  map[string]int     // sends that arrived (the rail has the key)
	order     map[string][]int64 // per participant, sequences in arrival order (first arrival only)
	inquiries map[string]int
	inFlight  int
	maxInFl   int
	// per participant: sends under way, and the most at once
	partInFl map[string]int
	partMax  map[string]int

	// send decides a send's outcome; arrived says the rail got it. n
	// counts this key's sends from 1. Default: delivered.
	send func(m outbox.Message, n int) (res outbox.Result, arrived bool)
	// inquire overrides the inquiry's answer (default: from received).
	inquire  func(m outbox.Message) (outbox.Result, bool)
	validate func(m outbox.Message) error
	latency  time.Duration
}

func newFakeRail() *fakeRail {
	return &fakeRail{sends: map[string]int{}, received: map[string]int{}, order: map[string][]int64{}, inquiries: map[string]int{},
		partInFl: map[string]int{}, partMax: map[string]int{}}
}

func (f *fakeRail) Validate(m outbox.Message) error {
	if f.validate != nil {
		return f.validate(m)
	}
	return nil
}

func (f *fakeRail) Send(ctx context.Context, m outbox.Message) outbox.Result {
	f.mu.Lock()
	f.sends[m.IdempotencyKey]++
	n := f.sends[m.IdempotencyKey]
	f.inFlight++
	f.maxInFl = max(f.maxInFl, f.inFlight)
	f.partInFl[m.ParticipantID]++
	f.partMax[m.ParticipantID] = max(f.partMax[m.ParticipantID], f.partInFl[m.ParticipantID])
	script := f.send
	f.mu.Unlock()
	if f.latency > 0 {
		time.Sleep(f.latency)
	}
	res, arrived := outbox.Result{Outcome: outbox.Delivered, Reference: "REF-" + m.IdempotencyKey}, true
	if script != nil {
		res, arrived = script(m, n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	f.partInFl[m.ParticipantID]--
	if arrived {
		if f.received[m.IdempotencyKey] == 0 {
			f.order[m.ParticipantID] = append(f.order[m.ParticipantID], m.SequenceID)
		}
		f.received[m.IdempotencyKey]++
	}
	return res
}

func (f *fakeRail) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	f.mu.Lock()
	f.inquiries[m.IdempotencyKey]++
	has := f.received[m.IdempotencyKey] > 0
	override := f.inquire
	f.mu.Unlock()
	if override != nil {
		if res, ok := override(m); ok {
			return res
		}
	}
	if has {
		return outbox.Result{Outcome: outbox.Delivered, Reference: "REF-" + m.IdempotencyKey}
	}
	return outbox.Result{Outcome: outbox.NotReceived}
}

func (f *fakeRail) count(m map[string]int, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return m[key]
}

func (f *fakeRail) totalReceived() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.received)
}

// hookLog records hook calls.
type hookLog struct {
	mu        sync.Mutex
	delivered []outbox.Delivery
	dead      []outbox.DeadLetter
	calls     int
	fail      func(d outbox.Delivery) error
}

func (h *hookLog) hooks() outbox.Hooks {
	return outbox.Hooks{
		OnDelivered: func(ctx context.Context, tx pgx.Tx, ds []outbox.Delivery) error {
			if h.fail != nil {
				for _, d := range ds {
					if err := h.fail(d); err != nil {
						return err
					}
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			h.calls++
			h.delivered = append(h.delivered, ds...)
			return nil
		},
		OnDead: func(ctx context.Context, tx pgx.Tx, ds []outbox.DeadLetter) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.calls++
			h.dead = append(h.dead, ds...)
			return nil
		},
	}
}

func (h *hookLog) snapshot() ([]outbox.Delivery, []outbox.DeadLetter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]outbox.Delivery(nil), h.delivered...), append([]outbox.DeadLetter(nil), h.dead...)
}

var errHook = errors.New("hook refuses")

func newPool(t testing.TB) *pgxpool.Pool { return pgtest.NewPool(t) }

// listenerPID is the backend of this database's outbox listener (0: none).
func listenerPID(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	return countRows(t, pool, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'paydispatch-outbox-listener'`)
}

func listeners(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	return countRows(t, pool, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'paydispatch-outbox-listener'`)
}

// waitListener waits until a relayer LISTENs, and returns its backend.
func waitListener(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, "the listener", func() bool {
		pid = listenerPID(t, pool)
		return pid != 0
	})
	time.Sleep(50 * time.Millisecond) // its LISTEN follows the connect
	return pid
}

// metricsOf gathers a registry's counters and gauges, summed over labels.
func metricsOf(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[mf.GetName()] += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[mf.GetName()+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
