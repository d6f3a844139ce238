package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/railsim"
)

// TestCancelFileMidDrain: a file of 3,000 payments paced at 50/s is
// cancelled 10 s after its instant, through the API, with the rail
// simulator in a process of its own. Checked from outside: every payment
// ends DELIVERED (executed before the cancel) or CANCELLED; the rail's
// ledger holds exactly the delivered ones, each once; no execution began
// after the cancel's answer; the account lost exactly the delivered
// ones' amounts; verify finds nothing.
func TestCancelFileMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, about two minutes")
	}
	simAddr := freeAddr(t)
	startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--log-level", "warn"}, nil)
	simURL := "http://" + simAddr
	waitHTTP(t, simURL+"/healthz")
	data, addr := dataDir(t), freeAddr(t)
	startServeOn(t, data, addr, 0, "--rail-url", simURL)
	base := "http://" + addr
	openAccount(t, addr, "ACC-1", "acme", "100000.00")
	if resp := postRetrying(t, base+"/admin/rate-limit/config", "application/json",
		`{"configName":"fifty","maxPerWindow":50,"windowSize":"PT1S"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("rate-limit config: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPatch, base+"/admin/dispatch/config/PAYMENT", strings.NewReader(`{"pacing_config":"fifty"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pace PAYMENT: %v %v", resp, err)
	}

	const n = 3000
	instant := time.Now().Add(8 * time.Second).UTC().Truncate(time.Second)
	var file strings.Builder
	for i := range n {
		fmt.Fprintf(&file, `{"paymentId":"c-%04d","tenantId":"acme","debtorAccount":"ACC-1","amount":"10.00","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"requestedExecutionTime":%q}`+"\n",
			i, instant.Format(time.RFC3339))
	}
	var sub struct{ BatchID string }
	if code := postJSON(t, base+"/v1/payment-batches", "application/x-ndjson", file.String(), &sub); code != http.StatusAccepted {
		t.Fatalf("the file: %d", code)
	}

	time.Sleep(time.Until(instant.Add(10 * time.Second)))
	var res struct {
		Cancelled    int
		NotCancelled []struct {
			Status string
			Count  int
		}
	}
	code := postJSON(t, base+"/v1/payment-batches/"+sub.BatchID+"/cancel", "", "", &res)
	answered := time.Now()
	if code != http.StatusOK {
		t.Fatalf("cancel: %d", code)
	}
	t.Logf("cancelled %d, not: %+v", res.Cancelled, res.NotCancelled)

	var progress struct{ Received, Scheduled, Executing, Delivered, Failed, Returned, Cancelled, Rejected int }
	waitUntil(t, 2*time.Minute, func() bool {
		var v struct{ Progress json.RawMessage }
		if err := json.Unmarshal([]byte(get(t, base+"/v1/payment-batches/"+sub.BatchID)), &v); err != nil {
			return false
		}
		_ = json.Unmarshal(v.Progress, &progress)
		return progress.Delivered+progress.Cancelled == n
	})
	if progress.Cancelled != res.Cancelled || progress.Cancelled == 0 || progress.Delivered == 0 {
		t.Fatalf("progress %+v after the cancel answered %d cancelled", progress, res.Cancelled)
	}
	var l railsim.LedgerView
	getLedger(t, simURL, &l)
	if l.Unique != int64(progress.Delivered) || l.Duplicates != 0 || l.Refused != 0 {
		t.Fatalf("the rail's ledger %+v, %d delivered", l, progress.Delivered)
	}
	conn := embeddedConn(t, data)
	var late int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE accepted_at > $1`, answered).Scan(&late); err != nil || late != 0 {
		t.Fatalf("%d executions began after the cancel answered (%v)", late, err)
	}
	want := decimal.RequireFromString("100000").Sub(decimal.RequireFromString("10").Mul(decimal.NewFromInt(int64(progress.Delivered))))
	if got := accountBalance(t, addr, "ACC-1"); got != want.StringFixed(2) {
		t.Fatalf("ACC-1 %s, want %s for %d delivered", got, want.StringFixed(2), progress.Delivered)
	}
	verify(t, data)
}

// postJSON posts body and decodes the answer into v; it answers the
// status.
func postJSON(t *testing.T, url, contentType, body string, v any) int {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("POST %s: %d, unreadable answer: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode
}
