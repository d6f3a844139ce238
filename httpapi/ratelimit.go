package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/paydispatch/paydispatch/auth"
)

type tokenLimits struct {
	every   rate.Limit
	burst   int
	mu      sync.Mutex
	byToken map[string]*rate.Limiter
}

// allow reports whether the principal may make a request now, and if not,
// how long until it may.
func (l *tokenLimits) allow(tokenID string) (bool, time.Duration) {
	l.mu.Lock()
	lim, ok := l.byToken[tokenID]
	if !ok {
		lim = rate.NewLimiter(l.every, l.burst)
		l.byToken[tokenID] = lim
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}

// limited writes 429 when r's principal is over its rate, and says so.
func (rt *Router) limited(w http.ResponseWriter, r *http.Request) bool {
	p, ok := auth.FromContext(r.Context())
	if rt.limits == nil || !ok {
		return false
	}
	allowed, wait := rt.limits.allow(p.TokenID)
	if allowed {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	WriteProblem(w, r, Problem{Status: http.StatusTooManyRequests, Type: problemType("rate-limited"),
		Detail: "this token sends more than " + strconv.FormatFloat(float64(rt.limits.every), 'f', -1, 64) + " requests a second; retry after the Retry-After seconds"})
	return true
}
