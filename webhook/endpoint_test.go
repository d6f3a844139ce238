package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestCheckURL: the default policy takes https URLs of public hosts
// only; the open one (AllowHTTP, AllowPrivate) also takes http and
// private addresses. Neither takes a URL without a host, with
// credentials or a fragment, a port out of 1 to 65535, or a host that
// a resolver reads as an address but that is not written as one.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	strict, open := webhook.Policy{}, webhook.Policy{AllowHTTP: true, AllowPrivate: true}
	for _, tt := range []struct {
		url            string
		strict, opened bool // accepted by each policy
	}{
		{"https://hooks.example.com/paydispatch", true, true},
		{"https://hooks.example.com:8443/p?x=1", true, true},
		{"https://hooks.example.com:65535/p", true, true},
		{"https://hooks.example.com./p", true, true},
		{"https://1.2.3.4.example.com/p", true, true},
		{"https://0x7f.example.com/p", true, true},
		{"http://hooks.example.com/p", false, true},
		{"https://127.0.0.1/p", false, true},
		{"https://127.0.0.1./p", false, true},
		{"https://[::1]:8080/p", false, true},
		{"https://10.1.2.3/p", false, true},
		{"https://169.254.169.254/latest/meta-data", false, true},
		{"https://100.64.0.1/p", false, true},
		{"https://[::ffff:127.0.0.1]/p", false, true},
		{"https://8.8.8.8/p", true, true},
		{"https://[2001:4860:4860::8888]/p", true, true},
		{"ftp://hooks.example.com/p", false, false},
		{"https://user:pw@hooks.example.com/p", false, false},
		{"https://hooks.example.com/p#frag", false, false},
		{"https:///p", false, false},
		{"/relative", false, false},
		{"", false, false},
		{"https://" + strings.Repeat("a", 2050) + ".com", false, false},
	} {
		if err := strict.CheckURL(tt.url); (err == nil) != tt.strict {
			t.Errorf("default policy, %.60q: err = %v, want accepted %v", tt.url, err, tt.strict)
		}
		if err := open.CheckURL(tt.url); (err == nil) != tt.opened {
			t.Errorf("open policy, %.60q: err = %v, want accepted %v", tt.url, err, tt.opened)
		}
	}
}

// TestCheckURLSpellings: every spelling of a non-public address that a
// resolver takes is refused under the default policy, naming the url
// field: glibc's inet_aton forms (octal, hex, one number, short forms;
// getaddrinfo reads a host so before any lookup), IPv6 addresses that
// carry a non-public IPv4 one (NAT64, 6to4, IPv4-mapped and -compatible,
// SIIT), the reserved IPv6 ranges, localhost names, and ports out of
// range. The inet_aton forms are refused under the open policy too:
// Go's resolver would look them up in DNS instead, so where they lead
// depends on the resolver.
func TestCheckURLSpellings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url string
		// opened: accepted by the open policy (a non-public address
		// written as one).
		opened bool
		detail string // in the refusal's detail
	}{
		{"https://0177.0.0.1/", false, "127.0.0.1"},
		{"https://0177.0.0.01/", false, "127.0.0.1"},
		{"https://2130706433/", false, "127.0.0.1"},
		{"https://0x7f000001/", false, "127.0.0.1"},
		{"https://0X7F000001/", false, "127.0.0.1"},
		{"https://0x7f.0x0.0x0.0x1/", false, "127.0.0.1"},
		{"https://127.1/", false, "127.0.0.1"},
		{"https://127.0.1/", false, "127.0.0.1"},
		{"https://0x7f.1/", false, "127.0.0.1"},
		{"https://017700000001/", false, "127.0.0.1"},
		{"https://0/", false, "0.0.0.0"},
		{"https://10.1/", false, "10.0.0.1"},
		{"https://167772161/", false, "10.0.0.1"},
		{"https://0xa9fea9fe/latest/meta-data", false, "169.254.169.254"},
		{"https://169.254.43518/", false, "169.254.169.254"},
		{"https://2130706433./", false, "127.0.0.1"},
		{"https://134744072/", false, "8.8.8.8"}, // public, but not written as an address
		{"https://1.2.3.4.5/", false, "last label is a number"},
		{"https://256.0.0.1/", false, "last label is a number"},
		{"https://08.0.0.1/", false, "last label is a number"},
		{"https://4294967296/", false, "last label is a number"},
		{"https://example.0x1f/", false, "last label is a number"},
		{"https://[64:ff9b::7f00:1]/", true, "is not"},
		{"https://[64:ff9b::127.0.0.1]/", true, "is not"},
		{"https://[64:ff9b::a9fe:a9fe]/", true, "is not"},
		{"https://[64:ff9b:1::7f00:1]/", true, "is not"},
		{"https://[2002:7f00:1::]/", true, "is not"},
		{"https://[2002:a00:1::1]/", true, "is not"},
		{"https://[::ffff:7f00:1]/", true, "is not"},
		{"https://[::ffff:10.0.0.1]/", true, "is not"},
		{"https://[::127.0.0.1]/", true, "is not"},
		{"https://[::7f00:1]/", true, "is not"},
		{"https://[::ffff:0:7f00:1]/", true, "is not"},
		{"https://[::]/", true, "is not"},
		{"https://[fc00::1]/", true, "is not"},
		{"https://[fd12:3456::1]/", true, "is not"},
		{"https://[fe80::1]/", true, "is not"},
		{"https://[fec0::1]/", true, "is not"},
		{"https://[ff02::1]/", true, "is not"},
		{"https://[100::1]/", true, "is not"},
		{"https://[2001::1]/", true, "is not"},
		{"https://[2001:db8::1]/", true, "is not"},
		{"https://[3fff::1]/", true, "is not"},
		{"https://[fe80::1%25eth0]/", false, "zone"},
		{"https://192.0.2.1/", true, "is not"},
		{"https://198.51.100.7/", true, "is not"},
		{"https://203.0.113.9/", true, "is not"},
		{"https://255.255.255.255/", true, "is not"},
		{"https://224.0.0.1/", true, "is not"},
		{"https://１２７.0.0.1/", true, "is not"},
		{"https://127。0。0。1/", true, "is not"},
		{"https://０x7f000001/", false, "127.0.0.1"},
		{"https://ⓛocalhost/", true, "loopback"},
		{"https://localhost/", true, "loopback"},
		{"https://LocalHost./", true, "loopback"},
		{"https://hooks.localhost/", true, "loopback"},
		{"https://example.com:99999/", false, "port"},
		{"https://example.com:65536/", false, "port"},
		{"https://example.com:0/", false, "port"},
		{"https://example.com:/", false, "port"},
		{"https://example.com:abc/", false, "port"},
		{"https://example.com:-1/", false, "port"},
		{"https://[::1]:99999/", false, "port"},
	} {
		err := (webhook.Policy{}).CheckURL(tt.url)
		var bad *field.Invalid
		if !errors.As(err, &bad) || len(bad.Fields) != 1 || bad.Fields[0].Field != "url" || !strings.Contains(bad.Fields[0].Detail, tt.detail) {
			t.Errorf("default policy, %q: %v, want refused naming url, its detail with %q", tt.url, err, tt.detail)
		}
		if err := (webhook.Policy{AllowHTTP: true, AllowPrivate: true}).CheckURL(tt.url); (err == nil) != tt.opened {
			t.Errorf("open policy, %q: %v, want accepted %t", tt.url, err, tt.opened)
		}
	}
}

// TestRegisterBounded: a tenant registers at most MaxEndpoints endpoints,
// also when it registers many at once; another tenant is not held back.
func TestRegisterBounded(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: webhook.Policy{}})
	ctx := context.Background()
	var made, refused atomic.Int64
	var g errgroup.Group
	for i := range 40 {
		g.Go(func() error {
			_, _, err := store.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: fmt.Sprintf("https://hooks.acme.example/%d", i)})
			var bad *field.Invalid
			switch {
			case err == nil:
				made.Add(1)
			case errors.As(err, &bad) && bad.Has("tenantId"):
				refused.Add(1)
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if made.Load() != webhook.MaxEndpoints || refused.Load() != 40-webhook.MaxEndpoints {
		t.Fatalf("%d made, %d refused; want %d made", made.Load(), refused.Load(), webhook.MaxEndpoints)
	}
	if _, _, err := store.Register(ctx, webhook.NewEndpoint{TenantID: "globex", URL: "https://hooks.globex.example/"}); err != nil {
		t.Fatal(err)
	}
}

// TestDialRefusesNonPublic: when a delivery connects, the address its
// name resolved to is checked again, IPv4 inside IPv6 included (a DNS64
// resolver answers NAT64 addresses for IPv4-only names, so a public one
// passes); the open policy lets every address through.
func TestDialRefusesNonPublic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		address string
		public  bool
	}{
		{"8.8.8.8:443", true},
		{"[2001:4860:4860::8888]:443", true},
		{"[64:ff9b::808:808]:443", true},
		{"[2002:808:808::1]:443", true},
		{"127.0.0.1:443", false},
		{"10.0.0.1:443", false},
		{"169.254.169.254:80", false},
		{"[::1]:443", false},
		{"[::ffff:127.0.0.1]:443", false},
		{"[64:ff9b::7f00:1]:443", false},
		{"[64:ff9b::a00:1]:443", false},
		{"[2002:7f00:1::]:443", false},
		{"[::7f00:1]:443", false},
		{"[fd00::1]:443", false},
		{"[fe80::1%25lo]:443", false},
		{"[2001::1]:443", false},
		{"[2001:db8::1]:443", false},
		{"not-an-address:443", false},
	} {
		if err := (webhook.Policy{}).DialControl(tt.address); (err == nil) != tt.public {
			t.Errorf("dial %s: %v, want allowed %t", tt.address, err, tt.public)
		}
		if err := (webhook.Policy{AllowPrivate: true}).DialControl(tt.address); err != nil {
			t.Errorf("dial %s under the open policy: %v", tt.address, err)
		}
	}
}
