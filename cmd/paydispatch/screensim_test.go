package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestScreeningBadInput: the screening settings and the simulator's
// flags refuse bad values with exit 2 and one line naming them.
func TestScreeningBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"serve screening url", []string{"serve", "--screening-url", "screen:9092"}, nil, `invalid --screening-url "screen:9092"`},
		{"worker screening batch", []string{"worker", "--role", "init"}, map[string]string{"PAYDISPATCH_SCREENING_BATCH": "0"}, `invalid PAYDISPATCH_SCREENING_BATCH "0"`},
		{"screen-sim fraction", []string{"screen-sim", "--hit-fraction", "2"}, nil, `invalid --hit-fraction "2": want a fraction from 0 to 1`},
		{"screen-sim fractions together", []string{"screen-sim", "--hit-fraction", "0.7", "--error-fraction", "0.7"}, nil, "hitFraction + errorFraction is 1.4"},
		{"screen-sim delay", []string{"screen-sim", "--delay", "soon"}, nil, `invalid --delay "soon"`},
		{"screen-sim addr", []string{"screen-sim", "--http-addr", "9092"}, nil, `invalid --http-addr "9092": want host:port`},
		{"bench drain screening delay", []string{"bench", "drain", "--screening-delay", "0s"}, nil, `invalid --screening-delay "0s": want a delay a call above 0`},
		{"screen-sim stray argument", []string{"screen-sim", "now"}, nil, `unexpected argument "now": screen-sim takes only flags`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(tt.args, tt.env)
			last := strings.TrimSpace(stderr)
			if i := strings.LastIndex(last, "\n"); i >= 0 {
				last = last[i+1:]
			}
			if code != 2 || !strings.Contains(last, tt.want) {
				t.Fatalf("exit %d, last stderr line %q, want 2 and %q", code, last, tt.want)
			}
		})
	}
}

// TestScreenSimCommand: screen-sim answers the protocol with its named
// hits after its delay, until it is stopped.
func TestScreenSimCommand(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var out, errOut bytes.Buffer
		done <- run(ctx, &environment{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }},
			[]string{"screen-sim", "--http-addr", addr, "--delay", "100ms", "--hit-names", "Ivan Listed, ACME Shell", "--log-level", "warn"})
	}()
	url := "http://" + addr + "/v1/screen"
	body := `{"payments":[{"id":"k1","tenantId":"acme","paymentId":"p1","debtorAccount":"A","creditorName":"acme  shell","amount":"1","currency":"EUR"},` +
		`{"id":"k2","tenantId":"acme","paymentId":"p2","debtorAccount":"A","creditorName":"Jane Doe","amount":"1","currency":"EUR"}]}`
	var resp *http.Response
	var took time.Duration
	for deadline := time.Now().Add(10 * time.Second); ; {
		start := time.Now()
		resp, err = http.Post(url, "application/json", strings.NewReader(body))
		took = time.Since(start)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Results []struct{ ID, Verdict, List string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if len(a.Results) != 2 || a.Results[0].Verdict != "HIT" || a.Results[0].List != "SIM-NAMES" || a.Results[1].Verdict != "CLEAR" {
		t.Fatalf("answered %+v, want k1 a hit and k2 clear", a.Results)
	}
	if took < 100*time.Millisecond {
		t.Fatalf("answered in %s, before its delay", took)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}
