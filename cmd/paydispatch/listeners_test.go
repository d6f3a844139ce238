package main

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/listeners"
)

// TestServeListenersCheckTheHost: every TCP listener a serve process
// holds (the API, profiling, Temporal's Web UI, the embedded rail
// simulator, and the embedded Temporal's gRPC and membership ports)
// either refuses a browser's request for a foreign name (a DNS name
// rebound to 127.0.0.1) with a 403, or does not speak HTTP/1 at all
// (gRPC, which a page cannot read). Every address serve logs is among
// them. And /metrics, which answers without a token, names no tenant
// once a tenant's payment has executed.
func TestServeListenersCheckTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	data, addr, pprofAddr := dataDir(t), freeAddr(t), freeAddr(t)
	p := startServeOn(t, data, addr, 0, "--pprof-addr", pprofAddr)
	const tenant = "tenant-xyzzy"
	openAccount(t, addr, "ACC-L", tenant, "100.00")
	body := fmt.Sprintf(`{"paymentId":"l-1","tenantId":%q,"debtorAccount":"ACC-L","amount":"1.00","currency":"EUR",
		"creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`, tenant, time.Now().UTC().Format(time.RFC3339))
	if resp := postRetrying(t, "http://"+addr+"/v1/payments", "application/json", body); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST the payment: %d", resp.StatusCode)
	}
	waitUntil(t, 90*time.Second, func() bool {
		return strings.Contains(get(t, "http://"+addr+"/v1/payments/l-1?tenantId="+tenant), `"DELIVERED"`)
	})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "none") // no token: the bearer transport adds none
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(metrics), "paydispatch_dispatch_execution_lag_seconds") {
		t.Fatalf("GET /metrics without a token: %d\n%.500s", resp.StatusCode, metrics)
	}
	if strings.Contains(string(metrics), tenant) {
		for line := range strings.SplitSeq(string(metrics), "\n") {
			if strings.Contains(line, tenant) {
				t.Errorf("/metrics, without a token, names tenant %s: %s", tenant, line)
			}
		}
	}

	held, err := listeners.Of(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	answers := make([]listeners.Answer, len(held))
	var wg sync.WaitGroup
	for i, a := range held {
		wg.Go(func() { answers[i] = listeners.Probe(a, "evil.example", "/", 5*time.Second) })
	}
	wg.Wait()
	byPort := map[uint16]listeners.Answer{}
	for i, a := range held {
		byPort[a.Port()] = answers[i]
		switch ans := answers[i]; ans.Status {
		case http.StatusForbidden:
			t.Logf("%v: 403 to Host evil.example", a)
		case 0:
			t.Logf("%v: no HTTP/1 (gRPC or Temporal's membership)", a)
		default:
			t.Errorf("%v answered a request for Host evil.example: %d\n%.200s", a, ans.Status, ans.Body)
		}
	}
	// Every address serve announces (the API, profiling, the Web UI and
	// the rail simulator it logs) is one of them, and refuses.
	logged := []string{addr, pprofAddr}
	for _, m := range regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindAllStringSubmatch(p.stderr.String(), -1) {
		logged = append(logged, m[1])
	}
	slices.Sort(logged)
	logged = slices.Compact(logged)
	if len(logged) < 4 {
		t.Errorf("serve logged %v: want the API, profiling, the Web UI and the rail simulator", logged)
	}
	for _, l := range logged {
		ap := netip.MustParseAddrPort(l)
		if ans, ok := byPort[ap.Port()]; !ok || ans.Status != http.StatusForbidden {
			t.Errorf("%s, announced by serve: held %t, answered %d to Host evil.example, want 403", l, ok, ans.Status)
		}
	}
}
