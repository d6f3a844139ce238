package pgcopy_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/pgcopy"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestCopy: rows written by Rows are stored as the values they
// were given: texts and NULLs, amounts on the small path and off it
// (negative, zero, a fraction below a group, more digits than an int64),
// times to the microsecond, dates and JSON.
func TestCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE c (id text, amount numeric(30,4), wide numeric, currency char(3), at timestamptz, day date, doc jsonb, note text)`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 3, 5, 15, 59, 58, 123456789, time.FixedZone("CET", 3600))
	rows := []struct {
		amount, wide string
		note         string
		day          time.Time
	}{
		{"125.50", "125.5", "a note", time.Date(2031, 3, 5, 23, 0, 0, 0, time.UTC)},
		{"0.0005", "0.00000000000000000001", "", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"-10000.0000", "-100000000", "", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0", "0.000", "", time.Date(2031, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"99999999999999999999999999.9999", "123456789012345678901234567890.123456789", "", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"1234567.8900", "12345678901234567", "", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	cr := pgcopy.NewRows(0)
	for i, r := range rows {
		cr.Row(8)
		cr.Text(fmt.Sprint(i))
		for _, s := range []string{r.amount, r.wide} {
			if err := cr.Numeric(decimal.RequireFromString(s)); err != nil {
				t.Fatal(err)
			}
		}
		cr.Text("EUR")
		cr.Timestamptz(at)
		cr.Date(r.day)
		cr.JSONBOrNull(map[bool]string{true: `{"k": [1, "x"]}`, false: ""}[i%2 == 0])
		cr.TextOrNull(r.note)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		n, err := pgcopy.Copy(ctx, tx, "c", []string{"id", "amount", "wide", "currency", "at", "day", "doc", "note"}, cr)
		if err == nil && n != int64(len(rows)) {
			err = fmt.Errorf("copied %d of %d", n, len(rows))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var amount, wide, currency, day string
		var got time.Time
		var doc, note *string
		if err := pool.QueryRow(ctx, `SELECT amount::text, wide::text, currency, at, day::text, doc::text, note FROM c WHERE id = $1`, fmt.Sprint(i)).
			Scan(&amount, &wide, &currency, &got, &day, &doc, &note); err != nil {
			t.Fatal(err)
		}
		wantAmount := decimal.RequireFromString(r.amount).StringFixed(4)
		if amount != wantAmount || wide != r.wide || currency != "EUR" || day != r.day.Format(time.DateOnly) {
			t.Errorf("row %d: %s %s %s %s, want %s %s EUR %s", i, amount, wide, currency, day, wantAmount, r.wide, r.day.Format(time.DateOnly))
		}
		if !got.Equal(at.Truncate(time.Microsecond)) {
			t.Errorf("row %d: at %s, want %s", i, got, at.Truncate(time.Microsecond))
		}
		if (doc != nil) != (i%2 == 0) || (doc != nil && *doc != `{"k": [1, "x"]}`) || (note != nil) != (r.note != "") {
			t.Errorf("row %d: doc %v, note %v", i, doc, note)
		}
	}
}

// FuzzNumeric: any coefficient and exponent is written as a numeric
// that reads back as the same value with its scale.
func FuzzNumeric(f *testing.F) {
	for _, c := range []struct {
		v   int64
		exp int32
	}{{12550, -2}, {5, -4}, {-100000000, -4}, {0, -3}, {99999999999999999, -4}, {1, 2}, {-9223372036854775808, -7}, {10000, 0}} {
		f.Add(c.v, c.exp)
	}
	m := pgtype.NewMap()
	f.Fuzz(func(t *testing.T, v int64, exp int32) {
		if exp < -30 || exp > 30 {
			return
		}
		d := decimal.New(v, exp)
		b, err := pgcopy.NumericBytes(d)
		if err != nil {
			t.Fatal(err)
		}
		var n pgtype.Numeric
		if err := m.Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, b, &n); err != nil {
			t.Fatalf("%s: %v (% x)", d, err, b)
		}
		if got := decimal.NewFromBigInt(n.Int, n.Exp); !got.Equal(d) {
			t.Fatalf("%d × 10^%d written as % x, read as %s", v, exp, b, got)
		}
		if scale := int32(binary.BigEndian.Uint16(b[6:8])); exp <= 0 && scale != -exp {
			t.Fatalf("%d × 10^%d: scale %d", v, exp, scale)
		}
	})
}
