package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	strict, open := webhook.Policy{}, webhook.Policy{AllowHTTP: true, AllowPrivate: true}
	for _, tt := range []struct {
		url            string
		strict, opened bool // accepted by each policy
	}{
		{"https://hooks.example.com/paydispatch", true, true},
		{"https://hooks.example.com:8443/p?x=1", true, true},
		{"http://hooks.example.com/p", false, true},
		{"https://127.0.0.1/p", false, true},
		{"https://[::1]:8080/p", false, true},
		{"https://10.1.2.3/p", false, true},
		{"https://169.254.169.254/latest/meta-data", false, true},
		{"https://100.64.0.1/p", false, true},
		{"https://[::ffff:127.0.0.1]/p", false, true},
		{"https://8.8.8.8/p", true, true},
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

// TestRegisterBounded: a tenant registers at most MaxEndpoints endpoints,
// also when it registers many at once; another tenant is not held back.
func TestRegisterBounded(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := webhook.Store{DB: pool, Policy: webhook.Policy{}}
	ctx := context.Background()
	var made, refused atomic.Int64
	var g errgroup.Group
	for i := range 40 {
		g.Go(func() error {
			_, _, err := store.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: fmt.Sprintf("https://hooks.acme.example/%d", i)})
			var bad *webhook.InvalidError
			switch {
			case err == nil:
				made.Add(1)
			case errors.As(err, &bad) && bad.Field == "tenantId":
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
