package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
)

// from sends a request to h from a client address.
func from(h http.Handler, addr, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/v1/payments/p", nil)
	req.RemoteAddr = addr
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestAuthFailuresLimited: an address that sends many unknown tokens gets
// 401 for its budget, then 429 problem+json with Retry-After, its tokens
// no longer looked up; a valid token from another address is served, and
// so is one from the same address that authenticated before; a valid
// token never seen is refused there until the address is let go. An IPv6
// client is its /64. Without the limit, every guess is a 401 (issue 44).
func TestAuthFailuresLimited(t *testing.T) {
	t.Parallel()
	limitedRouter := func(perMinute int) (*httpapi.Router, *countingTokens) {
		tokens := &countingTokens{fakeTokens: fakeTokens{
			"valid":   {TokenID: "a", Scopes: []auth.Scope{auth.PaymentsRead}},
			"unseen":  {TokenID: "b", Scopes: []auth.Scope{auth.PaymentsRead}},
			"another": {TokenID: "c", Scopes: []auth.Scope{auth.PaymentsRead}},
		}}
		rt := newRouter(t, httpapi.RouterConfig{Auth: tokens, AuthFailuresPerMinute: perMinute, Services: httpapi.Services{Payments: &fakePayments{byID: map[string]payment.Request{"p": {TenantID: "acme"}}}}})
		return rt, tokens
	}

	t.Run("limited", func(t *testing.T) {
		t.Parallel()
		const budget = 3 // a minute: one back every 20 s, longer than the test
		rt, tokens := limitedRouter(budget)
		const guesser = "203.0.113.9:40000"
		if code := from(rt, guesser, "valid").Code; code != 200 {
			t.Fatalf("a valid token before any failure: %d", code)
		}
		var codes []int
		for i := range 400 {
			rec := from(rt, guesser, "guess-"+strconv.Itoa(i))
			codes = append(codes, rec.Code)
			if rec.Code == http.StatusTooManyRequests {
				retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
				if err != nil || retry < 1 || retry > 60 || rec.Header().Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(rec.Body.String(), "/problems/rate-limited") {
					t.Fatalf("429 without Retry-After seconds or problem: %v %s", rec.Header(), rec.Body)
				}
			}
		}
		for i, code := range codes {
			if want := map[bool]int{true: 401, false: 429}[i < budget]; code != want {
				t.Fatalf("guess %d: %d, want %d: codes %v", i+1, code, want, codes[:min(len(codes), 10)])
			}
		}
		// The guesses past the budget cost no lookup.
		if got := tokens.lookups["guess-"+strconv.Itoa(budget)]; got != 0 {
			t.Errorf("a locked-out guess was looked up %d times", got)
		}
		for _, c := range []struct {
			name, addr, token string
			want              int
		}{
			{"a valid token from another address", "198.51.100.7:1234", "another", 200},
			{"a guess from another address", "198.51.100.7:1234", "guess-x", 401},
			{"the valid token that authenticated before, same address", guesser, "valid", 200},
			{"the same address on another port", "203.0.113.9:50000", "guess-y", 429},
			{"a valid token never seen, same address", guesser, "unseen", 429},
			{"no token, same address", guesser, "", 401},
		} {
			if code := from(rt, c.addr, c.token).Code; code != c.want {
				t.Errorf("%s: %d, want %d", c.name, code, c.want)
			}
		}
	})

	t.Run("an IPv6 client is its /64", func(t *testing.T) {
		t.Parallel()
		rt, _ := limitedRouter(2)
		for range 2 {
			from(rt, "[2001:db8:1:2::1]:443", "guess")
		}
		if code := from(rt, "[2001:db8:1:2:ffff::9]:443", "guess").Code; code != 429 {
			t.Errorf("the same /64: %d, want 429", code)
		}
		if code := from(rt, "[2001:db8:1:3::1]:443", "guess").Code; code != 401 {
			t.Errorf("another /64: %d, want 401", code)
		}
	})

	t.Run("off", func(t *testing.T) {
		t.Parallel()
		rt, _ := limitedRouter(0)
		for i := range 400 {
			if code := from(rt, "203.0.113.9:40000", "guess").Code; code != 401 {
				t.Fatalf("guess %d without a limit: %d", i+1, code)
			}
		}
	})
}

// countingTokens counts the lookups of each token.
type countingTokens struct {
	fakeTokens
	lookups map[string]int
}

func (c *countingTokens) Authenticate(ctx context.Context, token string) (auth.Principal, error) {
	if c.lookups == nil {
		c.lookups = map[string]int{}
	}
	c.lookups[token]++
	return c.fakeTokens.Authenticate(ctx, token)
}

// BenchmarkAuthenticateValid measures a valid token's way through the
// router (the token store a map, so that only the router's own work
// shows): without the failure limit, with it, and with it while another
// address is locked out. The figures should be the same within noise:
// a valid token pays one map read for the limit.
//
//	go test -run '^$' -bench BenchmarkAuthenticateValid ./httpapi/
func BenchmarkAuthenticateValid(b *testing.B) {
	for _, bb := range []struct {
		name      string
		perMinute int
		attack    bool
	}{
		{"limit off", 0, false},
		{"limit on", 30, false},
		{"limit on, another address locked out", 30, true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			rt := newRouter(b, httpapi.RouterConfig{Auth: fakeTokens{"valid": {TokenID: "a", Scopes: []auth.Scope{auth.PaymentsRead}}}, AuthFailuresPerMinute: bb.perMinute, Services: httpapi.Services{Payments: &fakePayments{byID: map[string]payment.Request{"p": {TenantID: "acme"}}}}})
			if bb.attack {
				for range 100 {
					from(rt, "203.0.113.9:1", "guess")
				}
			}
			req := httptest.NewRequest("GET", "/v1/payments/p", nil)
			req.RemoteAddr = "198.51.100.7:1234"
			req.Header.Set("Authorization", "Bearer valid")
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				rt.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d", rec.Code)
				}
			}
		})
	}
}
