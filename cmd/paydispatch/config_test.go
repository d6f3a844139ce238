package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }

// TestConfigTenantPacing: config tenant-pacing sets, lists and removes a
// tenant's pacing config; an unknown config or the default tenant exits 2
// and stores nothing.
func TestConfigTenantPacing(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pacing.New(pacing.Config{Pool: pool}).PutConfig(context.Background(), pacing.Limit{Name: "acme-rail", MaxPerWindow: 5, Window: time.Second, Headroom: 10}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": url}
	steps := []struct {
		args       []string
		code       int
		out, errOf string
	}{
		{[]string{"config", "tenant-pacing", "PAYMENT", "acme", "acme-rial"}, 2, "", `no rate-limit config "acme-rial": create it first`},
		{[]string{"config", "tenant-pacing", "PAYMENT", "*", "acme-rail"}, 2, "", `the default pacing config is the item type's pacing_config`},
		{[]string{"config", "tenant-pacing", "PAYMENT", "<img src=x>", "acme-rail"}, 2, "", `a tenant id: 1 to 64 letters, digits`},
		{[]string{"config", "tenant-pacing", "PAYMENT", "acme"}, 2, "", `want 'config tenant-pacing ITEM_TYPE TENANT CONFIG'`},
		{[]string{"config", "tenants", "PAYMENT"}, 0, "", ""}, // nothing stored by the above
		{[]string{"config", "tenant-pacing", "PAYMENT", "acme", "acme-rail"}, 0, "PAYMENT acme pacing_config=acme-rail\n", ""},
		{[]string{"config", "tenants", "PAYMENT"}, 0, "PAYMENT acme pacing_config=acme-rail\n", ""},
		{[]string{"config", "tenant-pacing-delete", "PAYMENT", "acme"}, 0, "", ""},
		{[]string{"config", "tenant-pacing-delete", "PAYMENT", "acme"}, 1, "", "no pacing config for tenant"},
		{[]string{"config", "tenants", "PAYMENT"}, 0, "", ""},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(s.args, env)
		if code != s.code || stdout != s.out || (s.errOf != "" && !strings.Contains(stderr, s.errOf)) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				s.args, code, stdout, stderr, s.code, s.out, s.errOf)
		}
	}
}

// TestConfigDeliveryOrder: config delivery-order shows and sets a tenant's
// delivery order; a bad mode exits 2 and changes nothing; deleting the
// tenant's own setting brings back the default ('*'), which can change too.
func TestConfigDeliveryOrder(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t)}
	steps := []struct {
		args       []string
		code       int
		out, errOf string
	}{
		{[]string{"config", "delivery-order", "acme"}, 0, "acme delivery_order=THROUGHPUT\n", ""},
		{[]string{"config", "delivery-order", "acme", "fifo"}, 2, "", `want STRICT (sequence N+1 waits for N) or THROUGHPUT`},
		{[]string{"config", "delivery-order", "acme"}, 0, "acme delivery_order=THROUGHPUT\n", ""},
		{[]string{"config", "delivery-order", "acme", "strict"}, 0, "acme delivery_order=STRICT\n", ""},
		{[]string{"config", "delivery-order", "globex"}, 0, "globex delivery_order=THROUGHPUT\n", ""},
		{[]string{"config", "delivery-order-delete", "acme"}, 0, "", ""},
		{[]string{"config", "delivery-order-delete", "acme"}, 2, "", `tenant "acme" has no delivery order of its own`},
		{[]string{"config", "delivery-order", "*", "STRICT"}, 0, "* delivery_order=STRICT\n", ""},
		{[]string{"config", "delivery-order", "acme"}, 0, "acme delivery_order=STRICT\n", ""},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(s.args, env)
		if code != s.code || stdout != s.out || (s.errOf != "" && !strings.Contains(stderr, s.errOf)) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				s.args, code, stdout, stderr, s.code, s.out, s.errOf)
		}
	}
}
