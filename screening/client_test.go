package screening_test

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

	"github.com/paydispatch/paydispatch/screening"
)

// subjects are n payments with ids s-0, s-1, ….
func subjects(n int) []screening.Subject {
	out := make([]screening.Subject, n)
	for i := range out {
		out[i] = screening.Subject{ID: fmt.Sprintf("s-%d", i), TenantID: "acme", PaymentID: fmt.Sprintf("p-%d", i),
			CreditorName: fmt.Sprintf("Creditor %d", i), Amount: "1.00", Currency: "EUR"}
	}
	return out
}

// callRecord is what a test service saw of its calls.
type callRecord struct {
	mu       sync.Mutex
	sizes    []int
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

// service answers each call with answer(ids) after delay, recording it.
func service(t *testing.T, rec *callRecord, delay time.Duration, answer func(ids []string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rec.inFlight.Add(1)
		defer rec.inFlight.Add(-1)
		for {
			m := rec.maxSeen.Load()
			if n <= m || rec.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		var req struct {
			Payments []map[string]any `json:"payments"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ids := make([]string, len(req.Payments))
		for i, p := range req.Payments {
			ids[i], _ = p["id"].(string)
		}
		rec.mu.Lock()
		rec.sizes = append(rec.sizes, len(ids))
		rec.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, answer(ids))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// verdicts answers each id with the verdict by(id).
func verdicts(by func(id string) string) func([]string) string {
	return func(ids []string) string {
		items := make([]string, len(ids))
		for i, id := range ids {
			items[i] = fmt.Sprintf(`{"id":%q,"verdict":%q,"list":"L","reason":"r"}`, id, by(id))
		}
		return `{"results":[` + strings.Join(items, ",") + `]}`
	}
}

func allClear(string) string { return "CLEAR" }

// TestScreenBatches: a Screen is split into calls of at most BatchSize,
// at most MaxInFlight at once, and each answer lands on its payment.
func TestScreenBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, batch, inFlight int
		wantCalls          int
	}{
		{n: 1, batch: 500, inFlight: 4, wantCalls: 1},
		{n: 500, batch: 500, inFlight: 4, wantCalls: 1},
		{n: 1201, batch: 500, inFlight: 4, wantCalls: 3},
		{n: 2500, batch: 100, inFlight: 2, wantCalls: 25},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n, "/", tt.batch, "/", tt.inFlight), func(t *testing.T) {
			t.Parallel()
			rec := &callRecord{}
			// Every third payment hits: the answers must come back in
			// the payments' order, whichever call ends first.
			url := service(t, rec, 20*time.Millisecond, verdicts(func(id string) string {
				var i int
				_, _ = fmt.Sscanf(id, "s-%d", &i)
				if i%3 == 0 {
					return "HIT"
				}
				return "CLEAR"
			}))
			c, err := screening.NewClient(screening.ClientConfig{URL: url, BatchSize: tt.batch, MaxInFlight: tt.inFlight})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Screen(context.Background(), subjects(tt.n))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.sizes) != tt.wantCalls {
				t.Fatalf("%d calls, want %d", len(rec.sizes), tt.wantCalls)
			}
			for _, s := range rec.sizes {
				if s > tt.batch {
					t.Fatalf("a call of %d payments, above the batch size %d", s, tt.batch)
				}
			}
			if m := int(rec.maxSeen.Load()); m > tt.inFlight {
				t.Fatalf("%d calls in flight at once, above %d", m, tt.inFlight)
			}
			for i, r := range res {
				want := screening.Clear
				if i%3 == 0 {
					want = screening.Hit
				}
				if r.Verdict != want {
					t.Fatalf("payment %d: %+v, want %s", i, r, want)
				}
			}
		})
	}
}

// TestScreenFailures: whatever goes wrong with a call, its payments are
// ERROR with the reason, never CLEAR, and the others keep their answers.
func TestScreenFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		delay      time.Duration
		answer     func(ids []string) string
		status     int
		wantReason string
	}{
		{"timeout", time.Second, verdicts(allClear), 0, "timeout after 100ms"},
		{"not 200", 0, verdicts(allClear), http.StatusServiceUnavailable, "HTTP 503"},
		{"not JSON", 0, func([]string) string { return "<html>" }, 0, "malformed answer"},
		{"an unknown member", 0, func(ids []string) string {
			return `{"results":[{"id":"` + ids[0] + `","verdict":"CLEAR","score":1}]}`
		}, 0, "malformed answer"},
		{"a verdict of the wrong type", 0, func(ids []string) string {
			return `{"results":[{"id":"` + ids[0] + `","verdict":true}]}`
		}, 0, "malformed answer"},
		{"trailing data", 0, func(ids []string) string { return verdicts(allClear)(ids) + `{}` }, 0, "malformed answer"},
		{"an id not asked about", 0, func(ids []string) string {
			return strings.Replace(verdicts(allClear)(ids), `]}`, `,{"id":"other","verdict":"CLEAR"}]}`, 1)
		}, 0, "not asked about"},
		{"too long", 0, func([]string) string { return `{"results":[` + strings.Repeat(" ", 200<<10) + `]}` }, 0, "answer longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var url string
			if tt.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tt.status) }))
				t.Cleanup(srv.Close)
				url = srv.URL
			} else {
				url = service(t, &callRecord{}, tt.delay, tt.answer)
			}
			c, err := screening.NewClient(screening.ClientConfig{URL: url, Timeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := c.Screen(context.Background(), subjects(3))
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 900*time.Millisecond {
				t.Fatalf("took %s: the timeout did not cut the call", took)
			}
			for i, r := range res {
				if r.Verdict != screening.Error || !strings.Contains(r.Reason, tt.wantReason) {
					t.Fatalf("payment %d: %+v, want ERROR naming %q", i, r, tt.wantReason)
				}
			}
		})
	}
}

// TestScreenPerPayment: what is wrong with one payment's answer makes
// that payment ERROR and leaves the others' verdicts.
func TestScreenPerPayment(t *testing.T) {
	t.Parallel()
	answer := func(ids []string) string {
		// s-0 CLEAR, s-1 HIT, s-2 an unknown verdict, s-3 twice, s-4
		// ERROR, s-5 missing.
		return `{"results":[{"id":"s-0","verdict":"CLEAR"},{"id":"s-1","verdict":"HIT","list":"EU","reason":"name\u0000match"},` +
			`{"id":"s-2","verdict":"MAYBE"},{"id":"s-3","verdict":"CLEAR"},{"id":"s-3","verdict":"HIT"},` +
			`{"id":"s-4","verdict":"ERROR","reason":"list offline"}]}`
	}
	c, err := screening.NewClient(screening.ClientConfig{URL: service(t, &callRecord{}, 0, answer)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Screen(context.Background(), subjects(6))
	if err != nil {
		t.Fatal(err)
	}
	want := []screening.Result{
		{Verdict: screening.Clear},
		{Verdict: screening.Hit, List: "EU", Reason: "name match"},
		{Verdict: screening.Error, Reason: `unknown verdict "MAYBE"`},
		{Verdict: screening.Error, Reason: "answered more than once"},
		{Verdict: screening.Error, Reason: "the service's ERROR: list offline"},
		{Verdict: screening.Error, Reason: "not answered"},
	}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("payment %d: %+v, want %+v", i, res[i], want[i])
		}
	}
}

// TestScreenCancelled: a context ended while calls wait is the caller's
// error, not an ERROR verdict.
func TestScreenCancelled(t *testing.T) {
	t.Parallel()
	c, err := screening.NewClient(screening.ClientConfig{URL: service(t, &callRecord{}, time.Second, verdicts(allClear)), BatchSize: 1, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if res, err := c.Screen(ctx, subjects(3)); err == nil {
		t.Fatalf("answered %+v after the context ended", res)
	}
}

func TestNewClientRefuses(t *testing.T) {
	t.Parallel()
	for _, cfg := range []screening.ClientConfig{
		{URL: ""}, {URL: "ftp://x/y"}, {URL: "http://"}, {URL: "http://x", BatchSize: -1},
		{URL: "http://x", BatchSize: screening.MaxBatchSize + 1}, {URL: "http://x", Timeout: -time.Second}, {URL: "http://x", MaxInFlight: -1},
	} {
		if _, err := screening.NewClient(cfg); err == nil {
			t.Errorf("NewClient(%+v) took it", cfg)
		}
	}
}
