package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRecordAndList: entries come back newest first, a page at a time by
// cursor; the log refuses to be changed.
func TestRecordAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for i, action := range []string{"a", "b", "c", "d", "e"} {
		if _, err := audit.Record(ctx, pool, "tok_1", action, "/admin/x", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := audit.List(ctx, pool, 2, 0)
	if err != nil || len(page) != 2 || page[0].Action != "e" || page[1].Action != "d" || string(page[0].Detail) != `{"i": 4}` || next != page[1].Seq {
		t.Fatalf("first page: %+v, next %d, %v", page, next, err)
	}
	page, next, err = audit.List(ctx, pool, 2, next)
	if err != nil || len(page) != 2 || page[0].Action != "c" || page[1].Action != "b" || next != page[1].Seq {
		t.Fatalf("second page: %+v, next %d, %v", page, next, err)
	}
	page, next, err = audit.List(ctx, pool, 2, next)
	if err != nil || len(page) != 1 || page[0].Action != "a" || next != 0 {
		t.Fatalf("last page: %+v, next %d (want 0: no more), %v", page, next, err)
	}
	if all, next, _ := audit.List(ctx, pool, 0, 0); len(all) != 5 || next != 0 {
		t.Fatalf("limit 0 means the most: %d, next %d", len(all), next)
	}
	for _, sql := range []string{`UPDATE admin_audit SET actor = 'x'`, `DELETE FROM admin_audit`, `TRUNCATE admin_audit`} {
		if _, err := pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", sql, err)
		}
	}
}
