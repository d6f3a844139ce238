package screening

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paydispatch/paydispatch/internal/wait"
)

// The simulator's lists, named in its hits.
const (
	SimNameList     = "SIM-NAMES"
	SimFractionList = "SIM-FRACTION"
)

// SimOptions are a Simulator's behaviour.
type SimOptions struct {
	// Names hit whatever else: a creditor whose name is one of them
	// (case and spacing aside) is a HIT on SimNameList.
	Names []string
	// HitFraction and ErrorFraction: the share of the other payments
	// answered HIT (on SimFractionList) and ERROR, chosen by a hash of
	// Seed and the payment's tenant and id, so that a payment gets the
	// same verdict in every call and every run with the same seed.
	HitFraction   float64
	ErrorFraction float64
	Seed          uint64
	// Delay is how long each call waits before its answer.
	Delay time.Duration
}

// Validate reports an option out of range, naming it.
func (o SimOptions) Validate() error {
	switch {
	case !(o.HitFraction >= 0 && o.HitFraction <= 1):
		return fmt.Errorf("screening simulator: hitFraction %v: want 0 to 1", o.HitFraction)
	case !(o.ErrorFraction >= 0 && o.ErrorFraction <= 1):
		return fmt.Errorf("screening simulator: errorFraction %v: want 0 to 1", o.ErrorFraction)
	case o.HitFraction+o.ErrorFraction > 1:
		return fmt.Errorf("screening simulator: hitFraction + errorFraction is %v: want at most 1", o.HitFraction+o.ErrorFraction)
	case o.Delay < 0:
		return fmt.Errorf("screening simulator: delay %s: want 0 or more", o.Delay)
	}
	return nil
}

// Simulator is a screening service for tests, benchmarks and the demo:
// it answers POST /v1/screen by the protocol, from its options alone,
// and GET /stats with what it answered.
type Simulator struct {
	opts                        SimOptions
	names                       map[string]bool
	calls, payments, hits, errs atomic.Int64
}

// NewSimulator returns a simulator behaving as opts says.
func NewSimulator(opts SimOptions) (*Simulator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Simulator{opts: opts, names: map[string]bool{}}
	for _, n := range opts.Names {
		if n = foldName(n); n != "" {
			s.names[n] = true
		}
	}
	return s, nil
}

// foldName is a name as the simulator compares names.
func foldName(s string) string { return strings.ToUpper(strings.Join(strings.Fields(s), " ")) }

// Verdict is the simulator's answer on sub.
func (s *Simulator) Verdict(sub Subject) Result {
	if s.names[foldName(sub.CreditorName)] {
		return Result{Verdict: Hit, List: SimNameList, Reason: "creditor name listed"}
	}
	u := s.draw(sub.TenantID, sub.PaymentID)
	switch {
	case u < s.opts.ErrorFraction:
		return Result{Verdict: Error, Reason: "simulated error"}
	case u < s.opts.ErrorFraction+s.opts.HitFraction:
		return Result{Verdict: Hit, List: SimFractionList, Reason: "seeded hit"}
	}
	return Result{Verdict: Clear}
}

// draw is a number in [0, 1) fixed by the seed and the payment.
func (s *Simulator) draw(tenant, id string) float64 {
	h := fnv.New64a()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], s.opts.Seed)
	h.Write(seed[:])
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(id))
	// fnv's low bits mix poorly for short inputs: a final avalanche.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

// SimStats are what a simulator has answered.
type SimStats struct {
	Calls    int64 `json:"calls"`
	Payments int64 `json:"payments"`
	Hits     int64 `json:"hits"`
	Errors   int64 `json:"errors"`
}

// Stats are what s has answered since it began.
func (s *Simulator) Stats() SimStats {
	return SimStats{Calls: s.calls.Load(), Payments: s.payments.Load(), Hits: s.hits.Load(), Errors: s.errs.Load()}
}

// maxRequest bounds a call's body: MaxBatchSize payments of the longest
// fields.
const maxRequest = 16 << 20

// Handler serves the simulator's routes.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/screen", s.screen)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	return mux
}

func (s *Simulator) screen(w http.ResponseWriter, r *http.Request) {
	var req request
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "malformed request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !wait.For(r.Context(), s.opts.Delay) {
		return
	}
	s.calls.Add(1)
	s.payments.Add(int64(len(req.Payments)))
	a := answer{Results: make([]answerItem, len(req.Payments))}
	for i, sub := range req.Payments {
		v := s.Verdict(sub)
		a.Results[i] = answerItem{ID: sub.ID, Verdict: string(v.Verdict), List: v.List, Reason: v.Reason}
		switch v.Verdict {
		case Hit:
			s.hits.Add(1)
		case Error:
			s.errs.Add(1)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

// Start serves the simulator on addr ("127.0.0.1:0": a free port) until
// stop; the URL is the endpoint to set as the client's URL.
func (s *Simulator) Start(addr string) (endpoint string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("screening simulator: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // http.ErrServerClosed once stopped
	}()
	return "http://" + ln.Addr().String() + "/v1/screen", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
