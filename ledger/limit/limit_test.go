package limit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/limit"
)

var ctx = context.Background()

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		period     limit.Period
		at         string
		start, end string
	}{
		{limit.Minute, "2026-03-04T10:15:59Z", "2026-03-04T10:15:00Z", "2026-03-04T10:16:00Z"},
		{limit.Hour, "2026-03-04T10:15:59Z", "2026-03-04T10:00:00Z", "2026-03-04T11:00:00Z"},
		{limit.Day, "2026-03-04T23:59:59Z", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"},
		{limit.Day, "2026-03-05T01:30:00+03:00", "2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z"}, // UTC, not local
		{limit.Week, "2026-03-04T10:00:00Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},     // Wednesday
		{limit.Week, "2026-03-08T23:59:59Z", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},     // Sunday
		{limit.Week, "2026-03-09T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z"},     // Monday
		{limit.Week, "2026-01-01T12:00:00Z", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z"},     // across a year
		{limit.Month, "2026-02-28T23:59:59Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{limit.Month, "2028-02-29T12:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"},
		{limit.Month, "2026-12-31T23:59:59Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		s, e := tt.period.Window(at(tt.at))
		if !s.Equal(at(tt.start)) || !e.Equal(at(tt.end)) {
			t.Errorf("%s at %s: [%s, %s), want [%s, %s)", tt.period, tt.at, s, e, tt.start, tt.end)
		}
	}
}

func setup(t *testing.T, limits ...limit.Limit) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t)
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "A", TenantID: "t", Currency: "EUR", OpeningBalance: dec("0"), LimitBased: true}); err != nil {
		t.Fatal(err)
	}
	if err := limit.Set(ctx, pool, "A", "EUR", limits, at("2026-03-04T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	return pool
}

func usage(t *testing.T, db ledger.DBTX, when string) map[limit.Period]string {
	t.Helper()
	us, err := limit.Current(ctx, db, "A", at(when))
	if err != nil {
		t.Fatal(err)
	}
	out := map[limit.Period]string{}
	for _, u := range us {
		out[u.Period] = u.Utilized.String()
	}
	return out
}

// TestBookAllOrNothing: a booking goes into every configured period's
// window or into none.
func TestBookAllOrNothing(t *testing.T) {
	t.Parallel()
	pool := setup(t, limit.Limit{Period: limit.Minute, Amount: dec("100")}, limit.Limit{Period: limit.Day, Amount: dec("250")},
		limit.Limit{Period: limit.Month, Amount: dec("1000")})
	steps := []struct {
		name, at, amount, ref string
		wantCode              ledger.Code
		wantPeriod            string
		wantUsage             map[limit.Period]string // after the step, at its instant
	}{
		{"first", "2026-03-04T10:00:10Z", "60", "p1", "", "", map[limit.Period]string{"MINUTE": "60", "DAY": "60", "MONTH": "60"}},
		{"second", "2026-03-04T10:00:20Z", "30", "p2", "", "", map[limit.Period]string{"MINUTE": "90", "DAY": "90", "MONTH": "90"}},
		{"minute over", "2026-03-04T10:00:30Z", "20", "p3", ledger.CodeLimitExceeded, "MINUTE", map[limit.Period]string{"MINUTE": "90", "DAY": "90", "MONTH": "90"}},
		{"next minute", "2026-03-04T10:01:00Z", "100", "p4", "", "", map[limit.Period]string{"MINUTE": "100", "DAY": "190", "MONTH": "190"}},
		{"day over", "2026-03-04T10:02:00Z", "70", "p5", ledger.CodeLimitExceeded, "DAY", map[limit.Period]string{"MINUTE": "0", "DAY": "190", "MONTH": "190"}},
		{"day and minute over: the minute is named", "2026-03-04T10:01:30Z", "70", "p6", ledger.CodeLimitExceeded, "MINUTE", map[limit.Period]string{"MINUTE": "100", "DAY": "190", "MONTH": "190"}},
		{"exactly the day's rest", "2026-03-04T10:03:00Z", "60", "p7", "", "", map[limit.Period]string{"MINUTE": "60", "DAY": "250", "MONTH": "250"}},
		{"replay", "2026-03-04T10:03:00Z", "60", "p7", "", "", map[limit.Period]string{"MINUTE": "60", "DAY": "250", "MONTH": "250"}},
		{"reference reused for another amount", "2026-03-04T10:03:00Z", "61", "p7", ledger.CodeReferenceConflict, "", map[limit.Period]string{"MINUTE": "60", "DAY": "250", "MONTH": "250"}},
		{"next day", "2026-03-05T00:00:00Z", "100", "p8", "", "", map[limit.Period]string{"MINUTE": "100", "DAY": "100", "MONTH": "350"}},
		{"wrong currency", "2026-03-05T00:00:01Z", "1", "p9", ledger.CodeCurrencyMismatch, "", map[limit.Period]string{"MINUTE": "100", "DAY": "100", "MONTH": "350"}},
		{"too many decimals", "2026-03-05T00:00:01Z", "0.001", "p10", ledger.CodeInvalidArgument, "", map[limit.Period]string{"MINUTE": "100", "DAY": "100", "MONTH": "350"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cur := "EUR"
			if s.wantCode == ledger.CodeCurrencyMismatch {
				cur = "USD"
			}
			b, err := limit.Book(ctx, pool, limit.BookRequest{AccountID: "A", Amount: dec(s.amount), Currency: cur, At: at(s.at), Reference: s.ref})
			if ledger.CodeOf(err) != s.wantCode {
				t.Fatalf("err %v, want %q", err, s.wantCode)
			}
			var le *ledger.Refusal
			if errors.As(err, &le) && s.wantPeriod != "" {
				if le.Details["period"] != s.wantPeriod || le.Details["amount"] != s.amount || le.Details["limit"] == "" || le.Details["utilized"] == "" {
					t.Fatalf("details %v, want period %s", le.Details, s.wantPeriod)
				}
			}
			if err == nil && len(b.Bookings) != 3 {
				t.Fatalf("bookings %+v", b)
			}
			if got := usage(t, pool, s.at); fmt.Sprint(got) != fmt.Sprint(s.wantUsage) {
				t.Fatalf("usage %v, want %v", got, s.wantUsage)
			}
		})
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestReverseBookedWindows: a reversal takes the amount out of the windows
// the booking went into, even when the reversal runs in the next period;
// twice reverses once.
func TestReverseBookedWindows(t *testing.T) {
	t.Parallel()
	pool := setup(t, limit.Limit{Period: limit.Hour, Amount: dec("1000")}, limit.Limit{Period: limit.Day, Amount: dec("1000")},
		limit.Limit{Period: limit.Week, Amount: dec("5000")})
	book := func(ref, when, amount string) {
		t.Helper()
		if _, err := limit.Book(ctx, pool, limit.BookRequest{AccountID: "A", Amount: dec(amount), Currency: "EUR", At: at(when), Reference: ref}); err != nil {
			t.Fatal(err)
		}
	}
	// Sunday 23:59:59 (end of a day and of a week), then Monday.
	book("late", "2026-03-08T23:59:59Z", "300")
	book("early", "2026-03-09T00:00:01Z", "200")
	steps := []struct {
		name, ref   string
		wantAlready bool
		wantWindows int
		sunday      map[limit.Period]string
		monday      map[limit.Period]string
	}{
		{"reverse the late booking on Monday", "late", false, 3,
			map[limit.Period]string{"HOUR": "0", "DAY": "0", "WEEK": "0"}, map[limit.Period]string{"HOUR": "200", "DAY": "200", "WEEK": "200"}},
		{"again", "late", true, 0,
			map[limit.Period]string{"HOUR": "0", "DAY": "0", "WEEK": "0"}, map[limit.Period]string{"HOUR": "200", "DAY": "200", "WEEK": "200"}},
		{"never booked", "nothing", false, 0,
			map[limit.Period]string{"HOUR": "0", "DAY": "0", "WEEK": "0"}, map[limit.Period]string{"HOUR": "200", "DAY": "200", "WEEK": "200"}},
		{"the Monday booking", "early", false, 3,
			map[limit.Period]string{"HOUR": "0", "DAY": "0", "WEEK": "0"}, map[limit.Period]string{"HOUR": "0", "DAY": "0", "WEEK": "0"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r, err := limit.Reverse(ctx, pool, s.ref)
			if err != nil || r.AlreadyReversed != s.wantAlready || len(r.Windows) != s.wantWindows {
				t.Fatalf("reverse: %+v %v", r, err)
			}
			if got := usage(t, pool, "2026-03-08T23:59:59Z"); fmt.Sprint(got) != fmt.Sprint(s.sunday) {
				t.Fatalf("Sunday %v, want %v", got, s.sunday)
			}
			if got := usage(t, pool, "2026-03-09T00:00:01Z"); fmt.Sprint(got) != fmt.Sprint(s.monday) {
				t.Fatalf("Monday %v, want %v", got, s.monday)
			}
		})
	}
	// A reversed reference cannot be booked again.
	if _, err := limit.Book(ctx, pool, limit.BookRequest{AccountID: "A", Amount: dec("300"), Currency: "EUR", At: at("2026-03-08T23:59:59Z"), Reference: "late"}); !errors.Is(err, ledger.ErrReferenceConflict) {
		t.Fatalf("book a reversed reference: %v", err)
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	pool := setup(t, limit.Limit{Period: limit.Day, Amount: dec("100")}, limit.Limit{Period: limit.Month, Amount: dec("1000")})
	now := "2026-03-04T12:00:00Z"
	if _, err := limit.Book(ctx, pool, limit.BookRequest{AccountID: "A", Amount: dec("80"), Currency: "EUR", At: at(now), Reference: "p1"}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		limits     []limit.Limit
		wantCode   ledger.Code
		wantFields int
		book       string // then book this much
		bookOK     bool
	}{
		{"raise the day: applies now", []limit.Limit{{Period: limit.Day, Amount: dec("200")}, {Period: limit.Month, Amount: dec("1000")}}, "", 0, "100", true},
		{"lower the day below its use: full", []limit.Limit{{Period: limit.Day, Amount: dec("50")}, {Period: limit.Month, Amount: dec("1000")}}, "", 0, "0.01", false},
		{"remove the day", []limit.Limit{{Period: limit.Month, Amount: dec("1000")}}, "", 0, "500", true},
		{"bad limits", []limit.Limit{{Period: "YEAR", Amount: dec("1")}, {Period: limit.Month, Amount: dec("0")},
			{Period: limit.Month, Amount: dec("1.001")}}, ledger.CodeInvalidArgument, 4, "", false},
	}
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := limit.Set(ctx, pool, "A", "EUR", s.limits, at(now))
			if ledger.CodeOf(err) != s.wantCode {
				t.Fatalf("set: %v", err)
			}
			var bad *field.Invalid
			if errors.As(err, &bad) && len(bad.Fields) != s.wantFields {
				t.Fatalf("fields %v, want %d", bad.Fields, s.wantFields)
			}
			if s.book == "" {
				return
			}
			_, err = limit.Book(ctx, pool, limit.BookRequest{AccountID: "A", Amount: dec(s.book), Currency: "EUR", At: at(now), Reference: fmt.Sprint("s", i)})
			if (err == nil) != s.bookOK {
				t.Fatalf("book %s: %v", s.book, err)
			}
		})
	}
	got, err := limit.Configured(ctx, pool, "A")
	if err != nil || len(got) != 1 || got[0].Period != limit.Month {
		t.Fatalf("configured: %v %v", got, err)
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestConcurrentBookings: 100 bookings at once against a limit that holds
// 50 of them: exactly 50 are booked, none over the limit.
func TestConcurrentBookings(t *testing.T) {
	t.Parallel()
	pool := setup(t, limit.Limit{Period: limit.Hour, Amount: dec("500")}, limit.Limit{Period: limit.Day, Amount: dec("10000")})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, over := 0, 0
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := limit.Book(ctx, tx, limit.BookRequest{AccountID: "A", Amount: dec("10"), Currency: "EUR",
					At: at("2026-03-04T12:30:00Z"), Reference: fmt.Sprintf("proc-%d:BookLimits", i)})
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ledger.ErrLimitExceeded):
				over++
			default:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ok != 50 || over != 50 {
		t.Fatalf("%d booked, %d refused; want 50 and 50", ok, over)
	}
	if got := usage(t, pool, "2026-03-04T12:30:00Z"); got["HOUR"] != "500" || got["DAY"] != "500" {
		t.Fatalf("usage %v", got)
	}
	if v, err := ledger.Verify(ctx, pool); err != nil || len(v) != 0 {
		t.Fatalf("verify: %v %v", v, err)
	}
}

func asRefusal(err error, target **ledger.Refusal) bool { return errors.As(err, target) }
