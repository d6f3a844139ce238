package httpapi

import (
	"container/list"
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The bounds of a failure limit's memory: the addresses it tracks (the
// least recently failing are forgotten first) and the tokens it knows
// authenticated (the least recently used first).
const (
	maxFailingAddrs = 10_000
	maxKnownTokens  = 10_000
)

type failureLimits struct {
	every rate.Limit
	burst int
	now   func() time.Time
	seed  maphash.Seed

	// failing counts the addresses tracked, read without the lock: while
	// it is 0, no request is checked further.
	failing atomic.Int64

	mu    sync.Mutex
	addrs *lru[netip.Prefix, *rate.Limiter]

	// known holds the tokens that authenticated (their keyed hash), the
	// least recently used forgotten first. It has a lock of its own, as
	// every valid token touches it.
	knownMu sync.Mutex
	known   *lru[uint64, struct{}]
}

func newFailureLimits(perMinute, maxAddrs, maxTokens int, now func() time.Time) *failureLimits {
	return &failureLimits{every: rate.Limit(float64(perMinute) / 60), burst: perMinute, now: now, seed: maphash.MakeSeed(),
		addrs: newLRU[netip.Prefix, *rate.Limiter](maxAddrs), known: newLRU[uint64, struct{}](maxTokens)}
}

// clientOf is the key of r's client: its address, an IPv6 one as its /64
// (the zero prefix when RemoteAddr is no address, as on a Unix socket).
func clientOf(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return p
}

// lockedOut reports whether the client is over its failure budget and
// token did not authenticate recently, and if so, how long until the
// client may try again.
func (l *failureLimits) lockedOut(client netip.Prefix, token string) (bool, time.Duration) {
	if l.failing.Load() == 0 {
		return false, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.addrs.peek(client)
	if !ok {
		return false, 0
	}
	tokens := lim.TokensAt(now)
	if tokens >= float64(l.burst) { // refilled: as if it never failed
		l.addrs.remove(client)
		l.failing.Store(int64(l.addrs.len()))
		return false, 0
	}
	if tokens >= 1 {
		return false, 0
	}
	if l.isKnown(maphash.String(l.seed, token)) {
		return false, 0
	}
	// Whole milliseconds, up: the float arithmetic of the bucket would
	// otherwise make 6 s into 5.999999999 s.
	return true, time.Duration(math.Ceil((1-tokens)/float64(l.every)*1000)) * time.Millisecond
}

// failed spends one of the client's failures.
func (l *failureLimits) failed(client netip.Prefix) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.addrs.get(client)
	if !ok {
		lim = rate.NewLimiter(l.every, l.burst)
		l.addrs.put(client, lim)
		l.failing.Store(int64(l.addrs.len()))
	}
	lim.AllowN(now, 1)
}

// succeeded remembers that token authenticated, so that it passes a
// locked-out address.
func (l *failureLimits) succeeded(token string) {
	h := maphash.String(l.seed, token)
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	if _, ok := l.known.get(h); !ok {
		l.known.put(h, struct{}{})
	}
}

func (l *failureLimits) isKnown(h uint64) bool {
	l.knownMu.Lock()
	defer l.knownMu.Unlock()
	_, ok := l.known.peek(h)
	return ok
}

// tooManyFailures answers a locked-out client.
func (rt *Router) tooManyFailures(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	WriteProblem(w, r, Problem{Status: http.StatusTooManyRequests, Type: problemType("rate-limited"), Title: "Too many failed authentications",
		Detail: "this address sent too many unknown, revoked or expired tokens; retry after the Retry-After seconds"})
}

// lru is a map of at most max entries that forgets the least recently
// used one to make room. It is not safe for concurrent use.
type lru[K comparable, V any] struct {
	max   int
	order *list.List // of *lruEntry, the most recently used first
	byKey map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), byKey: map[K]*list.Element{}}
}

// get returns the key's value and marks it used.
func (c *lru[K, V]) get(k K) (V, bool) {
	e, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).val, true
}

// peek returns the key's value without marking it used.
func (c *lru[K, V]) peek(k K) (V, bool) {
	e, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	return e.Value.(*lruEntry[K, V]).val, true
}

// put adds a key that is not there, forgetting the least recently used
// key when the map is full.
func (c *lru[K, V]) put(k K, v V) {
	if c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byKey, oldest.Value.(*lruEntry[K, V]).key)
	}
	c.byKey[k] = c.order.PushFront(&lruEntry[K, V]{k, v})
}

func (c *lru[K, V]) remove(k K) {
	if e, ok := c.byKey[k]; ok {
		c.order.Remove(e)
		delete(c.byKey, k)
	}
}

func (c *lru[K, V]) len() int { return c.order.Len() }
