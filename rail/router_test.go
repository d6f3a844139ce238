package rail_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

func TestRouter(t *testing.T) {
	t.Parallel()
	sim, base := startSim(t, railsim.Behaviour{})
	jsonRail, pacsRail := railKinds[0].build(t, base, 0), railKinds[1].build(t, base, 0)
	router, err := rail.NewRouter(rail.RouterConfig{Rails: []rail.Rail{jsonRail, pacsRail}})
	if err != nil {
		t.Fatal(err)
	}
	if got := router.Types(); len(got) != 2 || got[0] != rail.RailPacs008 || got[1] != rail.RailSEPAJSON {
		t.Fatalf("types %v", got)
	}
	for i, kind := range railKinds {
		m := message(kind, "pay-"+kind.name, int64(i+1))
		if err := router.Validate(m); err != nil {
			t.Fatalf("%s: %v", kind.name, err)
		}
		if got := router.Send(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s: %+v", kind.name, got)
		}
		if got := router.Inquire(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s inquiry: %+v", kind.name, got)
		}
	}
	if l := sim.Ledger(); l.Unique != 2 {
		t.Fatalf("ledger %+v", l)
	}

	// The pacs.008 rules follow the rail type: the JSON rail does not need
	// the debtor's BIC, the pacs.008 rail does.
	in := rail.GoodInstruction()
	in.Debtor.BIC = ""
	if err := router.Validate(rail.MessageFor(in, rail.RailSEPAJSON)); err != nil {
		t.Fatalf("json without debtor BIC: %v", err)
	}
	var ve *field.Invalid
	if err := router.Validate(rail.MessageFor(in, rail.RailPacs008)); !errors.As(err, &ve) || !ve.Has("debtor.bic") {
		t.Fatalf("pacs.008 without debtor BIC: %v", err)
	}

	unknown := rail.MessageFor(rail.GoodInstruction(), "SWIFT_MT103")
	if err := router.Validate(unknown); !errors.As(err, &ve) || !ve.Has("railType") {
		t.Fatalf("unknown rail type: %v", err)
	}
	if got := router.Send(t.Context(), unknown); got.Outcome != outbox.Terminal || got.Code != rail.CodeUnknownRailType {
		t.Fatalf("send to an unknown rail type: %+v", got)
	}
	if got := router.Inquire(t.Context(), unknown); got.Outcome != outbox.Unknown {
		t.Fatalf("inquiry to an unknown rail type: %+v", got)
	}
}

func TestNewRouterRefusesTwoRailsOfOneType(t *testing.T) {
	t.Parallel()
	a := railKinds[0].build(t, "http://127.0.0.1:1", 0)
	b := railKinds[0].build(t, "http://127.0.0.1:2", 0)
	if _, err := rail.NewRouter(rail.RouterConfig{Rails: []rail.Rail{a, b}}); err == nil {
		t.Fatal("accepted")
	}
}

// railServer is a simulated rail behind a recorder of every call that
// reaches it.
type railServer struct {
	sim *railsim.Simulator
	url string

	mu     sync.Mutex
	calls  []string // "METHOD path content-type"
	bodies [][]byte
}

func newRailServer(t *testing.T) *railServer {
	t.Helper()
	s := &railServer{sim: railsim.New(railsim.Options{})}
	h := s.sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.calls = append(s.calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// took returns the calls so far and forgets them.
func (s *railServer) took() ([]string, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls, bodies := s.calls, s.bodies
	s.calls, s.bodies = nil, nil
	return calls, bodies
}

// fakeDirectory knows the rails it is given, or fails with err.
type fakeDirectory struct {
	mu      sync.Mutex
	rails   map[string]rail.Destination
	err     error
	lookups int
}

func (d *fakeDirectory) Destination(_ context.Context, name string) (rail.Destination, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	if d.err != nil {
		return rail.Destination{}, false, d.err
	}
	r, ok := d.rails[name]
	return r, ok, nil
}

func (d *fakeDirectory) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookups
}

// paymentMessage is an instruction as the payment domain writes it (no
// debtor IBAN or BIC), for the rail named railName.
func paymentMessage(id, railName string, seq int64) outbox.Message {
	in := rail.GoodInstruction()
	in.PaymentID, in.Debtor.IBAN, in.Debtor.BIC = id, "", ""
	m := rail.MessageFor(in, railName)
	m.IdempotencyKey, m.SequenceID = "key-"+id, seq
	return m
}

// TestRouterByName: with a directory, each message goes to the rail its
// RailType names, in that rail's format, at that rail's endpoint (a path
// prefix kept; none: the default URL); the legacy types still go to the
// rails served by type at the default URL without asking the directory;
// an unknown name is Terminal UNKNOWN_RAIL and reaches no rail.
func TestRouterByName(t *testing.T) {
	t.Parallel()
	sepa, target2, def := newRailServer(t), newRailServer(t), newRailServer(t)
	dir := &fakeDirectory{rails: map[string]rail.Destination{
		"SEPA":       {Name: "SEPA", Type: rail.RailSEPAJSON, BaseURL: sepa.url + "/rails/SEPA/"},
		"TARGET2-HV": {Name: "TARGET2-HV", Type: rail.RailPacs008, BaseURL: target2.url},
		"DEFAULT":    {Name: "DEFAULT", Type: rail.RailSEPAJSON},
	}}
	router, err := rail.NewRouter(rail.RouterConfig{
		Rails:     []rail.Rail{railKinds[0].build(t, def.url, 0), railKinds[1].build(t, def.url, 0)},
		Directory: dir, DefaultURL: def.url, DebtorAgentBIC: "NWBKGB2LXXX",
	})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		railType string
		server   *railServer
		call     string
		lookup   bool
	}{
		{"SEPA", sepa, "POST /rails/SEPA/v1/instructions application/json", true},
		{"TARGET2-HV", target2, "POST /v1/pacs008 application/xml", true},
		{"DEFAULT", def, "POST /v1/instructions application/json", true},
		{rail.RailSEPAJSON, def, "POST /v1/instructions application/json", false},
		{rail.RailPacs008, def, "POST /v1/pacs008 application/xml", false},
	}
	for i, tc := range cases {
		m := paymentMessage(fmt.Sprintf("pay-%d", i), tc.railType, int64(i+1))
		if tc.railType == rail.RailPacs008 {
			// A legacy pacs.008 instruction names its debtor's BIC itself.
			in := rail.GoodInstruction()
			in.PaymentID = "pay-legacy-pacs"
			m = rail.MessageFor(in, tc.railType)
		}
		before := dir.count()
		if err := router.Validate(m); err != nil {
			t.Fatalf("%s: validate: %v", tc.railType, err)
		}
		if got := router.Send(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s: send %+v", tc.railType, got)
		}
		if got := router.Inquire(t.Context(), m); got.Outcome != outbox.Delivered {
			t.Fatalf("%s: inquiry %+v", tc.railType, got)
		}
		if asked := dir.count() > before; asked != tc.lookup {
			t.Errorf("%s: directory asked %v, want %v", tc.railType, asked, tc.lookup)
		}
		for _, s := range []*railServer{sepa, target2, def} {
			calls, bodies := s.took()
			if s != tc.server {
				if len(calls) != 0 {
					t.Errorf("%s: another rail got %v", tc.railType, calls)
				}
				continue
			}
			if len(calls) != 2 || calls[0] != tc.call || !strings.HasPrefix(calls[1], "GET "+strings.TrimSuffix(strings.Fields(tc.call)[1], "/pacs008")) {
				t.Errorf("%s: calls %q, want %q and its inquiry", tc.railType, calls, tc.call)
			}
			if tc.railType == "TARGET2-HV" {
				tr, err := rail.ParsePacs008(bodies[0])
				if err != nil || tr.DebtorBIC != "NWBKGB2LXXX" {
					t.Errorf("pacs.008 debtor agent %q, %v; want the configured one", tr.DebtorBIC, err)
				}
			}
		}
	}
	if v, ok := sepa.sim.RailLedger("SEPA", false); !ok || v.Unique != 1 {
		t.Errorf("SEPA's ledger %+v", v)
	}

	unknown := paymentMessage("pay-unknown", "SWIFT", 9)
	if err := router.Validate(unknown); err != nil {
		t.Fatalf("validate makes no lookup, and the instruction is fine: %v", err)
	}
	if got := router.Send(t.Context(), unknown); got.Outcome != outbox.Terminal || got.Code != rail.CodeUnknownRail || !strings.Contains(got.Message, `"SWIFT"`) {
		t.Fatalf("send to an unknown rail: %+v", got)
	}
	if got := router.Inquire(t.Context(), unknown); got.Outcome != outbox.Unknown || got.Code != rail.CodeUnknownRail {
		t.Fatalf("inquiry to an unknown rail: %+v", got)
	}
	for _, s := range []*railServer{sepa, target2, def} {
		if calls, _ := s.took(); len(calls) != 0 {
			t.Fatalf("an unknown rail's instruction reached %s: %v", s.url, calls)
		}
	}

	// The pacs.008 rules follow the rail's type: without a configured
	// debtor agent the payment's instruction cannot be a pacs.008.
	bare, err := rail.NewRouter(rail.RouterConfig{Directory: dir, DefaultURL: def.url})
	if err != nil {
		t.Fatal(err)
	}
	var ve *field.Invalid
	res := bare.Send(t.Context(), paymentMessage("pay-nobic", "TARGET2-HV", 10))
	if res.Outcome != outbox.Terminal || res.Code != rail.CodeInvalidPayload || !strings.Contains(res.Message, "debtor.bic") {
		t.Fatalf("pacs.008 without a debtor agent: %+v", res)
	}
	if err := bare.Validate(paymentMessage("pay-bad", "SEPA", 11)); err != nil {
		t.Fatal(err)
	}
	badAmount := paymentMessage("pay-bad", "SEPA", 11)
	badAmount.Payload = []byte(strings.Replace(string(badAmount.Payload), `"125.00"`, `"1.234"`, 1))
	if err := bare.Validate(badAmount); !errors.As(err, &ve) || !ve.Has("amount") {
		t.Fatalf("a directory rail's message with a bad amount: %v", err)
	}
	if calls, _ := target2.took(); len(calls) != 0 {
		t.Fatalf("an invalid pacs.008 reached the rail: %v", calls)
	}
}

// TestRouterNeverSendsLate: an instruction at or past its rail's cut-off
// for its value date is Terminal CUTOFF_MISSED and reaches nothing; one
// before it is sent; an inquiry goes to the rail whatever the time; a
// cut-off that cannot be told keeps it unsent (retryable).
func TestRouterNeverSendsLate(t *testing.T) {
	t.Parallel()
	srv := newRailServer(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Value date 2026-11-23 (GoodInstruction's): cut-off 16:00 in Berlin.
	cutoff := time.Date(2026, 11, 23, 16, 0, 0, 0, berlin)
	var cutoffErr atomic.Pointer[error]
	dir := &fakeDirectory{rails: map[string]rail.Destination{
		"SEPA": {Name: "SEPA", Type: rail.RailSEPAJSON, BaseURL: srv.url + "/rails/SEPA",
			Cutoff: func(valueDate string) (time.Time, bool, error) {
				if p := cutoffErr.Load(); p != nil {
					return time.Time{}, false, *p
				}
				d, err := time.ParseInLocation(time.DateOnly, valueDate, berlin)
				if err != nil {
					return time.Time{}, false, err
				}
				return d.Add(16 * time.Hour), true, nil
			}},
		"NOCUTOFF": {Name: "NOCUTOFF", Type: rail.RailSEPAJSON, BaseURL: srv.url + "/rails/NOCUTOFF",
			Cutoff: func(string) (time.Time, bool, error) { return time.Time{}, false, nil }},
	}}
	var now atomic.Pointer[time.Time]
	router, err := rail.NewRouter(rail.RouterConfig{Directory: dir, DefaultURL: srv.url,
		Now: func() time.Time { return *now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	at := func(t time.Time) { now.Store(&t) }

	at(cutoff.Add(-time.Second))
	early := paymentMessage("pay-early", "SEPA", 1)
	if got := router.Send(t.Context(), early); got.Outcome != outbox.Delivered {
		t.Fatalf("a second before the cut-off: %+v", got)
	}
	if calls, _ := srv.took(); len(calls) != 1 {
		t.Fatalf("calls %v", calls)
	}
	for i, when := range []time.Time{cutoff, cutoff.Add(time.Nanosecond), cutoff.Add(48 * time.Hour)} {
		at(when)
		got := router.Send(t.Context(), paymentMessage(fmt.Sprintf("pay-late-%d", i), "SEPA", int64(2+i)))
		if got.Outcome != outbox.Terminal || got.Code != rail.CodeCutoffMissed || !strings.Contains(got.Message, "2026-11-23") {
			t.Fatalf("at %v (cut-off %v): %+v", when, cutoff, got)
		}
		if calls, _ := srv.took(); len(calls) != 0 {
			t.Fatalf("a late instruction reached the rail: %v", calls)
		}
	}
	if rail.Classify(rail.CodeCutoffMissed) != outbox.Terminal {
		t.Fatal("CUTOFF_MISSED is not terminal in the taxonomy")
	}
	// An inquiry is no send: after the cut-off the rail is still asked.
	if got := router.Inquire(t.Context(), early); got.Outcome != outbox.Delivered {
		t.Fatalf("inquiry after the cut-off: %+v", got)
	}
	if calls, _ := srv.took(); len(calls) != 1 || !strings.HasPrefix(calls[0], "GET /rails/SEPA/v1/instructions/") {
		t.Fatalf("inquiry calls %v", calls)
	}
	// A rail without a cut-off that day takes it whatever the time.
	if got := router.Send(t.Context(), paymentMessage("pay-open", "NOCUTOFF", 9)); got.Outcome != outbox.Delivered {
		t.Fatalf("no cut-off: %+v", got)
	}
	srv.took()

	// A cut-off that cannot be told: not sent, tried again later.
	boom := errors.New("no such zone")
	cutoffErr.Store(&boom)
	at(cutoff.Add(-time.Hour))
	if got := router.Send(t.Context(), paymentMessage("pay-unknown-cutoff", "SEPA", 10)); got.Outcome != outbox.Retryable || got.Code != rail.CodeRailLookupFailed {
		t.Fatalf("cut-off unknown: %+v", got)
	}
	if calls, _ := srv.took(); len(calls) != 0 {
		t.Fatalf("sent without knowing the cut-off: %v", calls)
	}
}

// TestRouterDirectoryFailure: a directory that cannot be read sends
// nothing (retryable) and settles no inquiry (unknown).
func TestRouterDirectoryFailure(t *testing.T) {
	t.Parallel()
	srv := newRailServer(t)
	dir := &fakeDirectory{err: errors.New("connection refused")}
	router, err := rail.NewRouter(rail.RouterConfig{Directory: dir, DefaultURL: srv.url})
	if err != nil {
		t.Fatal(err)
	}
	m := paymentMessage("pay-1", "SEPA", 1)
	if got := router.Send(t.Context(), m); got.Outcome != outbox.Retryable || got.Code != rail.CodeRailLookupFailed {
		t.Fatalf("send: %+v", got)
	}
	if got := router.Inquire(t.Context(), m); got.Outcome != outbox.Unknown || got.Code != rail.CodeRailLookupFailed {
		t.Fatalf("inquiry: %+v", got)
	}
	if calls, _ := srv.took(); len(calls) != 0 {
		t.Fatalf("calls %v", calls)
	}
}

// TestRouterCachesSenders: one sender per type and base URL, built once
// however many rails and calls share it.
func TestRouterCachesSenders(t *testing.T) {
	t.Parallel()
	srv := newRailServer(t)
	dir := &fakeDirectory{rails: map[string]rail.Destination{
		"A":    {Name: "A", Type: rail.RailSEPAJSON, BaseURL: srv.url},
		"B":    {Name: "B", Type: rail.RailSEPAJSON, BaseURL: srv.url + "/"},
		"C":    {Name: "C", Type: rail.RailSEPAJSON},
		"P":    {Name: "P", Type: rail.RailPacs008, BaseURL: srv.url},
		"X":    {Name: "X", Type: rail.RailSEPAJSON, BaseURL: srv.url + "/rails/X"},
		"BAD":  {Name: "BAD", Type: "SWIFT_MT103", BaseURL: srv.url},
		"NONE": {Name: "NONE", Type: rail.RailSEPAJSON},
	}}
	router, err := rail.NewRouter(rail.RouterConfig{Directory: dir, DefaultURL: srv.url, DebtorAgentBIC: "NWBKGB2L"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"A", "B", "C", "P", "X"}[i%5]
			if got := router.Send(context.Background(), paymentMessage(fmt.Sprintf("pay-%d", i), name, int64(i+1))); got.Outcome != outbox.Delivered {
				t.Errorf("%s: %+v", name, got)
			}
		}()
	}
	wg.Wait()
	// A, B and C are one sender (C's empty endpoint is the default URL);
	// P is another type, X another URL.
	if n := router.SenderCount(); n != 3 {
		t.Fatalf("%d senders, want 3", n)
	}
	a, _ := router.SenderFor(dir.rails["A"])
	for _, name := range []string{"B", "C"} {
		if s, _ := router.SenderFor(dir.rails[name]); s != a {
			t.Errorf("%s has a sender of its own", name)
		}
	}
	if p, _ := router.SenderFor(dir.rails["P"]); p == a || p.Type() != rail.RailPacs008 {
		t.Errorf("P: %v", p)
	}
	if got := router.Send(t.Context(), paymentMessage("pay-bad", "BAD", 99)); got.Outcome != outbox.Terminal || got.Code != rail.CodeRailMisconfigured {
		t.Fatalf("a rail of a type no adapter speaks: %+v", got)
	}

	noDefault, err := rail.NewRouter(rail.RouterConfig{Directory: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := noDefault.Send(t.Context(), paymentMessage("pay-none", "NONE", 100)); got.Outcome != outbox.Terminal || got.Code != rail.CodeRailMisconfigured {
		t.Fatalf("no endpoint and no default: %+v", got)
	}
}

func TestNewRouterRefusesBadSettings(t *testing.T) {
	t.Parallel()
	dir := &fakeDirectory{}
	for _, cfg := range []rail.RouterConfig{
		{Directory: dir, DefaultURL: "ftp://rail"},
		{Directory: dir, DefaultURL: "http://rail", DebtorAgentBIC: "NOT A BIC"},
		{Directory: dir, DefaultURL: "http://rail", ChargeBearer: "ALL"},
	} {
		if _, err := rail.NewRouter(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
