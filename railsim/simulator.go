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
)

// Options configures a Simulator.
type Options struct {
	// Behaviour is the starting behaviour (the zero value: a perfect
	// rail); PUT /admin/behaviour or SetBehaviour changes it at run time.
	Behaviour Behaviour
}

// Simulator is an in-memory payment rail speaking the rail HTTP API of
// package rail. Safe for concurrent use.
type Simulator struct {
	behaviour atomic.Pointer[Behaviour]

	rngMu sync.Mutex
	rng   *rand.Rand

	led *ledger
}

// Validate reports whether the options are usable (check configuration
// read from outside with it before New).
func (o Options) Validate() error {
	_, err := o.Behaviour.normalize()
	return err
}

// New returns a simulator. It panics if opts fails Validate: a program
// that builds an impossible behaviour has a bug, and a chaos test that
// silently ran a perfect rail instead would pass for the wrong reason.
func New(opts Options) *Simulator {
	s := &Simulator{led: newLedger()}
	if err := s.SetBehaviour(opts.Behaviour); err != nil {
		panic("railsim.New: " + err.Error())
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

// Ledger returns a snapshot of the ledger.
func (s *Simulator) Ledger() LedgerView { return s.led.view() }

// Lift lifts a refused key's refusal: its next send is accepted. False
// when the key was not refused.
func (s *Simulator) Lift(key string) bool { return s.led.lift(key) }

// ReceivedAt is when the send the rail accepted under key arrived (its
// headers read, before any simulated latency), on this process's clock: a
// producer in the same process measures commit-to-receipt latency with it.
// A resend of the key does not move it; ok is false when no send under key
// was accepted (never sent, only answered retryable, or refused).
func (s *Simulator) ReceivedAt(key string) (at time.Time, ok bool) { return s.led.receivedAt(key) }

// ResetLedger forgets every instruction and counter, as if the rail were
// new (references keep counting up, so none is ever reused).
func (s *Simulator) ResetLedger() { s.led.reset() }

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
