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

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
	"github.com/paydispatch/paydispatch/postgres"
)

// The kill test's child processes: this test binary, re-executed with
// these variables set, runs one relayer (see TestMain).
const (
	childEnv     = "OUTBOX_KILLTEST_CHILD" // the relayer's id
	childDBEnv   = "OUTBOX_KILLTEST_DB"
	childRailEnv = "OUTBOX_KILLTEST_RAIL"
)

// TestKillRelayerMidFlight is outboxtest.KillScenario with relayers that
// are this test binary, re-executed, and a rail in this process (an HTTP
// server that records every delivery by idempotency key and answers the
// first send of one key in 20 busy).
func TestKillRelayerMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill test")
	}
	t.Parallel()
	url := pgtest.URL(t)
	pool, err := postgres.NewPool(context.Background(), url, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rail := newHTTPRail()
	srv := httptest.NewServer(rail)
	t.Cleanup(srv.Close) // after the relayers stop

	outboxtest.KillScenario{
		Pool: pool,
		StartRelayer: func(t *testing.T, i int) outboxtest.Relayer {
			return startChild(t, fmt.Sprintf("relayer-%d", i), url, srv.URL)
		},
		Instruction: func(participant string, n int) outbox.Instruction {
			in := instruction(participant, n)
			in.RailType = "HTTP_TEST"
			return in
		},
		Ledger: func(*testing.T) outboxtest.Ledger { return rail.ledger() },
	}.Run(t)
	rail.mu.Lock()
	defer rail.mu.Unlock()
	t.Logf("rail: retryable injected %d, POSTs %d", rail.refused, rail.posts)
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
	t.Cleanup(c.stop)
	return c
}

func (c *child) Name() string      { return c.id }
func (c *child) ClaimedBy() string { return c.id }
func (c *child) Log() string       { return c.log.String() }

func (c *child) Kill() {
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
		c.Kill()
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
// a duplicate and answered with the first reference), refuses the first
// send of one key in 20 with 503, and keeps each participant's sequences
// as railsim's ledger does, for the scenario to judge their order.
type httpRail struct {
	mu       sync.Mutex
	received map[string]string // key → reference
	tried    map[string]bool
	parts    map[string]*railParticipant
	posts    int
	refused  int
}

type railParticipant struct {
	outboxtest.LedgerParticipant
	taken map[int64]bool
}

func newHTTPRail() *httpRail {
	return &httpRail{received: map[string]string{}, tried: map[string]bool{}, parts: map[string]*railParticipant{}}
}

func (r *httpRail) ledger() outboxtest.Ledger {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := outboxtest.Ledger{Participants: map[string]outboxtest.LedgerParticipant{}}
	for id, p := range r.parts {
		v := p.LedgerParticipant
		v.Gaps = v.Highest - int64(len(p.taken))
		l.Participants[id] = v
		l.Unique += v.Unique
		l.Duplicates += v.Duplicates
	}
	l.Received = l.Unique + l.Duplicates
	return l
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
		p := r.parts[in.Participant]
		if p == nil {
			p = &railParticipant{taken: map[int64]bool{}}
			r.parts[in.Participant] = p
		}
		if ref, ok := r.received[in.Key]; ok {
			p.Duplicates++
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
		p.Unique++
		switch {
		case p.taken[in.Sequence]:
			p.SequenceReused++
		case in.Sequence < p.Highest:
			p.Reordered++
		}
		p.taken[in.Sequence] = true
		p.Highest = max(p.Highest, in.Sequence)
		ref := "RAIL-" + in.Key
		r.received[in.Key] = ref
		_, _ = io.WriteString(w, ref)
	default:
		http.NotFound(w, req)
	}
}
