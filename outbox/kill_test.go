package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/postgres"
)

// The kill test's child processes: this test binary, re-executed with
// these variables set, runs one relayer (see TestMain).
const (
	childEnv     = "OUTBOX_KILLTEST_CHILD" // the relayer's id
	childDBEnv   = "OUTBOX_KILLTEST_DB"
	childRailEnv = "OUTBOX_KILLTEST_RAIL"
)

// TestKillRelayerMidFlight: three relayer processes share one database
// and a rail outside them (an HTTP server in this process that records
// every delivery by idempotency key). 10,000 instructions over strict and
// throughput participants; one relayer is killed with SIGKILL while it
// has claims in flight. In the end every instruction reached the rail
// exactly once (one accepted POST per key, no duplicate), each strict
// participant's in sequence, and the archive has one DISPATCHED attempt
// per instruction.
func TestKillRelayerMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill test")
	}
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool, err := postgres.NewPool(ctx, url, 8)
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
	rail := newHTTPRail(strict)
	srv := httptest.NewServer(rail)
	defer srv.Close()

	children := make([]*child, 3)
	for i := range children {
		children[i] = startChild(t, fmt.Sprintf("relayer-%d", i), url, srv.URL)
	}
	defer func() {
		for _, c := range children {
			c.stop()
		}
		if t.Failed() {
			for _, c := range children {
				t.Logf("%s log:\n%s", c.id, c.log.String())
			}
		}
	}()

	// 10,000 instructions: 800 for each strict participant, 1,300 for
	// each throughput one, enqueued while the relayers run.
	var ins []outbox.Instruction
	for i := range 1300 {
		for _, p := range throughput {
			ins = append(ins, railInstruction(p, i))
		}
		if i < 800 {
			for _, p := range strict {
				ins = append(ins, railInstruction(p, i))
			}
		}
	}
	const total = 10_000
	if len(ins) != total {
		t.Fatalf("%d instructions", len(ins))
	}
	start := time.Now()
	enqueueMany(t, pool, ins)

	eventually(t, 60*time.Second, "a third delivered", func() bool { return rail.accepted() >= total/3 })
	inFlight := countRows(t, pool, `SELECT count(*) FROM payment_outbox_inflight WHERE relayer_id = 'relayer-0'`)
	children[0].kill()
	killed := time.Now()
	t.Logf("killed relayer-0 after %v with %d claims in flight (%d delivered)", killed.Sub(start).Round(time.Millisecond), inFlight, rail.accepted())

	eventually(t, 3*time.Minute, "every instruction delivered", func() bool {
		if rail.accepted() < total {
			return false
		}
		d := depth(t, pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	t.Logf("all %d delivered %v after the start, %v after the kill", total, time.Since(start).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	rail.mu.Lock()
	defer rail.mu.Unlock()
	if len(rail.received) != total || rail.duplicates != 0 || len(rail.violations) != 0 {
		t.Fatalf("rail: %d received, %d duplicate sends, order violations %v", len(rail.received), rail.duplicates, rail.violations)
	}
	for _, p := range strict {
		if rail.last[p] != 800 {
			t.Fatalf("%s: last sequence %d, want 800", p, rail.last[p])
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d DISPATCHED attempts, want %d", n, total)
	}
	if n := countRows(t, pool, `SELECT count(DISTINCT outbox_id) FROM payment_outbox_attempts WHERE state = 'DISPATCHED'`); n != total {
		t.Fatalf("%d outbox ids DISPATCHED, want %d", n, total)
	}
	zombies := countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts WHERE state = 'ZOMBIE_REQUEUE'`)
	inquired := countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHED' AND inquiry_outcome = 'DELIVERED'`)
	if inFlight > 0 && zombies == 0 {
		t.Fatalf("relayer-0 died with %d claims and the reaper requeued none", inFlight)
	}
	if d := depth(t, pool); d.DeadLetters != 0 {
		t.Fatalf("dead letters: %+v", d)
	}
	t.Logf("zombies requeued %d (found delivered by inquiry %d), retryable injected %d, POSTs %d",
		zombies, inquired, rail.refused, rail.posts)
}

func railInstruction(participant string, n int) outbox.Instruction {
	in := instruction(participant, n)
	in.RailType = "HTTP_TEST"
	return in
}

// child is a relayer process.
type child struct {
	id   string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func startChild(t *testing.T, id, dbURL, railURL string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+id, childDBEnv+"="+dbURL, childRailEnv+"="+railURL)
	c := &child{id: id, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.log, c.log
	// Die with the test, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		c.kill()
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runChild is a relayer process of the kill test; it runs until SIGTERM
// (or SIGKILL), or until its parent is gone.
func runChild() int {
	id := os.Getenv(childEnv)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	parent := os.Getppid()
	go func() {
		for ctx.Err() == nil {
			if os.Getppid() != parent {
				stop()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	pool, err := postgres.NewPool(ctx, os.Getenv(childDBEnv), 10)
	if err != nil {
		log.Error("child: database", "err", err)
		return 1
	}
	defer pool.Close()
	r, err := outbox.New(outbox.Config{
		Pool:           pool,
		Sender:         &httpSender{base: os.Getenv(childRailEnv), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}},
		ID:             id,
		Logger:         log,
		PollInterval:   100 * time.Millisecond,
		Debounce:       5 * time.Millisecond,
		Concurrency:    32,
		MaxInFlight:    400,
		RailTimeout:    500 * time.Millisecond,
		BackoffBase:    20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		MaxAttempts:    50,
		ReaperTimeout:  2 * time.Second,
		ReaperInterval: 500 * time.Millisecond,
	})
	if err != nil {
		log.Error("child: relayer", "err", err)
		return 1
	}
	if err := r.Run(ctx); err != nil {
		log.Error("child: run", "err", err)
		return 1
	}
	return 0
}

// railRequest is what httpSender posts.
type railRequest struct {
	Key         string          `json:"key"`
	Participant string          `json:"participant"`
	Sequence    int64           `json:"sequence"`
	Payload     json.RawMessage `json:"payload"`
}

// httpSender is a minimal rail adapter for the kill test.
type httpSender struct {
	base   string
	client *http.Client
}

func (s *httpSender) Validate(m outbox.Message) error {
	var p struct {
		Amount string `json:"amount"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil || p.Amount == "" {
		return errors.New("payload without an amount")
	}
	return nil
}

func (s *httpSender) Send(ctx context.Context, m outbox.Message) outbox.Result {
	body, _ := json.Marshal(railRequest{Key: m.IdempotencyKey, Participant: m.ParticipantID, Sequence: m.SequenceID, Payload: m.Payload})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/send", bytes.NewReader(body))
	if err != nil {
		return outbox.Result{Outcome: outbox.Terminal, Code: "BAD_REQUEST", Message: err.Error()}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// It may have been written: only an inquiry can tell.
		return outbox.Result{Outcome: outbox.Unknown, Code: "TRANSPORT", Message: err.Error()}
	}
	defer resp.Body.Close()
	ref, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusOK:
		return outbox.Result{Outcome: outbox.Delivered, Reference: string(ref)}
	case resp.StatusCode == http.StatusServiceUnavailable:
		return outbox.Result{Outcome: outbox.Retryable, Code: "503"}
	case resp.StatusCode >= 500:
		return outbox.Result{Outcome: outbox.Unknown, Code: resp.Status}
	default:
		return outbox.Result{Outcome: outbox.Terminal, Code: resp.Status}
	}
}

func (s *httpSender) Inquire(ctx context.Context, m outbox.Message) outbox.Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/status?key="+m.IdempotencyKey, nil)
	if err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Message: err.Error()}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return outbox.Result{Outcome: outbox.Unknown, Code: "TRANSPORT", Message: err.Error()}
	}
	defer resp.Body.Close()
	ref, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return outbox.Result{Outcome: outbox.Delivered, Reference: string(ref)}
	case http.StatusNotFound:
		return outbox.Result{Outcome: outbox.NotReceived}
	default:
		return outbox.Result{Outcome: outbox.Unknown, Code: resp.Status}
	}
}

// httpRail is the rail: it accepts each key once (a repeat is counted as
// a duplicate send and answered with the first reference), refuses the
// first send of one key in 20 with 503, and checks that each strict
// participant's sequences arrive as 1, 2, 3...
type httpRail struct {
	mu         sync.Mutex
	strict     map[string]bool
	received   map[string]string // key → reference
	last       map[string]int64  // strict participant → last sequence accepted
	tried      map[string]bool
	posts      int
	refused    int
	duplicates int
	violations []string
}

func newHTTPRail(strict []string) *httpRail {
	r := &httpRail{strict: map[string]bool{}, received: map[string]string{}, last: map[string]int64{}, tried: map[string]bool{}}
	for _, p := range strict {
		r.strict[p] = true
	}
	return r
}

func (r *httpRail) accepted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

func (r *httpRail) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/status":
		r.mu.Lock()
		ref, ok := r.received[req.URL.Query().Get("key")]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = io.WriteString(w, ref)
	case req.Method == http.MethodPost && req.URL.Path == "/send":
		var in railRequest
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // cut off mid-request: never received
			return
		}
		time.Sleep(time.Millisecond) // a rail takes a moment: keeps sends in flight
		r.mu.Lock()
		defer r.mu.Unlock()
		r.posts++
		if ref, ok := r.received[in.Key]; ok {
			r.duplicates++
			_, _ = io.WriteString(w, ref)
			return
		}
		if !r.tried[in.Key] && hash(in.Key)%20 == 0 {
			r.tried[in.Key] = true
			r.refused++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.tried[in.Key] = true
		if r.strict[in.Participant] {
			if in.Sequence != r.last[in.Participant]+1 {
				r.violations = append(r.violations, fmt.Sprintf("%s: %d after %d", in.Participant, in.Sequence, r.last[in.Participant]))
			}
			r.last[in.Participant] = in.Sequence
		}
		ref := "RAIL-" + in.Key
		r.received[in.Key] = ref
		_, _ = io.WriteString(w, ref)
	default:
		http.NotFound(w, req)
	}
}
