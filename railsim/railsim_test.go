package railsim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// client speaks the rail API by hand, so the simulator is tested without
// the adapters' own logic in between.
type client struct {
	t    *testing.T
	base string
}

func start(t *testing.T, b railsim.Behaviour) (*railsim.Simulator, client) {
	t.Helper()
	sim := railsim.New(railsim.Options{Behaviour: b})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, client{t: t, base: srv.URL}
}

func instruction(id, remittance string) rail.Instruction {
	return rail.Instruction{
		PaymentID: id, EndToEndID: "E2E-" + id, Amount: "10.00", Currency: "EUR", ValueDate: "2026-11-23",
		Debtor:         rail.Debtor{Name: "ACME", Account: "ACC-1", BIC: "NWBKGB2L"},
		Creditor:       rail.Creditor{Name: "Jane", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
		RemittanceInfo: remittance, TenantID: "acme",
	}
}

// send POSTs one JSON instruction with key, participant and sequence.
func (c client) send(key, participant string, seq int64, remittance string) (int, rail.Answer) {
	body, _ := json.Marshal(rail.JSONRequest{Instruction: instruction(key, remittance), ParticipantID: participant, SequenceID: seq})
	return c.post(rail.PathInstructions, "application/json", body, map[string]string{
		rail.HeaderIdempotencyKey: key, rail.HeaderParticipantID: participant, rail.HeaderSequenceID: strconv.FormatInt(seq, 10),
	})
}

func (c client) post(path, contentType string, body []byte, headers map[string]string) (int, rail.Answer) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return c.do(req)
}

func (c client) do(req *http.Request) (int, rail.Answer) {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a rail.Answer
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &a); err != nil {
		c.t.Fatalf("answer %d is not JSON: %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, a
}

func (c client) inquire(key string) (int, rail.Answer) {
	req, _ := http.NewRequest(http.MethodGet, c.base+rail.PathInstructions+"/"+key, nil)
	return c.do(req)
}

func (c client) getJSON(path string, v any) {
	c.t.Helper()
	resp, err := http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c client) putBehaviour(body string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, c.base+"/admin/behaviour", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestSendAndInquire(t *testing.T) {
	t.Parallel()
	_, c := start(t, railsim.Behaviour{})
	status, a := c.send("k1", "p", 1, "")
	if status != http.StatusCreated || a.Status != rail.StatusAccepted || a.Reference == "" {
		t.Fatalf("send: %d %+v", status, a)
	}
	status, again := c.send("k1", "p", 1, "")
	if status != http.StatusCreated || again.Reference != a.Reference {
		t.Fatalf("resend: %d %+v, want the original answer %+v", status, again, a)
	}
	if status, got := c.inquire("k1"); status != http.StatusOK || got.Status != rail.StatusAccepted || got.Reference != a.Reference {
		t.Fatalf("inquiry: %d %+v", status, got)
	}
	if status, got := c.inquire("never-sent"); status != http.StatusNotFound || got.Code != "NOT_FOUND" {
		t.Fatalf("inquiry of an unknown key: %d %+v", status, got)
	}
}

func TestLedgerDuplicatesGapsReordering(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{})
	// Participant a: 1, 2, 2 again (a duplicate), 5, then 4 (reordered);
	// 3 never comes (a gap). Participant b: 1 refused (a refusal takes its
	// number too, so no gap), 2 twice (a duplicate), 1 again (refused
	// again, counted once).
	for _, s := range []struct {
		key, part string
		seq       int64
		remit     string
	}{
		{"a1", "a", 1, ""}, {"a2", "a", 2, ""}, {"a2", "a", 2, ""}, {"a5", "a", 5, ""}, {"a4", "a", 4, ""},
		{"b1", "b", 1, "RAIL-REJECT:AC06"}, {"b2", "b", 2, ""}, {"b2", "b", 2, ""},
		{"b1", "b", 1, "RAIL-REJECT:AC06"},
	} {
		c.send(s.key, s.part, s.seq, s.remit)
	}
	var got railsim.LedgerView
	c.getJSON("/ledger", &got)
	want := railsim.LedgerView{
		Received: 7, Unique: 5, Duplicates: 2, Refused: 1, Gaps: 1, Reordered: 1,
		Participants: map[string]railsim.ParticipantView{
			"a": {Received: 5, Unique: 4, Duplicates: 1, Gaps: 1, Reordered: 1, Highest: 5, Taken: 4},
			"b": {Received: 2, Unique: 1, Duplicates: 1, Refused: 1, Highest: 2, Taken: 2},
		},
		Rail: railsim.DefaultRail,
	}
	// The unprefixed routes are DEFAULT's, the only rail sent to.
	want.Rails = map[string]railsim.LedgerView{railsim.DefaultRail: want}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ledger\n got %+v\nwant %+v", got, want)
	}
	if fmt.Sprint(sim.Ledger()) != fmt.Sprint(got) {
		t.Fatalf("Ledger() %+v differs from GET /ledger %+v", sim.Ledger(), got)
	}

	// A new key with a number already taken is a sequencing fault.
	c.send("a2-bis", "a", 2, "")
	if l := sim.Ledger(); l.SequenceReused != 1 || l.Participants["a"].Taken != 4 {
		t.Fatalf("sequence reuse: %+v", l.Participants["a"])
	}

	req, _ := http.NewRequest(http.MethodPost, c.base+"/ledger/reset", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if l := sim.Ledger(); l.Received != 0 || len(l.Participants) != 0 {
		t.Fatalf("after reset: %+v", l)
	}
	if status, _ := c.inquire("a1"); status != http.StatusNotFound {
		t.Fatalf("after reset the rail still knows a1: %d", status)
	}
}

// A retryable answer takes nothing: the number is not taken, the key not
// recorded, and the same key sent later is a first arrival.
func TestRetryableTakesNothing(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{RetryableFraction: 1})
	if status, a := c.send("k1", "p", 1, ""); status != http.StatusServiceUnavailable || a.Code != "RAIL_BUSY" {
		t.Fatalf("%d %+v", status, a)
	}
	if l := sim.Ledger(); l.Received != 0 || l.RetryableAnswers != 1 || l.Participants["p"].Taken != 0 {
		t.Fatalf("ledger %+v", l)
	}
	if err := sim.SetBehaviour(railsim.Behaviour{}); err != nil {
		t.Fatal(err)
	}
	if status, _ := c.send("k1", "p", 1, ""); status != http.StatusCreated {
		t.Fatalf("after recovery: %d", status)
	}
	if l := sim.Ledger(); l.Unique != 1 || l.Duplicates != 0 {
		t.Fatalf("ledger %+v", l)
	}
}

// Terminal refusals are decided by key: at a fraction of one half, a
// key's fate does not change however often it is sent, and about half the
// keys are refused.
func TestTerminalIsPerKey(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{TerminalFraction: 0.5, TerminalCode: "AM04", Seed: 7})
	first := map[string]int{}
	for i := range 40 {
		key := fmt.Sprintf("k%d", i)
		first[key], _ = c.send(key, "p", int64(i+1), "")
	}
	for key, status := range first {
		if again, a := c.send(key, "p", 1, ""); again != status || (status != http.StatusCreated && a.Code != "AM04") {
			t.Fatalf("%s: %d then %d %+v", key, status, again, a)
		}
	}
	if l := sim.Ledger(); l.Refused == 0 || l.Unique == 0 || l.Refused+l.Unique != 40 {
		t.Fatalf("ledger %+v", l)
	}
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{})
	headers := func(key string) map[string]string {
		return map[string]string{rail.HeaderIdempotencyKey: key, rail.HeaderParticipantID: "p", rail.HeaderSequenceID: "1"}
	}
	cases := []struct {
		name, path, body string
		headers          map[string]string
		recorded         bool
	}{
		{"no key", rail.PathInstructions, `{}`, map[string]string{rail.HeaderParticipantID: "p", rail.HeaderSequenceID: "1"}, false},
		{"bad sequence", rail.PathInstructions, `{}`, map[string]string{rail.HeaderIdempotencyKey: "x", rail.HeaderParticipantID: "p", rail.HeaderSequenceID: "0"}, false},
		{"json garbage", rail.PathInstructions, `{"amount":`, headers("j1"), true},
		{"json unknown field", rail.PathInstructions, `{"amount":"1.00","bogus":1}`, headers("j2"), true},
		{"pacs garbage", rail.PathPacs008, `<Document>`, headers("x1"), true},
		{"pacs as json", rail.PathPacs008, `{"Xmlns":"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.09"}`, headers("x2"), true},
	}
	for _, tc := range cases {
		status, a := c.post(tc.path, "application/json", []byte(tc.body), tc.headers)
		if status != http.StatusBadRequest || a.Code != "FF01" {
			t.Errorf("%s: %d %+v, want 400 FF01", tc.name, status, a)
			continue
		}
		if !tc.recorded {
			continue
		}
		if status, got := c.inquire(tc.headers[rail.HeaderIdempotencyKey]); status != http.StatusOK || got.Code != "FF01" {
			t.Errorf("%s: inquiry %d %+v, want the refusal kept", tc.name, status, got)
		}
	}
	if l := sim.Ledger(); l.Malformed != int64(len(cases)) || l.Refused != 4 {
		t.Fatalf("ledger %+v", l)
	}
}

// The headers and the JSON body must agree on the sequence.
func TestJSONBodyMustMatchHeaders(t *testing.T) {
	t.Parallel()
	_, c := start(t, railsim.Behaviour{})
	body, _ := json.Marshal(rail.JSONRequest{Instruction: instruction("k", ""), ParticipantID: "p", SequenceID: 2})
	status, a := c.post(rail.PathInstructions, "application/json", body, map[string]string{
		rail.HeaderIdempotencyKey: "k", rail.HeaderParticipantID: "p", rail.HeaderSequenceID: "1",
	})
	if status != http.StatusBadRequest || a.Code != "FF01" {
		t.Fatalf("%d %+v", status, a)
	}
}

func TestPacs008Endpoint(t *testing.T) {
	t.Parallel()
	_, c := start(t, railsim.Behaviour{})
	r, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: c.base}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remittance string
		status     int
		code       string
	}{
		{"INV-1", http.StatusCreated, ""},
		{"RAIL-REJECT:RC01", http.StatusUnprocessableEntity, "RC01"},
	} {
		payload, _ := json.Marshal(instruction("pay-1", tc.remittance))
		m := outbox.Message{ParticipantID: "p", SequenceID: 1, IdempotencyKey: "key-" + tc.remittance, RailType: rail.RailPacs008, Payload: payload}
		doc, err := r.Render(m)
		if err != nil {
			t.Fatal(err)
		}
		status, a := c.post(rail.PathPacs008, "application/xml", doc, map[string]string{
			rail.HeaderIdempotencyKey: m.IdempotencyKey, rail.HeaderParticipantID: "p", rail.HeaderSequenceID: "1",
		})
		if status != tc.status || a.Code != tc.code {
			t.Errorf("%s: %d %+v", tc.remittance, status, a)
		}
	}
}

// Many goroutines sending at once, with resends, over several
// participants: every count is exact.
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{})
	const participants, perParticipant = 4, 50
	var wg sync.WaitGroup
	for p := range participants {
		for seq := 1; seq <= perParticipant; seq++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("p%d-%d", p, seq)
				c.send(key, fmt.Sprintf("p%d", p), int64(seq), "")
				if seq%10 == 0 {
					c.send(key, fmt.Sprintf("p%d", p), int64(seq), "") // a resend
				}
			}()
		}
	}
	wg.Wait()
	l := sim.Ledger()
	const unique, dups = participants * perParticipant, participants * perParticipant / 10
	if l.Unique != unique || l.Duplicates != dups || l.Received != unique+dups || l.Gaps != 0 || l.Refused != 0 {
		t.Fatalf("ledger %+v", l)
	}
	for id, p := range l.Participants {
		if p.Highest != perParticipant || p.Taken != perParticipant || p.Unique != perParticipant {
			t.Errorf("%s: %+v", id, p)
		}
	}
}

// A chaos test flips the rail into misbehaviour through the admin
// endpoint and back.
func TestBehaviourAtRunTime(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{})
	var b railsim.Behaviour
	c.getJSON("/admin/behaviour", &b)
	if b.TerminalCode != railsim.DefaultTerminalCode || b.RetryableCode != railsim.DefaultRetryableCode || b.TimeoutMode != railsim.TimeoutMixed {
		t.Fatalf("defaults: %+v", b)
	}

	if status, body := c.putBehaviour(`{"retryableFraction":1,"latency":"1ms"}`); status != http.StatusOK {
		t.Fatalf("PUT: %d %s", status, body)
	}
	if status, _ := c.send("k1", "p", 1, ""); status != http.StatusServiceUnavailable {
		t.Fatalf("busy rail answered %d", status)
	}
	c.getJSON("/admin/behaviour", &b)
	if b.RetryableFraction != 1 || time.Duration(b.Latency) != time.Millisecond || b.TerminalCode != "AC04" {
		t.Fatalf("after PUT: %+v (fields not named must be kept)", b)
	}

	if status, body := c.putBehaviour(`{"retryableFraction":0}`); status != http.StatusOK {
		t.Fatalf("PUT: %d %s", status, body)
	}
	if status, _ := c.send("k1", "p", 1, ""); status != http.StatusCreated {
		t.Fatalf("recovered rail answered %d", status)
	}

	for _, bad := range []string{
		`{"retryableFraction":1.5}`, `{"timeoutMode":"sometimes"}`, `{"latency":"soon"}`, `{"latency":25}`,
		`{"terminalCode":"ac04"}`, `{"unknown":1}`, `not json`, `{"jitter":"-1s"}`,
	} {
		if status, _ := c.putBehaviour(bad); status != http.StatusBadRequest {
			t.Errorf("PUT %s: %d, want 400", bad, status)
		}
	}
	if got := sim.Behaviour(); got.RetryableFraction != 0 || time.Duration(got.Latency) != time.Millisecond {
		t.Fatalf("a refused PUT changed the behaviour: %+v", got)
	}
}

func TestTimeoutAfterAcceptIsRecorded(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{TimeoutFraction: 1, TimeoutMode: railsim.TimeoutClose})
	body, _ := json.Marshal(rail.JSONRequest{Instruction: instruction("k1", ""), ParticipantID: "p", SequenceID: 1})
	req, _ := http.NewRequest(http.MethodPost, c.base+rail.PathInstructions, bytes.NewReader(body))
	req.Header.Set(rail.HeaderIdempotencyKey, "k1")
	req.Header.Set(rail.HeaderParticipantID, "p")
	req.Header.Set(rail.HeaderSequenceID, "1")
	req.GetBody = nil // no transparent replay by net/http
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("got an answer: %s", resp.Status)
	}
	if l := sim.Ledger(); l.Unique != 1 || l.TimeoutsAfterAccept != 1 {
		t.Fatalf("ledger %+v", l)
	}
	if status, a := c.inquire("k1"); status != http.StatusOK || a.Status != rail.StatusAccepted {
		t.Fatalf("inquiry: %d %+v", status, a)
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	_, c := start(t, railsim.Behaviour{})
	var h map[string]string
	c.getJSON("/healthz", &h)
	if h["status"] != "ok" {
		t.Fatalf("%v", h)
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("url %q", url)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	stop() // idempotent
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("still serving after stop")
	}
	if _, _, err := sim.Start(t.Context(), "256.0.0.1:0"); err == nil {
		t.Fatal("listened on a bad address")
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (railsim.Options{Behaviour: railsim.Behaviour{TimeoutFraction: -0.1}}).Validate(); err == nil {
		t.Fatal("accepted a negative fraction")
	}
	if err := (railsim.Options{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestReceivedAt: the rail remembers when the send it accepted arrived
// (before its simulated latency); a resend does not move it, and keys
// never accepted (answered retryable, refused, never sent) have none.
func TestReceivedAt(t *testing.T) {
	t.Parallel()
	sim, c := start(t, railsim.Behaviour{Latency: railsim.Duration(20 * time.Millisecond)})
	before := time.Now()
	if status, _ := c.send("k1", "p", 1, ""); status != http.StatusCreated {
		t.Fatalf("send: %d", status)
	}
	after := time.Now()
	at, ok := sim.ReceivedAt("k1")
	if !ok || at.Before(before) || !at.Before(after.Add(-15*time.Millisecond)) {
		t.Fatalf("ReceivedAt = %v, %v; want between %v and the end of the latency (%v)", at, ok, before, after)
	}
	c.send("k1", "p", 1, "")
	if again, _ := sim.ReceivedAt("k1"); !again.Equal(at) {
		t.Fatalf("a resend moved ReceivedAt from %v to %v", at, again)
	}
	c.send("k2", "p", 2, "RAIL-REJECT:AC04")
	if err := sim.SetBehaviour(railsim.Behaviour{RetryableFraction: 1}); err != nil {
		t.Fatal(err)
	}
	c.send("k3", "p", 3, "")
	for _, key := range []string{"k2", "k3", "never-sent"} {
		if at, ok := sim.ReceivedAt(key); ok || !at.IsZero() {
			t.Errorf("ReceivedAt(%s) = %v, %v; want none", key, at, ok)
		}
	}
	sim.ResetLedger()
	if _, ok := sim.ReceivedAt("k1"); ok {
		t.Fatal("ReceivedAt after a reset")
	}
}

// TestAdminRoutesAnswerOnlyLoopbackNames: the admin and ledger routes
// refuse a request addressed to another name (a web page whose DNS name
// is rebound to the simulator's address) with a 403, changing nothing,
// on any listener; on a loopback listener (serve's embedded simulator)
// the rail's routes do too, while on another address (a rail-sim
// deployment, called as rail-sim:9090) they answer any name.
func TestAdminRoutesAnswerOnlyLoopbackNames(t *testing.T) {
	t.Parallel()
	type route struct {
		method, path, body string
		admin              bool
	}
	send, _ := json.Marshal(rail.JSONRequest{Instruction: instruction("k-1", ""), ParticipantID: "p", SequenceID: 1})
	routes := []route{
		{"GET", "/ledger", "", true},
		{"POST", "/ledger/reset", "", true},
		{"GET", "/admin/behaviour", "", true},
		{"PUT", "/admin/behaviour", `{"terminalFraction":1}`, true},
		{"POST", "/admin/refusals/k-1/lift", "", true},
		{"GET", "/admin/rails", "", true},
		{"PUT", "/admin/rails/SEPA", `{"cutoff":"00:00:01"}`, true},
		{"POST", "/admin/rails/SEPA/refusals/k-1/lift", "", true},
		{"GET", "/rails/DEFAULT/ledger", "", true},
		{"POST", rail.PathInstructions, string(send), false},
		{"GET", rail.PathInstructions + "/k-1", "", false},
		{"POST", "/rails/SEPA" + rail.PathInstructions, string(send), false},
		{"GET", "/rails/SEPA" + rail.PathInstructions + "/k-1", "", false},
		{"GET", "/healthz", "", false},
	}
	for _, tt := range []struct {
		listen, host string
		// refused reports whether a route must be refused.
		refused func(route) bool
	}{
		{"127.0.0.1:0", "evil.example", func(route) bool { return true }},
		{"127.0.0.1:0", "evil.example:9090", func(route) bool { return true }},
		{"127.0.0.1:0", "", func(route) bool { return false }}, // the URL's own, 127.0.0.1:port
		{"127.0.0.1:0", "localhost", func(route) bool { return false }},
		{"0.0.0.0:0", "rail-sim:9090", func(r route) bool { return r.admin }},
		{"0.0.0.0:0", "evil.example", func(r route) bool { return r.admin }},
		{"0.0.0.0:0", "localhost:9092", func(route) bool { return false }},
	} {
		sim := railsim.New(railsim.Options{})
		url, stop, err := sim.Start(t.Context(), tt.listen)
		if err != nil {
			t.Fatal(err)
		}
		url = strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
		for _, r := range routes {
			req, _ := http.NewRequest(r.method, url+r.path, strings.NewReader(r.body))
			if tt.host != "" {
				req.Host = tt.host
			}
			req.Header.Set(rail.HeaderIdempotencyKey, "k-1")
			req.Header.Set(rail.HeaderParticipantID, "p")
			req.Header.Set(rail.HeaderSequenceID, "1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if refused := resp.StatusCode == http.StatusForbidden; refused != tt.refused(r) {
				t.Errorf("on %s, %s %s for Host %q: %d, want refused %t: %s", tt.listen, r.method, r.path, tt.host, resp.StatusCode, tt.refused(r), raw)
			}
		}
		if tt.refused(routes[3]) && sim.Behaviour().TerminalFraction != 0 {
			t.Errorf("on %s, for Host %q: a refused PUT changed the behaviour: %+v", tt.listen, tt.host, sim.Behaviour())
		}
		if tt.refused(routes[6]) {
			for _, r := range sim.Rails() {
				if r.Cutoff != "" {
					t.Errorf("on %s, for Host %q: a refused PUT set a cut-off: %+v", tt.listen, tt.host, r)
				}
			}
		}
		stop()
	}
}
