package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

// TestTypesEncodeDirectly: a pool's connections encode a UUID and a
// decimal straight to their binary form, not through driver.Valuer's
// string (pgx's fallback, which builds an error each time), and both come
// back exactly.
func TestTypesEncodeDirectly(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	m := conn.Conn().TypeMap()
	for _, tt := range []struct {
		oid   uint32
		value any
	}{
		{pgtype.UUIDOID, uuid.New()},
		{pgtype.NumericOID, decimal.RequireFromString("1.5")},
		{pgtype.NumericOID, &[]decimal.Decimal{decimal.Zero}[0]},
		{pgtype.UUIDOID, &[]uuid.UUID{uuid.New()}[0]},
		{pgtype.NumericArrayOID, []decimal.Decimal{decimal.Zero}},
	} {
		plan := m.PlanEncode(tt.oid, pgtype.BinaryFormatCode, tt.value)
		if plan == nil || strings.Contains(fmt.Sprintf("%T", plan), "DriverValuer") {
			t.Errorf("%T encodes with %T", tt.value, plan)
		}
	}
	roundTrip(t, pool)
}

func roundTrip(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []string{"0", "-0.01", "1234567890123456789012.3456", "0.000000000001", "99999999999999999999.9999"} {
		d := decimal.RequireFromString(s)
		var back decimal.Decimal
		var text string
		var viaPointer decimal.Decimal
		if err := pool.QueryRow(ctx, "SELECT $1::numeric, $1::numeric::text, $2::numeric", d, &d).Scan(&back, &text, &viaPointer); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !back.Equal(d) || !viaPointer.Equal(d) || text != d.String() && decimal.RequireFromString(text).Cmp(d) != 0 {
			t.Errorf("%s came back as %s (%s in PostgreSQL)", s, back, text)
		}
	}
	id := uuid.New()
	var back uuid.UUID
	var text string
	var none *uuid.UUID
	var null bool
	if err := pool.QueryRow(ctx, "SELECT $1::uuid, $2::uuid::text, $3::uuid IS NULL", id, &id, none).Scan(&back, &text, &null); err != nil ||
		back != id || text != id.String() || !null {
		t.Errorf("%s came back as %s (%s), %v", id, back, text, err)
	}
	var ids []uuid.UUID
	if err := pool.QueryRow(ctx, "SELECT $1::uuid[]", []uuid.UUID{id, id}).Scan(&ids); err != nil || len(ids) != 2 || ids[1] != id {
		t.Errorf("an array of UUIDs came back as %v, %v", ids, err)
	}
}

// TestPoolSettings: a pool's connections plan each statement for its
// values and never JIT-compile, unless the connection string says
// otherwise.
func TestPoolSettings(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	withOptions := func(kv, escaped string) string {
		if strings.HasPrefix(url, "postgres") {
			return url + map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "options=" + escaped
		}
		return url + " options='" + kv + "'" // a keyword/value string
	}
	for _, tt := range []struct {
		name, url, jit string
	}{
		{"defaults", url, "off"},
		{"jit in the options", withOptions("-c jit=on", "-c%20jit%3Don"), "on"},
		{"another jit setting in the options", withOptions("-c jit_above_cost=1000", "-c%20jit_above_cost%3D1000"), "off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, err := postgres.NewPool(context.Background(), tt.url, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			var jit, planCache string
			if err := pool.QueryRow(context.Background(), `SELECT current_setting('jit'), current_setting('plan_cache_mode')`).Scan(&jit, &planCache); err != nil {
				t.Fatal(err)
			}
			if jit != tt.jit || planCache != "force_custom_plan" {
				t.Fatalf("jit %s, plan_cache_mode %s; want %s, force_custom_plan", jit, planCache, tt.jit)
			}
		})
	}
}
