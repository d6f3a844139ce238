package calendar_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestPutGetList: a calendar comes back as stored, in order; a second Put
// replaces it; List shows the built-ins first.
func TestPutGetList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	in := calendar.Calendar{Name: "SEPA_DE", Weekend: []time.Weekday{time.Saturday, time.Sunday},
		ClosingDays: dates("2026-12-24", "2026-10-03", "2026-12-24", "1970-01-01", "9999-12-31")}
	put, err := calendar.Put(ctx, pool, in)
	if err != nil {
		t.Fatal(err)
	}
	wantDays := dates("1970-01-01", "2026-10-03", "2026-12-24", "9999-12-31")
	if put.Name != "SEPA_DE" || put.BuiltIn || !slices.Equal(put.Weekend, []time.Weekday{time.Sunday, time.Saturday}) ||
		!slices.Equal(put.ClosingDays, wantDays) || put.CreatedAt.IsZero() || !put.UpdatedAt.Equal(put.CreatedAt) {
		t.Fatalf("Put returned %+v", put)
	}
	if !slices.Equal(in.ClosingDays, dates("2026-12-24", "2026-10-03", "2026-12-24", "1970-01-01", "9999-12-31")) {
		t.Errorf("Put reordered the caller's days: %v", in.ClosingDays)
	}
	got, err := calendar.Get(ctx, pool, "SEPA_DE")
	if err != nil || !slices.Equal(got.ClosingDays, wantDays) || !slices.Equal(got.Weekend, put.Weekend) || !got.CreatedAt.Equal(put.CreatedAt) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got.Open(date("2026-10-03")) || !got.Open(date("2026-10-02")) || got.Open(date("2026-10-04")) {
		t.Error("the stored calendar opens on the wrong days")
	}

	// Replaced whole; created_at kept.
	re, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "SEPA_DE", Weekend: []time.Weekday{time.Sunday}})
	if err != nil || len(re.ClosingDays) != 0 || !slices.Equal(re.Weekend, []time.Weekday{time.Sunday}) ||
		!re.CreatedAt.Equal(put.CreatedAt) || !re.UpdatedAt.After(put.UpdatedAt) {
		t.Fatalf("second Put = %+v, %v", re, err)
	}
	if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "A-first", ClosingDays: dates("2026-01-02")}); err != nil {
		t.Fatal(err)
	}
	list, err := calendar.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"TARGET2", "WEEKDAYS", "A-first", "SEPA_DE"}) || !list[0].BuiltIn || list[2].BuiltIn ||
		!slices.Equal(list[2].ClosingDays, dates("2026-01-02")) {
		t.Fatalf("List: %v", names)
	}
	if list[0].Open(date("2026-12-25")) {
		t.Error("List's TARGET2 opens on Christmas")
	}

	if _, err := calendar.Get(ctx, pool, "nope"); !errors.Is(err, calendar.ErrNotFound) {
		t.Errorf("Get(nope): %v", err)
	}
}

// TestBuiltInsAnsweredFromCode: built-ins need no database, and their
// names, in any case, cannot be put.
func TestBuiltInsAnsweredFromCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{calendar.NameTARGET2, calendar.NameWEEKDAYS} {
		c, err := calendar.Get(ctx, nil, name) // a nil DBTX: touching it panics
		if err != nil || c.Name != name || !c.BuiltIn {
			t.Errorf("Get(%s) = %+v, %v", name, c, err)
		}
	}
	pool := pgtest.NewPool(t)
	for _, name := range []string{"TARGET2", "target2", "Target2", "WEEKDAYS", "weekdays"} {
		_, err := calendar.Put(ctx, pool, calendar.Calendar{Name: name, Weekend: []time.Weekday{time.Sunday}})
		if !errors.Is(err, calendar.ErrBuiltIn) {
			t.Errorf("Put(%s): %v, want ErrBuiltIn", name, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM calendars`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows, %v", n, err)
	}
	// A stored name of another case does not shadow the built-in.
	if c, err := calendar.Get(ctx, pool, "TARGET2"); err != nil || !c.BuiltIn || c.Open(date("2026-04-03")) {
		t.Errorf("Get(TARGET2) = %+v, %v", c, err)
	}
}

// TestPutJoinsTheCallersTransaction: a Put commits or rolls back with the
// caller's transaction (the admin API's change and its audit entry).
func TestPutJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, commit := range []bool{false, true} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := calendar.Put(ctx, tx, calendar.Calendar{Name: "tx", ClosingDays: dates("2026-08-15")}); err != nil {
			t.Fatal(err)
		}
		if c, err := calendar.Get(ctx, tx, "tx"); err != nil || !slices.Equal(c.ClosingDays, dates("2026-08-15")) {
			t.Fatalf("Get in the transaction: %+v, %v", c, err)
		}
		if _, err := calendar.Get(ctx, pool, "tx"); !errors.Is(err, calendar.ErrNotFound) {
			t.Fatalf("seen outside before commit: %v", err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = calendar.Get(ctx, pool, "tx")
		if commit && err != nil || !commit && !errors.Is(err, calendar.ErrNotFound) {
			t.Errorf("after commit=%v: %v", commit, err)
		}
	}
}

// TestPutRefusesInvalid: a calendar that fails Validate stores nothing and
// says which field is wrong.
func TestPutRefusesInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, c := range []calendar.Calendar{
		{Name: "bad name"},
		{Name: "x", Weekend: []time.Weekday{0, 1, 2, 3, 4, 5, 6}},
		{Name: "x", ClosingDays: dates("1969-12-31")},
	} {
		var ve *field.Invalid
		if _, err := calendar.Put(ctx, pool, c); !errors.As(err, &ve) || len(ve.Fields) != 1 {
			t.Errorf("Put(%+v): %v", c, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM calendars`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows, %v", n, err)
	}
}

// TestTableRefusesWhatValidateRefuses: the table's checks hold a row
// written around the package, and a row out of order is read in order.
func TestTableRefusesWhatValidateRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, sql := range []string{
		`INSERT INTO calendars (name) VALUES ('a b')`,
		`INSERT INTO calendars (name) VALUES ('')`,
		`INSERT INTO calendars (name, weekend) VALUES ('x', '{7}')`,
		`INSERT INTO calendars (name, weekend) VALUES ('x', '{0,1,2,3,4,5,6}')`,
		`INSERT INTO calendars (name, closing_days) VALUES ('x', '{1969-12-31}')`,
		`INSERT INTO calendars (name, closing_days) VALUES ('x', '{infinity}')`,
		`INSERT INTO calendars (name, closing_days) VALUES ('x', '{2026-01-01,NULL}')`,
		`INSERT INTO calendars (name, closing_days) VALUES ('x', (SELECT array_agg(d::date) FROM generate_series('2000-01-01'::date, '2000-01-01'::date + 10000, '1 day') d))`,
	} {
		if _, err := pool.Exec(ctx, sql); err == nil {
			t.Errorf("%s: accepted", sql)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO calendars (name, weekend, closing_days) VALUES ('hand', '{6,0,6}', '{2026-12-25,2026-01-01,2026-12-25}')`); err != nil {
		t.Fatal(err)
	}
	c, err := calendar.Get(ctx, pool, "hand")
	if err != nil || !slices.Equal(c.Weekend, []time.Weekday{0, 6}) || !slices.Equal(c.ClosingDays, dates("2026-01-01", "2026-12-25")) || c.Open(date("2026-01-01")) {
		t.Errorf("Get(hand) = %+v, %v", c, err)
	}
}

// countingDB counts the queries that reach the database, and can fail
// them.
type countingDB struct {
	calendar.DBTX
	queries atomic.Int64
	fail    atomic.Bool
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.queries.Add(1)
	if c.fail.Load() {
		return errRow{}
	}
	return c.DBTX.QueryRow(ctx, sql, args...)
}

type errRow struct{}

func (errRow) Scan(...any) error { return errors.New("connection refused") }

// TestCache: a calendar, or its absence, is read at most once per TTL;
// built-ins never reach the database; a database error is not kept.
func TestCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	db := &countingDB{DBTX: pool}
	cache := calendar.NewCache(db, calendar.CacheConfig{})
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calendar.SetClock(cache, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	age := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "c", ClosingDays: dates("2026-01-02")}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if c, err := cache.Get(ctx, "c"); err != nil || c.Open(date("2026-01-02")) {
			t.Fatalf("Get(c) = %+v, %v", c, err)
		}
		if _, err := cache.Get(ctx, "missing"); !errors.Is(err, calendar.ErrNotFound) {
			t.Fatalf("Get(missing): %v", err)
		}
		if c, err := cache.Get(ctx, calendar.NameTARGET2); err != nil || !c.BuiltIn {
			t.Fatalf("Get(TARGET2) = %+v, %v", c, err)
		}
	}
	if n := db.queries.Load(); n != 2 {
		t.Fatalf("%d reads for 2 names, want 2", n)
	}

	// Changed elsewhere: seen after the TTL, not before.
	if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "c", ClosingDays: dates("2026-01-05")}); err != nil {
		t.Fatal(err)
	}
	if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "missing"}); err != nil {
		t.Fatal(err)
	}
	age(calendar.DefaultCacheTTL - time.Millisecond)
	if c, _ := cache.Get(ctx, "c"); c.Open(date("2026-01-02")) {
		t.Error("the cache read again before its TTL")
	}
	if _, err := cache.Get(ctx, "missing"); !errors.Is(err, calendar.ErrNotFound) {
		t.Error("an absence was forgotten before the TTL")
	}
	age(time.Millisecond)
	if c, _ := cache.Get(ctx, "c"); !c.Open(date("2026-01-02")) || c.Open(date("2026-01-05")) {
		t.Error("the change was not seen after the TTL")
	}
	if _, err := cache.Get(ctx, "missing"); err != nil {
		t.Errorf("created calendar still missing after the TTL: %v", err)
	}

	// Forget reads one name again at once; Flush all of them.
	if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	cache.Forget("c")
	if c, _ := cache.Get(ctx, "c"); !c.Open(date("2026-01-05")) {
		t.Error("Forget: the old calendar")
	}
	before := db.queries.Load()
	cache.Flush()
	_, _ = cache.Get(ctx, "c")
	_, _ = cache.Get(ctx, "missing")
	if n := db.queries.Load() - before; n != 2 {
		t.Errorf("after Flush: %d reads, want 2", n)
	}

	// A database error is returned, not kept.
	age(calendar.DefaultCacheTTL)
	db.fail.Store(true)
	if _, err := cache.Get(ctx, "c"); err == nil || errors.Is(err, calendar.ErrNotFound) {
		t.Errorf("a failing database: %v", err)
	}
	db.fail.Store(false)
	if _, err := cache.Get(ctx, "c"); err != nil {
		t.Errorf("the error was kept: %v", err)
	}
}

// TestCacheBounded: names asked for that do not exist do not grow a cache
// without end.
func TestCacheBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := &countingDB{DBTX: pgtest.NewPool(t)}
	cache := calendar.NewCache(db, calendar.CacheConfig{TTL: time.Hour})
	for i := range 1500 {
		if _, err := cache.Get(ctx, "n"+time.Duration(i).String()); !errors.Is(err, calendar.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if n := calendar.CacheLen(cache); n > 1024 {
		t.Errorf("%d names kept", n)
	}
}

// TestListInByteOrder: List's order is the names' bytes, not the
// database's collation (a server whose default is en_US sorts "a" before
// "B").
func TestListInByteOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `ALTER TABLE calendars ALTER COLUMN name TYPE text COLLATE "und-x-icu"`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "a", "B", "A-first"} {
		if _, err := calendar.Put(ctx, pool, calendar.Calendar{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := calendar.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	if want := []string{"TARGET2", "WEEKDAYS", "A-first", "B", "a", "b"}; !slices.Equal(names, want) {
		t.Errorf("List: %v, want %v", names, want)
	}
}
