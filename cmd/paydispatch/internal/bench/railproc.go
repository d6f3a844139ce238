package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// railProcess is the rail simulator run as its own process of this
// binary (`paydispatch rail-sim`), as a deployment's rail is its own: the
// simulator keeps a record of every instruction it took, which a real
// rail holds on its side, so with it in this process the bench's
// resident set and CPU count the counterparty's bookkeeping as the
// product's.
type railProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr bytes.Buffer
}

// startRailProcess starts the simulator on a free loopback port and waits
// until it answers.
func startRailProcess(ctx context.Context) (*railProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("rail process: %w", err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, fmt.Errorf("rail process: %w", err)
	}
	p := &railProcess{url: "http://" + addr}
	p.cmd = exec.Command(exe, "rail-sim", "--http-addr", addr, "--log-level", "warn")
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("rail process: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/ledger", nil)
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("rail process: %w", err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("rail process: not answering on %s after 30 s: %s", addr, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// peakRSS is the simulator's largest resident set so far, in bytes (0:
// unknown).
func (p *railProcess) peakRSS() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	return parseStatusKiB(string(b), "VmHWM") * 1024
}

// stop ends the simulator (SIGTERM, then SIGKILL after 10 s).
func (p *railProcess) stop() {
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

// freeLoopbackAddr is a loopback address with a port free a moment ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
