package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestCancelFileMidDrain: a file of 3,000 payments paced at 50/s is
// cancelled 10 s after its instant, through the API, with the rail
// simulator in a process of its own. Checked from outside: every payment
// ends DELIVERED (executed before the cancel) or CANCELLED; the rail's
// ledger holds exactly the delivered ones, each once; no execution began
// after the cancel's answer; the account lost exactly the delivered
// ones' amounts; verify finds nothing. Meanwhile a tenant's webhook
// endpoint, answering 500 to one delivery in five, checks every
// delivery's signature and receives each payment's events complete and
// in order, ending at its final status.
func TestCancelFileMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, about two minutes")
	}
	simAddr := freeAddr(t)
	startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--log-level", "warn"}, nil)
	simURL := "http://" + simAddr
	waitHTTP(t, simURL+"/healthz")
	data, addr := dataDir(t), freeAddr(t)
	// Tenant labels on: the dashboard's share-by-tenant panel reads them
	// (alertMetricsExist).
	startServeOn(t, data, addr, 0, "--rail-url", simURL, "--webhook-allow-http", "--webhook-allow-private", "--metrics-tenant-labels",
		"--webhook-backoff-base", "20ms", "--webhook-backoff-max", "200ms", "--webhook-per-endpoint", "64")
	base := "http://" + addr
	openAccount(t, addr, "ACC-1", "acme", "100000.00")
	hooks := newHookReceiver(t)
	var ep struct{ ID, Secret string }
	if code := postJSON(t, base+"/admin/webhooks", "application/json", `{"tenantId":"acme","url":"`+hooks.URL+`"}`, &ep); code != http.StatusCreated {
		t.Fatalf("register the webhook endpoint: %d", code)
	}
	hooks.secret.Store(&ep.Secret)
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
	alertMetricsExist(t, base)

	// The list of the file's cancelled payments has each of them once.
	listed := map[string]bool{}
	for cursor := ""; ; {
		var page struct {
			Payments []struct{ PaymentID, Status string }
			Next     string
		}
		if err := json.Unmarshal([]byte(get(t, base+"/v1/payments?tenantId=acme&status=CANCELLED&batchId="+sub.BatchID+"&limit=1000&cursor="+cursor)), &page); err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Payments {
			if p.Status != "CANCELLED" || listed[p.PaymentID] {
				t.Fatalf("listed %+v (again: %t)", p, listed[p.PaymentID])
			}
			listed[p.PaymentID] = true
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(listed) != progress.Cancelled {
		t.Fatalf("the list has %d of the file's %d cancelled payments", len(listed), progress.Cancelled)
	}

	// Every payment's events, complete and in order, to its final status.
	final := map[string]string{}
	rows, err := conn.Query(context.Background(), `SELECT external_id, status FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		final[id] = st
	}
	drained := time.Now()
	for why := hooks.complete(final); why != ""; why = hooks.complete(final) {
		if time.Since(drained) > 3*time.Minute {
			t.Fatalf("webhooks after 3 min: %s", why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("every payment's webhooks complete %v after the check began", time.Since(drained).Round(time.Millisecond))
	if hooks.badSignatures.Load() != 0 || hooks.refused.Load() == 0 {
		t.Fatalf("%d deliveries failed their signature; %d were answered 500", hooks.badSignatures.Load(), hooks.refused.Load())
	}
	t.Logf("webhooks: %d events of %d payments accepted, %d requests answered 500 and retried", hooks.events(), len(final), hooks.refused.Load())
}

// hookReceiver is a tenant's webhook endpoint: it verifies each
// delivery's signature, answers 500 to every fifth request, and keeps
// each payment's accepted events (once each) in the order they came.
type hookReceiver struct {
	*httptest.Server
	secret        atomic.Pointer[string]
	requests      atomic.Int64
	refused       atomic.Int64
	badSignatures atomic.Int64

	mu       sync.Mutex
	seen     map[string]bool
	payments map[string][]hookEvent
}

type hookEvent struct {
	ID   string
	Type string
	Data struct{ PaymentID, Status, PreviousStatus string }
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{seen: map[string]bool{}, payments: map[string][]hookEvent{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		secret := h.secret.Load()
		if secret == nil || webhook.Verify(r.Header.Get(webhook.SignatureHeader), body, *secret, webhook.DefaultTolerance, time.Now()) != nil {
			h.badSignatures.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if h.requests.Add(1)%5 == 0 {
			h.refused.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var e hookEvent
		if err := json.Unmarshal(body, &e); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		if !h.seen[e.ID] { // at least once: a repeat is acknowledged, not kept
			h.seen[e.ID] = true
			h.payments[e.Data.PaymentID] = append(h.payments[e.Data.PaymentID], e)
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

// complete says what is missing or out of order ("" when nothing is):
// each payment's events chain from RECEIVED, each from the one before,
// and end at its final status.
func (h *hookReceiver) complete(final map[string]string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, status := range final {
		prev := "RECEIVED"
		for _, e := range h.payments[id] {
			if e.Data.PreviousStatus != prev || e.Type != "payment."+strings.ToLower(e.Data.Status) {
				return fmt.Sprintf("payment %s: event %+v after %s", id, e, prev)
			}
			prev = e.Data.Status
		}
		if prev != status {
			return fmt.Sprintf("payment %s: events end at %s, its status is %s", id, prev, status)
		}
	}
	return ""
}

func (h *hookReceiver) events() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
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
