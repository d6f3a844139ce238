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

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestRelayKilledMidFlight is the outbox's kill test
// (outboxtest.KillScenario) with everything real: three `paydispatch
// relay` processes send, through the JSON and pacs.008 adapters
// alternately, to a `paydispatch rail-sim` process that answers 2 % of
// sends "busy" and leaves 0.2 % of accepted ones without an answer
// (unknown outcomes, settled by inquiry). The simulator's ledger (GET
// /ledger) is the scenario's record of deliveries; besides, it must have
// refused nothing, and the surviving processes stop cleanly on SIGTERM.
func TestRelayKilledMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs four processes")
	}
	t.Parallel()
	dbURL := pgtest.URL(t)
	pool, err := postgres.NewPool(context.Background(), dbURL, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	simAddr := freeAddr(t)
	sim := startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--retryable-fraction", "0.02",
		"--timeout-fraction", "0.002", "--seed", "7", "--log-level", "warn"}, nil)
	simURL := "http://" + simAddr
	waitHTTP(t, simURL+"/healthz")
	defer func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", sim.name, sim.stderr)
		}
	}()

	relays := make([]*bgProc, 3)
	var l railsim.LedgerView
	victim := outboxtest.KillScenario{
		Pool: pool,
		StartRelayer: func(t *testing.T, i int) outboxtest.Relayer {
			relays[i] = startProc(t, fmt.Sprintf("relay-%d", i), []string{"relay", "--metrics-addr", "127.0.0.1:0",
				"--relay-poll-interval", "100ms", "--relay-debounce", "5ms", "--relay-concurrency", "32",
				"--rail-timeout", "1s", "--relay-reaper-timeout", "3s", "--relay-backoff-base", "20ms", "--relay-backoff-max", "200ms",
				"--relay-max-attempts", "50", "--db-max-conns", "10", "--log-level", "warn"},
				[]string{"DATABASE_URL=" + dbURL, "PAYDISPATCH_RAIL_URL=" + simURL})
			return relays[i]
		},
		Instruction: func(participant string, n int) outbox.Instruction {
			if n%2 == 0 {
				return railInstruction(participant, n, rail.RailPacs008)
			}
			return railInstruction(participant, n, rail.RailSEPAJSON)
		},
		Ledger: func(t *testing.T) outboxtest.Ledger {
			getLedger(t, simURL, &l)
			return scenarioLedger(l)
		},
		DrainTimeout: 90 * time.Second,
	}.Run(t)

	if l.Refused != 0 || l.Malformed != 0 {
		t.Fatalf("ledger: %+v", l)
	}
	t.Logf("rail: busy answers %d, accepted then cut off %d, inquiries %d", l.RetryableAnswers, l.TimeoutsAfterAccept, l.Inquiries)

	// The survivors stop cleanly on SIGTERM.
	for i, p := range append(relays, sim) {
		if i == victim {
			continue
		}
		if err := p.terminate(); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.name, err)
		}
	}
}

// scenarioLedger is the simulator's ledger in the scenario's terms.
func scenarioLedger(l railsim.LedgerView) outboxtest.Ledger {
	out := outboxtest.Ledger{Received: l.Received, Unique: l.Unique, Duplicates: l.Duplicates,
		Participants: make(map[string]outboxtest.LedgerParticipant, len(l.Participants))}
	for id, p := range l.Participants {
		out.Participants[id] = outboxtest.LedgerParticipant{Unique: p.Unique, Duplicates: p.Duplicates, Highest: p.Highest,
			Gaps: p.Gaps, Reordered: p.Reordered, SequenceReused: p.SequenceReused}
	}
	return out
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

func (p *bgProc) Name() string { return p.name }
func (p *bgProc) Log() string  { return p.stderr.String() }

// ClaimedBy: a relayer's default id is host-pid-random.
func (p *bgProc) ClaimedBy() string { return "%-" + strconv.Itoa(p.cmd.Process.Pid) + "-%" }

func (p *bgProc) Kill() {
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
		p.Kill()
		return fmt.Errorf("no exit within 30 s of SIGTERM")
	}
}
