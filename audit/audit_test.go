package audit_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/audit"
	auditmig "github.com/paydispatch/paydispatch/audit/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{auditmig.FS}})
}

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

// TestChangeCommitsWithItsEntry: a change and its entry commit together;
// when the entry cannot be written (a trigger refuses it, or its actor is
// no text) or the change fails, neither is kept.
func TestChangeCommitsWithItsEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE settings (name text PRIMARY KEY, value text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	set := func(value string, fail error) func(pgx.Tx) (any, error) {
		return func(tx pgx.Tx) (any, error) {
			_, err := tx.Exec(ctx, `INSERT INTO settings VALUES ('kill', $1) ON CONFLICT (name) DO UPDATE SET value = $1`, value)
			if err == nil {
				err = fail
			}
			return map[string]string{"kill": value}, err
		}
	}
	state := func() (value string, entries int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT value FROM settings WHERE name = 'kill'), ''), (SELECT count(*) FROM admin_audit)`).Scan(&value, &entries); err != nil {
			t.Fatal(err)
		}
		return value, entries
	}
	if err := audit.Change(ctx, pool, "cli:anna", "config set", "kill", set("on", nil)); err != nil {
		t.Fatal(err)
	}
	if v, n := state(); v != "on" || n != 1 {
		t.Fatalf("after a change: %q with %d entries, want on with 1", v, n)
	}
	refused := errors.New("refused")
	if err := audit.Change(ctx, pool, "cli:anna", "config set", "kill", set("off", refused)); !errors.Is(err, refused) {
		t.Fatalf("a failed change: %v", err)
	}
	if err := audit.Change(ctx, pool, "cli:\xc3", "config set", "kill", set("off", nil)); err == nil || !strings.Contains(err.Error(), "actor") {
		t.Fatalf("an actor that is no text: %v", err)
	}
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no entry today'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON admin_audit FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	if err := audit.Change(ctx, pool, "cli:anna", "config set", "kill", set("off", nil)); err == nil || !strings.Contains(err.Error(), "no entry today") {
		t.Fatalf("an entry refused: %v", err)
	}
	if v, n := state(); v != "on" || n != 1 {
		t.Fatalf("after three changes that failed: %q with %d entries, want on with 1 (nothing kept)", v, n)
	}
}
