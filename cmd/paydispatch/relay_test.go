package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestRelayBadInput: relay, rail-sim and serve's relayer settings refuse
// bad input with exit 2 and one line naming the flag or variable, before
// any database is opened or port bound.
func TestRelayBadInput(t *testing.T) {
	t.Parallel()
	rail := map[string]string{"PAYDISPATCH_RAIL_URL": "http://127.0.0.1:9090"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"relay without a rail", []string{"relay"}, nil, "relay needs PAYDISPATCH_RAIL_URL (or --rail-url)"},
		{"relay rail url", []string{"relay", "--rail-url", "127.0.0.1:9090"}, nil, `invalid --rail-url "127.0.0.1:9090": want http(s)://host[:port][/prefix]`},
		{"relay rail url env", []string{"relay"}, map[string]string{"PAYDISPATCH_RAIL_URL": "rail"}, `invalid PAYDISPATCH_RAIL_URL "rail"`},
		{"relay metrics addr", []string{"relay", "--metrics-addr", "9091"}, rail, `invalid --metrics-addr "9091": want host:port`},
		{"relay concurrency env", []string{"relay"}, map[string]string{"PAYDISPATCH_RELAY_CONCURRENCY": "0"}, `invalid PAYDISPATCH_RELAY_CONCURRENCY "0"`},
		{"relay rail timeout", []string{"relay", "--rail-timeout", "90s"}, rail, "--rail-timeout 1m30s (PAYDISPATCH_RAIL_TIMEOUT) is more than half of --relay-reaper-timeout"},
		{"relay argument", []string{"relay", "now"}, rail, `unexpected argument "now": relay takes only flags`},
		{"rail-sim addr", []string{"rail-sim", "--http-addr", "9090"}, nil, `invalid --http-addr "9090": want host:port, e.g. 127.0.0.1:9090`},
		{"rail-sim addr env", []string{"rail-sim"}, map[string]string{"PAYDISPATCH_RAIL_SIM_ADDR": "nowhere"}, `invalid PAYDISPATCH_RAIL_SIM_ADDR "nowhere"`},
		{"rail-sim fraction", []string{"rail-sim", "--retryable-fraction", "2"}, nil, `invalid --retryable-fraction "2": want a fraction from 0 to 1`},
		{"rail-sim latency env", []string{"rail-sim"}, map[string]string{"PAYDISPATCH_RAIL_SIM_LATENCY": "slow"}, `invalid PAYDISPATCH_RAIL_SIM_LATENCY "slow"`},
		{"rail-sim argument", []string{"rail-sim", "go"}, nil, `unexpected argument "go": rail-sim takes only flags`},
		{"rail-sim cutoffs", []string{"rail-sim", "--cutoffs", "SEPA=16:00@Nowhere"}, nil, `invalid --cutoffs "SEPA=16:00@Nowhere": rail SEPA: timeZone "Nowhere"`},
		{"rail-sim cutoffs env", []string{"rail-sim"}, map[string]string{"PAYDISPATCH_RAIL_SIM_CUTOFFS": "SEPA"}, `invalid PAYDISPATCH_RAIL_SIM_CUTOFFS "SEPA": "SEPA": want NAME=HH:MM:SS[@Zone]`},
		{"relay debtor agent", []string{"relay", "--pacs008-debtor-agent-bic", "bank"}, rail, `invalid --pacs008-debtor-agent-bic "bank": want a BIC`},
		{"serve charge bearer", []string{"serve"}, map[string]string{"PAYDISPATCH_PACS008_CHARGE_BEARER": "x"}, `invalid PAYDISPATCH_PACS008_CHARGE_BEARER "x": want SLEV, SHAR, DEBT or CRED`},
		{"serve rail url", []string{"serve", "--rail-url", "ftp://rail"}, nil, `invalid --rail-url "ftp://rail"`},
		{"serve nothing wakes the relayer", []string{"serve", "--relay-notify=false", "--relay-poll-interval", "0"}, nil, "leaves nothing to wake the relayer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(tt.args, tt.env)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			last := strings.TrimSpace(stderr)
			if i := strings.LastIndex(last, "\n"); i >= 0 {
				last = last[i+1:] // the flag package prints its usage before
			}
			if !strings.Contains(last, tt.want) {
				t.Fatalf("last stderr line %q does not contain %q", last, tt.want)
			}
		})
	}
}

// TestRelayHelp: --help describes every flag and its variable.
func TestRelayHelp(t *testing.T) {
	t.Parallel()
	for cmd, wants := range map[string][]string{
		"relay": {"-rail-url", "PAYDISPATCH_RAIL_URL", "-rail-timeout", "PAYDISPATCH_RAIL_TIMEOUT", "-relay-notify", "PAYDISPATCH_RELAY_NOTIFY",
			"-relay-poll-interval", "PAYDISPATCH_RELAY_POLL_INTERVAL", "-relay-debounce", "PAYDISPATCH_RELAY_DEBOUNCE",
			"-relay-concurrency", "PAYDISPATCH_RELAY_CONCURRENCY", "-relay-max-attempts", "PAYDISPATCH_RELAY_MAX_ATTEMPTS",
			"-relay-backoff-base", "PAYDISPATCH_RELAY_BACKOFF_BASE", "-relay-backoff-max", "PAYDISPATCH_RELAY_BACKOFF_MAX",
			"-relay-reaper-timeout", "PAYDISPATCH_RELAY_REAPER_TIMEOUT", "-metrics-addr", "PAYDISPATCH_METRICS_ADDR", "DATABASE_URL",
			"-pacs008-debtor-agent-bic", "PAYDISPATCH_PACS008_DEBTOR_AGENT_BIC", "-pacs008-charge-bearer", "PAYDISPATCH_PACS008_CHARGE_BEARER", "CUTOFF_MISSED"},
		"rail-sim": {"-http-addr", "PAYDISPATCH_RAIL_SIM_ADDR", "127.0.0.1:9090", "-latency", "PAYDISPATCH_RAIL_SIM_LATENCY", "-jitter",
			"PAYDISPATCH_RAIL_SIM_JITTER", "-retryable-fraction", "PAYDISPATCH_RAIL_SIM_RETRYABLE_FRACTION", "-terminal-fraction",
			"PAYDISPATCH_RAIL_SIM_TERMINAL_FRACTION", "-timeout-fraction", "PAYDISPATCH_RAIL_SIM_TIMEOUT_FRACTION", "-seed",
			"PAYDISPATCH_RAIL_SIM_SEED", "GET /ledger", "-cutoffs", "PAYDISPATCH_RAIL_SIM_CUTOFFS", "/rails/NAME", "PUT /admin/rails/NAME"},
		"serve": {"PAYDISPATCH_RAIL_URL", "PAYDISPATCH_RELAY_POLL_INTERVAL", "rail simulator in-process"},
	} {
		code, stdout, _ := runCLI([]string{cmd, "--help"}, nil)
		for _, want := range wants {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("%s --help (exit %d) does not mention %s", cmd, code, want)
			}
		}
	}
	code, stdout, _ := runCLI([]string{"help"}, nil)
	if code != 0 || !strings.Contains(stdout, "  relay ") || !strings.Contains(stdout, "  rail-sim ") {
		t.Errorf("help does not list relay and rail-sim:\n%s", stdout)
	}
}

// TestRelayCommand runs rail-sim and relay as the commands do (in this
// process): an instruction enqueued reaches the rail once, the relay's
// /metrics and /healthz answer, and both stop cleanly when their context
// ends (SIGTERM).
func TestRelayCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	simAddr, metricsAddr := freeAddr(t), freeAddr(t)
	sim := runCommand(t, []string{"rail-sim", "--http-addr", simAddr}, nil)
	waitHTTP(t, "http://"+simAddr+"/healthz")
	relay := runCommand(t, []string{"relay", "--metrics-addr", metricsAddr, "--relay-poll-interval", "100ms"},
		map[string]string{"DATABASE_URL": dbURL, "PAYDISPATCH_RAIL_URL": "http://" + simAddr})
	waitHTTP(t, "http://"+metricsAddr+"/healthz")

	pool, err := postgres.NewPool(ctx, dbURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, _, _, err := outbox.Enqueue(ctx, tx, railInstruction("bank-a", 1, rail.RailPacs008))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var l railsim.LedgerView
	waitUntil(t, 30*time.Second, func() bool { getLedger(t, "http://"+simAddr, &l); return l.Unique == 1 })
	if l.Received != 1 || l.Duplicates != 0 {
		t.Fatalf("ledger %+v", l)
	}
	waitUntil(t, 10*time.Second, func() bool {
		body := get(t, "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, "paydispatch_outbox_attempts_total{state=\"DISPATCHED\"} 1") &&
			strings.Contains(body, "paydispatch_outbox_pending_depth 0")
	})

	for _, c := range []*inProcess{relay, sim} {
		c.cancel()
		select {
		case <-c.done:
			if c.code != 0 {
				t.Fatalf("%s exited %d:\n%s", c.name, c.code, c.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not stop", c.name)
		}
	}
	if !strings.Contains(sim.stderr.String(), "rail simulator listening") || !strings.Contains(relay.stderr.String(), "outbox relayer started") {
		t.Fatalf("logs:\n%s\n%s", sim.stderr, relay.stderr)
	}
}

// inProcess is a command run in this process until cancel.
type inProcess struct {
	name   string
	cancel func()
	done   chan struct{} // closed when run returned
	code   int           // its exit code, once done
	stderr *syncWriter
}

func runCommand(t *testing.T, args []string, env map[string]string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &inProcess{name: args[0], cancel: cancel, done: make(chan struct{}), stderr: &syncWriter{w: &bytes.Buffer{}}}
	e := &environment{stdout: io.Discard, stderr: c.stderr, getenv: func(k string) string { return env[k] }}
	go func() {
		defer close(c.done)
		c.code = run(ctx, e, args)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
		}
	})
	return c
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	waitUntil(t, 30*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func getLedger(t *testing.T, base string, l *railsim.LedgerView) {
	t.Helper()
	*l = railsim.LedgerView{}
	if err := json.Unmarshal([]byte(get(t, base+"/ledger")), l); err != nil {
		t.Fatal(err)
	}
}

// railReceipts is the simulator's ledger with every instruction each rail
// received (its key, arrival and value date).
func railReceipts(t *testing.T, base string) railsim.LedgerView {
	t.Helper()
	var l railsim.LedgerView
	if err := json.Unmarshal([]byte(get(t, base+"/ledger?instructions=true")), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// railInstruction is the n-th instruction of a participant, as the
// payment domain would enqueue it: a rail.Instruction payload.
func railInstruction(participant string, n int, railType string) outbox.Instruction {
	id := fmt.Sprintf("%s-%05d", participant, n)
	payload, _ := json.Marshal(rail.Instruction{
		PaymentID: "pay-" + id, EndToEndID: "E2E-" + id, Amount: fmt.Sprintf("%d.%02d", 1+n%500, n%100), Currency: "EUR",
		ValueDate: "2026-11-23",
		Debtor:    rail.Debtor{Name: "ACME Corp", Account: "ACC-1", BIC: "NWBKGB2L"},
		Creditor:  rail.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		TenantID:  "acme",
	})
	return outbox.Instruction{InstructionID: "ins-" + id, ParticipantID: participant, IdempotencyKey: "key-" + id,
		RailType: railType, Payload: payload}
}
