// Package loopback keeps what listens on this machine's loopback for
// this machine: a listener on 127.0.0.1 answers only requests addressed
// to it by a loopback name. A browser sends the page's own name as the
// Host, so a web page whose DNS name is rebound to 127.0.0.1 (DNS
// rebinding) is refused instead of reading the answers.
package loopback

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Host reports whether hostport, a request's Host, names this machine's
// loopback: localhost, or an address in 127.0.0.0/8 or ::1 written as
// an address is (a port allowed). Other spellings that a resolver might
// take (127.1, 0x7f000001) are not names a browser sends for loopback;
// they are refused.
func Host(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// Addr reports whether a listener's address is on the loopback.
func Addr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Only serves h to requests whose Host is a loopback name (Host) and
// answers the others 403 with a problem+json.
func Only(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Host(r.Host) {
			Refuse(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Guard is Only(h) for a listener on the loopback, and h for one on
// another address, which other machines reach by names of their own.
func Guard(listener net.Addr, h http.Handler) http.Handler {
	if Addr(listener) {
		return Only(h)
	}
	return h
}

// Refuse answers a request whose Host is not a loopback name.
func Refuse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(`{"type":"https://paydispatch.dev/problems/foreign-host","title":"Forbidden host","status":403,` +
		`"detail":"this listener answers only requests addressed to a loopback name (127.0.0.1, [::1] or localhost)"}` + "\n"))
}
