package railsim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paydispatch/paydispatch/internal/loopback"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/routing"
)

// Options configures a Simulator.
type Options struct {
	// Behaviour is the starting behaviour (the zero value: a perfect
	// rail); PUT /admin/behaviour or SetBehaviour changes it at run time.
	// Every rail behaves by it.
	Behaviour Behaviour
	// Cutoffs are rails' cut-offs by rail name (DefaultRail: the
	// unprefixed routes'); PUT /admin/rails/{name} or SetCutoff changes
	// them at run time. A rail not named has none.
	Cutoffs map[string]Cutoff
	// Now is the clock an instruction's arrival is read on (default
	// time.Now).
	Now func() time.Time
}

// Simulator is an in-memory payment rail speaking the rail HTTP API of
// package rail, as several rails at once: DefaultRail at the root, any
// other under /rails/{name}, each with its own ledger and cut-off. Safe
// for concurrent use.
type Simulator struct {
	behaviour atomic.Pointer[Behaviour]
	now       func() time.Time

	rngMu sync.Mutex
	rng   *rand.Rand

	railsMu sync.RWMutex
	rails   map[string]*simRail
	def     *simRail
}

// Validate reports whether the options are usable (check configuration
// read from outside with it before New).
func (o Options) Validate() error {
	if _, err := o.Behaviour.normalize(); err != nil {
		return err
	}
	if len(o.Cutoffs) > MaxRails {
		return fmt.Errorf("cutoffs: %d rails, at most %d", len(o.Cutoffs), MaxRails)
	}
	for name, c := range o.Cutoffs {
		if !routing.ValidName(name) {
			return fmt.Errorf("cutoffs: rail name %q: want 1-64 letters, digits, '_', '.', ':' or '-'", plaintext.Clip(name, 64))
		}
		if err := c.validate(); err != nil {
			return fmt.Errorf("cutoffs: rail %s: %w", name, err)
		}
	}
	return nil
}

// New returns a simulator. It panics if opts fails Validate: a program
// that builds an impossible behaviour has a bug, and a chaos test that
// silently ran a perfect rail instead would pass for the wrong reason.
func New(opts Options) *Simulator {
	if err := opts.Validate(); err != nil {
		panic("railsim.New: " + err.Error())
	}
	s := &Simulator{now: opts.Now, rails: map[string]*simRail{}}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.SetBehaviour(opts.Behaviour); err != nil {
		panic("railsim.New: " + err.Error())
	}
	s.def, _ = s.rail(DefaultRail, true)
	for name, c := range opts.Cutoffs {
		if err := s.SetCutoff(name, c); err != nil {
			panic("railsim.New: " + err.Error())
		}
	}
	return s
}

// Behaviour returns the current behaviour, defaults filled in.
func (s *Simulator) Behaviour() Behaviour { return *s.behaviour.Load() }

// SetBehaviour replaces the behaviour (and reseeds the random decisions
// from its Seed). Calls in flight finish under the old one.
func (s *Simulator) SetBehaviour(b Behaviour) error {
	b, err := b.normalize()
	if err != nil {
		return err
	}
	s.rngMu.Lock()
	s.rng = rand.New(rand.NewPCG(b.Seed, b.Seed^0x9e3779b97f4a7c15))
	s.rngMu.Unlock()
	s.behaviour.Store(&b)
	return nil
}

// Ledger returns a snapshot of the ledger: DefaultRail's counters (the
// unprefixed routes', as before there were rails), and every rail's own
// ledger in Rails.
func (s *Simulator) Ledger() LedgerView {
	v := s.def.view(false)
	rails := map[string]LedgerView{}
	for _, r := range s.railList() {
		if r == s.def {
			rails[r.name] = v // DEFAULT's once, before v holds the rails
			continue
		}
		rails[r.name] = r.view(false)
	}
	v.Rails = rails
	return v
}

// RailLedger returns one rail's ledger, with every instruction it holds
// (Instructions) when instructions is true; ok is false when no rail of
// that name has been sent to or configured.
func (s *Simulator) RailLedger(name string, instructions bool) (v LedgerView, ok bool) {
	r, ok := s.rail(name, false)
	if !ok {
		return LedgerView{}, false
	}
	return r.view(instructions), true
}

// Lift lifts a refused key's refusal on DefaultRail: its next send is
// accepted. False when the key was not refused.
func (s *Simulator) Lift(key string) bool { return s.def.led.lift(key) }

// LiftOn is Lift on the named rail.
func (s *Simulator) LiftOn(rail, key string) bool {
	r, ok := s.rail(rail, false)
	return ok && r.led.lift(key)
}

// ReceivedAt is when the send the rail accepted under key arrived (its
// headers read, before any simulated latency), on this process's clock: a
// producer in the same process measures commit-to-receipt latency with it.
// A resend of the key does not move it; ok is false when no send under key
// was accepted (never sent, only answered retryable, or refused).
// It reads DefaultRail's ledger.
func (s *Simulator) ReceivedAt(key string) (at time.Time, ok bool) { return s.def.led.receivedAt(key) }

// ResetLedger forgets every rail's instructions and counters, as if the
// rails were new (references keep counting up, so none is ever reused);
// the rails and their cut-offs stay.
func (s *Simulator) ResetLedger() {
	for _, r := range s.railList() {
		r.led.reset()
	}
}

// Start serves the simulator on addr ("127.0.0.1:0" picks a free port)
// until stop is called or ctx ends, and returns its base URL. On a
// loopback address every route answers only a loopback Host; on another,
// the rail's routes answer any Host, the admin and ledger routes still
// only a loopback one (Handler).
func (s *Simulator) Start(ctx context.Context, addr string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("railsim: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		// On loopback (serve's embedded simulator), only this machine's
		// processes call, by a loopback name: every route checks the Host.
		Handler:           loopback.Guard(ln.Addr(), s.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		// Longer than rail.NewTransport's idle timeout, so clients close
		// idle connections first (see there).
		IdleTimeout: 2 * time.Minute,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve returns ErrServerClosed after stop, or the listener's
		// failure, after which there is nothing left to serve either way.
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	done := make(chan struct{})
	stop = func() {
		once.Do(func() {
			close(done)
			// Handlers holding an answer back (timeout behaviour) would make
			// a graceful shutdown wait for them: give it a moment, then cut.
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
			<-served
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	return "http://" + ln.Addr().String(), stop, nil
}

// chance draws one per-attempt decision.
func (s *Simulator) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	s.rngMu.Lock()
	x := s.rng.Float64()
	s.rngMu.Unlock()
	return x < p
}

// jitter draws a delay in [0, max].
func (s *Simulator) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	s.rngMu.Lock()
	d := time.Duration(s.rng.Int64N(int64(max) + 1))
	s.rngMu.Unlock()
	return d
}

// keyFraction maps an idempotency key and the seed to [0, 1): the same
// key always draws the same number, so a terminal refusal is a property
// of the instruction, not of the attempt.
func keyFraction(seed uint64, key string) float64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(key))
	x := h.Sum64()
	// splitmix64's finalizer: FNV's high bits are poorly mixed.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
