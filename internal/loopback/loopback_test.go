package loopback_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/paydispatch/paydispatch/internal/loopback"
)

// TestHost: loopback addresses and localhost, with or without a port,
// pass; every other name, and loopback spelt as only a resolver would
// read it, does not.
func TestHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:8233": true, "127.8.9.10:1": true, "localhost": true, "LocalHost:80": true,
		"localhost.:80": true, "[::1]:8080": true, "[::1]": true, "::1": true, "[::ffff:127.0.0.1]:80": true,
		"": false, "evil.example": false, "evil.example:8233": false, "127.0.0.1.evil.example": false,
		"localhost.evil.example": false, "evil.localhost": false, "10.0.0.1:80": false, "0.0.0.0:80": false,
		"[::]:80": false, "127.1": false, "0x7f000001:80": false, "2130706433": false, "0177.0.0.1": false,
		"[fe80::1%25lo]:80": false, "[::1%25lo]:80": false, "127.0.0.1:80:80": false,
	} {
		if got := loopback.Host(host); got != want {
			t.Errorf("Host(%q) = %t, want %t", host, got, want)
		}
	}
}

// TestGuard: on a loopback listener a foreign Host gets a 403
// problem+json and the handler never runs; a loopback Host is served;
// on another address every Host is served.
func TestGuard(t *testing.T) {
	t.Parallel()
	served := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++; w.WriteHeader(http.StatusNoContent) })
	on := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, tt := range []struct {
		listener, host string
		want           int
	}{
		{"127.0.0.1", "evil.example", http.StatusForbidden},
		{"127.0.0.1", "evil.example:8080", http.StatusForbidden},
		{"::1", "evil.example", http.StatusForbidden},
		{"127.0.0.1", "127.0.0.1:8080", http.StatusNoContent},
		{"127.0.0.1", "localhost:8080", http.StatusNoContent},
		{"0.0.0.0", "evil.example", http.StatusNoContent},
		{"10.1.2.3", "api.example", http.StatusNoContent},
	} {
		before := served
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = tt.host
		rec := httptest.NewRecorder()
		loopback.Guard(on(tt.listener), h).ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("listener %s, Host %q: %d, want %d", tt.listener, tt.host, rec.Code, tt.want)
		}
		if rec.Code == http.StatusForbidden {
			var p struct {
				Type   string
				Status int
			}
			if served != before || rec.Header().Get("Content-Type") != "application/problem+json" ||
				json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != http.StatusForbidden || p.Type != "https://paydispatch.dev/problems/foreign-host" {
				t.Errorf("listener %s, Host %q: served %t, %q %s", tt.listener, tt.host, served != before, rec.Header().Get("Content-Type"), rec.Body)
			}
		}
	}
}
