package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/paydispatch/paydispatch/screening"
)

// screenProcess is the screening simulator run as its own process of
// this binary (`paydispatch screen-sim`), as a deployment's screening
// service is its own: the drain's CPU per payment is then paydispatch's
// calls, not the simulator's answers.
type screenProcess struct {
	cmd    *exec.Cmd
	base   string
	stderr bytes.Buffer
}

// url is the endpoint Phase A calls.
func (p *screenProcess) url() string { return p.base + "/v1/screen" }

// startScreenProcess starts the simulator, answering after delay, on a
// free loopback port and waits until it answers.
func startScreenProcess(ctx context.Context, delay time.Duration) (*screenProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("screening process: %w", err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, fmt.Errorf("screening process: %w", err)
	}
	p := &screenProcess{base: "http://" + addr}
	p.cmd = exec.Command(exe, "screen-sim", "--http-addr", addr, "--delay", delay.String(), "--log-level", "warn")
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("screening process: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := p.stats(ctx); err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("screening process: not answering on %s after 30 s: %s", addr, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stats are what the simulator answered so far.
func (p *screenProcess) stats(ctx context.Context) (screening.SimStats, error) {
	var st screening.SimStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /stats: HTTP %d", resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// stop ends the simulator (SIGTERM, then SIGKILL after 10 s).
func (p *screenProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
