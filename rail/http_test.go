package rail_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// railKind builds one of the two HTTP rails against a base URL.
type railKind struct {
	name     string
	railType string
	build    func(t *testing.T, base string, timeout time.Duration) rail.Rail
}

var railKinds = []railKind{
	{"json", rail.RailSEPAJSON, func(t *testing.T, base string, timeout time.Duration) rail.Rail {
		r, err := rail.NewHTTPRail(rail.Config{BaseURL: base, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}},
	{"pacs.008", rail.RailPacs008, func(t *testing.T, base string, timeout time.Duration) rail.Rail {
		r, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: base, Timeout: timeout}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}},
}

// startSim serves a simulator with behaviour b for the test's duration.
func startSim(t *testing.T, b railsim.Behaviour) (*railsim.Simulator, string) {
	t.Helper()
	sim := railsim.New(railsim.Options{Behaviour: b})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

func message(kind railKind, id string, seq int64) outbox.Message {
	in := rail.GoodInstruction()
	in.PaymentID = id
	m := rail.MessageFor(in, kind.railType)
	m.SequenceID = seq
	return m
}

// Each outcome a rail call can have, for both rails, against the
// simulator; where the outcome leaves a question, the inquiry answers it.
func TestRailOutcomes(t *testing.T) {
	t.Parallel()
	// The client's timeout where the rail holds its answer back: long enough
	// that even a loaded machine has the request recorded before it expires.
	const short = 2 * time.Second
	cases := []struct {
		name      string
		behaviour railsim.Behaviour
		timeout   time.Duration
		edit      func(*outbox.Message)
		want      outbox.Outcome
		code      string
		inquiry   outbox.Outcome
		ledger    railsim.LedgerView // the counters checked: received, unique, refused
	}{
		{
			name: "delivered", want: outbox.Delivered, inquiry: outbox.Delivered,
			ledger: railsim.LedgerView{Received: 1, Unique: 1},
		},
		{
			name: "retryable", behaviour: railsim.Behaviour{RetryableFraction: 1},
			want: outbox.Retryable, code: "RAIL_BUSY", inquiry: outbox.NotReceived,
		},
		{
			name: "rate limited", behaviour: railsim.Behaviour{RetryableFraction: 1, RetryableCode: "RATE_LIMITED"},
			want: outbox.Retryable, code: "RATE_LIMITED", inquiry: outbox.NotReceived,
		},
		{
			name: "terminal", behaviour: railsim.Behaviour{TerminalFraction: 1},
			want: outbox.Terminal, code: "AC04", inquiry: outbox.Terminal,
			ledger: railsim.LedgerView{Refused: 1},
		},
		{
			name: "terminal planted in remittance", edit: plantRejection("RAIL-REJECT:AM04 please"),
			want: outbox.Terminal, code: "AM04", inquiry: outbox.Terminal,
			ledger: railsim.LedgerView{Refused: 1},
		},
		{
			name:      "timeout after accept",
			behaviour: railsim.Behaviour{TimeoutFraction: 1, TimeoutMode: railsim.TimeoutDelay, TimeoutDelay: railsim.Duration(time.Minute)},
			timeout:   short, want: outbox.Unknown, code: rail.CodeTimeout, inquiry: outbox.Delivered,
			ledger: railsim.LedgerView{Received: 1, Unique: 1},
		},
		{
			name:      "connection cut after accept",
			behaviour: railsim.Behaviour{TimeoutFraction: 1, TimeoutMode: railsim.TimeoutClose},
			want:      outbox.Unknown, code: rail.CodeConnectionCut, inquiry: outbox.Delivered,
			ledger: railsim.LedgerView{Received: 1, Unique: 1},
		},
	}
	for _, kind := range railKinds {
		for _, tc := range cases {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				sim, base := startSim(t, tc.behaviour)
				r := kind.build(t, base, tc.timeout)
				m := message(kind, "pay-1", 1)
				if tc.edit != nil {
					tc.edit(&m)
				}
				if err := r.Validate(m); err != nil {
					t.Fatal(err)
				}
				got := r.Send(t.Context(), m)
				if got.Outcome != tc.want || got.Code != tc.code {
					t.Fatalf("Send: got %+v, want %s %s", got, tc.want, tc.code)
				}
				if got.Outcome == outbox.Delivered && got.Reference == "" {
					t.Fatal("delivered without a reference")
				}
				// The inquiry is not subject to the chaos of sends.
				_ = sim.SetBehaviour(railsim.Behaviour{})
				inq := r.Inquire(t.Context(), m)
				if inq.Outcome != tc.inquiry {
					t.Fatalf("Inquire: got %+v, want %s", inq, tc.inquiry)
				}
				if inq.Outcome == outbox.Terminal && inq.Code != tc.code {
					t.Fatalf("Inquire: code %q, want the refusal's %q", inq.Code, tc.code)
				}
				if inq.Outcome == outbox.Delivered && got.Outcome == outbox.Delivered && inq.Reference != got.Reference {
					t.Fatalf("Inquire: reference %q, send said %q", inq.Reference, got.Reference)
				}
				l := sim.Ledger()
				if l.Received != tc.ledger.Received || l.Unique != tc.ledger.Unique || l.Refused != tc.ledger.Refused || l.Duplicates != 0 {
					t.Fatalf("ledger %+v, want received %d unique %d refused %d, no duplicates", l, tc.ledger.Received, tc.ledger.Unique, tc.ledger.Refused)
				}
			})
		}
	}
}

func plantRejection(remittance string) func(*outbox.Message) {
	return func(m *outbox.Message) {
		in := rail.GoodInstruction()
		in.PaymentID = "pay-1"
		in.RemittanceInfo = remittance
		*m = rail.MessageFor(in, m.RailType)
	}
}

// A refusal is the instruction's: sent again, it is refused again with the
// same code, and the rail counts it once.
func TestRailRefusalIsStable(t *testing.T) {
	t.Parallel()
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			sim, base := startSim(t, railsim.Behaviour{TerminalFraction: 1, TerminalCode: "AC06"})
			r := kind.build(t, base, 0)
			m := message(kind, "pay-1", 1)
			first := r.Send(t.Context(), m)
			_ = sim.SetBehaviour(railsim.Behaviour{}) // a healthy rail now: the key stays refused
			second := r.Send(t.Context(), m)
			if first.Outcome != outbox.Terminal || second.Outcome != outbox.Terminal || first.Code != "AC06" || second.Code != "AC06" {
				t.Fatalf("got %+v then %+v", first, second)
			}
			if l := sim.Ledger(); l.Refused != 1 || l.Received != 0 {
				t.Fatalf("ledger %+v", l)
			}
		})
	}
}

// An idempotent rail answers a resent key with the original answer, and
// the ledger shows the resend as a duplicate.
func TestRailDuplicateSend(t *testing.T) {
	t.Parallel()
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			sim, base := startSim(t, railsim.Behaviour{})
			r := kind.build(t, base, 0)
			m := message(kind, "pay-1", 1)
			first, second := r.Send(t.Context(), m), r.Send(t.Context(), m)
			if first.Outcome != outbox.Delivered || second.Outcome != outbox.Delivered || first.Reference != second.Reference {
				t.Fatalf("got %+v then %+v", first, second)
			}
			if l := sim.Ledger(); l.Received != 2 || l.Unique != 1 || l.Duplicates != 1 {
				t.Fatalf("ledger %+v", l)
			}
		})
	}
}

func TestRailNeverReceived(t *testing.T) {
	t.Parallel()
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			_, base := startSim(t, railsim.Behaviour{})
			r := kind.build(t, base, 0)
			m := message(kind, "pay-1", 1)
			m.IdempotencyKey = "key/with?odd%chars#"
			if got := r.Inquire(t.Context(), m); got.Outcome != outbox.NotReceived {
				t.Fatalf("got %+v", got)
			}
			if got := r.Send(t.Context(), m); got.Outcome != outbox.Delivered {
				t.Fatalf("send: %+v", got)
			}
			if got := r.Inquire(t.Context(), m); got.Outcome != outbox.Delivered {
				t.Fatalf("after the send: %+v (the key must survive URL escaping)", got)
			}
		})
	}
}

// Nothing listens: the request provably never left, so a resend is safe
// (Retryable); an inquiry cannot be answered (Unknown).
func TestRailDialFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	_ = ln.Close()
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			r := kind.build(t, base, 0)
			m := message(kind, "pay-1", 1)
			if got := r.Send(t.Context(), m); got.Outcome != outbox.Retryable || got.Code != rail.CodeConnectFailed {
				t.Fatalf("send: %+v", got)
			}
			if got := r.Inquire(t.Context(), m); got.Outcome != outbox.Unknown {
				t.Fatalf("inquire: %+v", got)
			}
		})
	}
}

// A caller's context that ends while the rail holds the request is an
// unknown outcome too, not a retry.
func TestRailCallerCancel(t *testing.T) {
	t.Parallel()
	_, base := startSim(t, railsim.Behaviour{Latency: railsim.Duration(time.Minute)})
	r := railKinds[0].build(t, base, 0)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if got := r.Send(ctx, message(railKinds[0], "pay-1", 1)); got.Outcome != outbox.Unknown || got.Code != rail.CodeTimeout {
		t.Fatalf("got %+v", got)
	}
}

// Answers outside the documented API.
func TestRailOddAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    outbox.Outcome
		code    string
	}{
		{"500 without code", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, outbox.Unknown, "HTTP_500"},
		{"502 html", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502); _, _ = w.Write([]byte("<html/>")) }, outbox.Retryable, "HTTP_502"},
		{"200 html", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html/>")) }, outbox.Unknown, rail.CodeBadAnswer},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				_, _ = w.Write([]byte(`{"status":"ACCEPTED","reference":"WRONG"}`))
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusSeeOther)
		}, outbox.Retryable, "HTTP_303"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			r := railKinds[0].build(t, srv.URL, 0)
			if got := r.Send(t.Context(), message(railKinds[0], "pay-1", 1)); got.Outcome != tc.want || got.Code != tc.code {
				t.Fatalf("got %+v, want %s %s", got, tc.want, tc.code)
			}
		})
	}
}

func TestRailHeaders(t *testing.T) {
	t.Parallel()
	for _, kind := range railKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			seen := make(chan http.Header, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen <- r.Header.Clone()
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"status":"ACCEPTED","reference":"R"}`))
			}))
			t.Cleanup(srv.Close)
			m := message(kind, "pay-1", 42)
			if got := kind.build(t, srv.URL, 0).Send(t.Context(), m); got.Outcome != outbox.Delivered {
				t.Fatalf("got %+v", got)
			}
			h := <-seen
			wantType := map[string]string{rail.RailSEPAJSON: "application/json", rail.RailPacs008: "application/xml"}[kind.railType]
			for name, want := range map[string]string{
				"Idempotency-Key": m.IdempotencyKey, "X-Participant-Id": "bank-a", "X-Sequence-Id": "42", "Content-Type": wantType,
			} {
				if got := h.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestNewRailConfig(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "127.0.0.1:80", "ftp://x", "http://", "http://h/?q=1", "http://h/#f"} {
		if _, err := rail.NewHTTPRail(rail.Config{BaseURL: base}); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
	if _, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: "http://h"}, ChargeBearer: "X"}); err == nil {
		t.Error("charge bearer X accepted")
	}
}
