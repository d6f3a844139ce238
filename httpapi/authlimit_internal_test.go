package httpapi

import (
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestFailureLimitsOverTime: a locked-out address is told how long until
// its next try, gets one try back at the limit's rate, and is forgotten
// once its budget is whole again; the addresses and tokens remembered
// stay within their bounds, the least recently failing and the oldest
// forgotten first.
func TestFailureLimitsOverTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	l := newFailureLimits(6, 3, 2, func() time.Time { return at }) // one back every 10 s
	a := netip.MustParsePrefix("203.0.113.9/32")
	for range 6 {
		if locked, _ := l.lockedOut(a, "guess"); locked {
			t.Fatal("locked out within its budget")
		}
		l.failed(a)
	}
	locked, wait := l.lockedOut(a, "guess")
	if !locked || wait != 10*time.Second {
		t.Fatalf("after its budget: locked %t, wait %v; want 10s", locked, wait)
	}
	at = at.Add(4 * time.Second)
	if _, wait := l.lockedOut(a, "guess"); wait != 6*time.Second {
		t.Fatalf("4 s later: wait %v, want 6s", wait)
	}
	at = at.Add(6 * time.Second)
	if locked, _ := l.lockedOut(a, "guess"); locked {
		t.Fatal("still locked out once a try came back")
	}
	l.failed(a)
	if locked, _ := l.lockedOut(a, "guess"); !locked {
		t.Fatal("the try that came back was not spent")
	}
	at = at.Add(time.Minute)
	if locked, _ := l.lockedOut(a, "guess"); locked || l.failing.Load() != 0 || l.addrs.len() != 0 {
		t.Fatalf("a minute later: locked %t, %d addresses tracked; want none", locked, l.addrs.len())
	}

	// Three addresses at most: a fourth makes the least recently failing
	// one forgotten.
	addrs := []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("192.0.2.2/32"),
		netip.MustParsePrefix("192.0.2.3/32"), netip.MustParsePrefix("192.0.2.4/32")}
	for _, p := range addrs[:3] {
		for range 6 {
			l.failed(p)
		}
	}
	l.failed(addrs[0]) // the first fails again: the second is now the least recent
	for range 6 {
		l.failed(addrs[3])
	}
	if l.addrs.len() != 3 || l.failing.Load() != 3 {
		t.Fatalf("%d addresses tracked, want 3", l.addrs.len())
	}
	for i, want := range []bool{true, false, true, true} {
		if locked, _ := l.lockedOut(addrs[i], "guess"); locked != want {
			t.Errorf("%s: locked %t, want %t", addrs[i], locked, want)
		}
	}

	// Two tokens at most: a third makes the least recently used one
	// forgotten, and it passes a locked-out address no more.
	for _, tok := range []string{"t1", "t2", "t1", "t3"} {
		l.succeeded(tok)
	}
	if l.known.len() != 2 {
		t.Fatalf("%d tokens remembered, want 2", l.known.len())
	}
	for tok, want := range map[string]bool{"t1": false, "t2": true, "t3": false} {
		if locked, _ := l.lockedOut(addrs[0], tok); locked != want {
			t.Errorf("%s at a locked-out address: locked %t, want %t", tok, locked, want)
		}
	}
}

// TestClientOf: a client is its IPv4 address, or its IPv6 /64; an IPv4
// address written as IPv6 is the IPv4 one.
func TestClientOf(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"203.0.113.9:443":              "203.0.113.9/32",
		"[2001:db8:1:2:3:4:5:6]:443":   "2001:db8:1:2::/64",
		"[::ffff:203.0.113.9]:443":     "203.0.113.9/32",
		"@":                            "invalid Prefix",
		"not an address":               "invalid Prefix",
		"[fe80::1%eth0]:443":           "fe80::/64",
		"[2001:db8:1:2:ffff::1]:65535": "2001:db8:1:2::/64",
	} {
		r := &http.Request{RemoteAddr: remote}
		if got := clientOf(r).String(); got != want {
			t.Errorf("%q: %s, want %s", remote, got, want)
		}
	}
}
