package listeners_test

import (
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/listeners"
)

// TestOfAndProbe: a listener this process opens is listed with its
// address, and is gone once closed; an HTTP server's answer is read, a
// listener that answers no HTTP reads as status 0.
func TestOfAndProbe(t *testing.T) {
	t.Parallel()
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Host", r.Host)
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte("tea"))
		}))
	}()
	silent, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte{0, 0, 0x12, 4, 0}) // an HTTP/2 frame header
			c.Close()
		}
	}()
	addrOf := func(ln net.Listener) netip.AddrPort { return ln.Addr().(*net.TCPAddr).AddrPort() }
	got, err := listeners.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{web, silent} {
		if !slices.Contains(got, addrOf(ln)) {
			t.Errorf("%v not among %v", addrOf(ln), got)
		}
	}
	if a := listeners.Probe(addrOf(web), "evil.example", "/", time.Second); a.Status != http.StatusTeapot ||
		a.Header.Get("X-Host") != "evil.example" || a.Body != "tea" {
		t.Errorf("the web listener answered %+v", a)
	}
	if a := listeners.Probe(addrOf(silent), "evil.example", "/", time.Second); a.Status != 0 {
		t.Errorf("the other listener answered %+v, want no HTTP", a)
	}
	silent.Close()
	if got, _ := listeners.Of(os.Getpid()); slices.Contains(got, addrOf(silent)) {
		t.Errorf("%v still listed after its close", addrOf(silent))
	}
	web.Close()
}
