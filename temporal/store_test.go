package temporal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// TestChooseStore: a data directory keeps the store it has, whatever is
// asked; a new one gets SQLite unless PostgreSQL is asked for.
func TestChooseStore(t *testing.T) {
	t.Parallel()
	const pg = "host=/tmp port=5432 user=x dbname=postgres"
	for _, tc := range []struct {
		name    string
		has     string // "", "sqlite" or "postgres": the store already in the directory
		store   Store
		url     string
		want    string // "sqlite" or "postgres"
		wantErr string
	}{
		{name: "new, auto", want: "sqlite"},
		{name: "new, auto, a server given", url: pg, want: "sqlite"},
		{name: "new, sqlite", store: StoreSQLite, url: pg, want: "sqlite"},
		{name: "new, postgres", store: StorePostgres, url: pg, want: "postgres"},
		{name: "new, postgres, no server", store: StorePostgres, wantErr: "no PostgreSQL server"},
		{name: "sqlite kept by auto", has: "sqlite", url: pg, want: "sqlite"},
		{name: "postgres kept by auto", has: "postgres", url: pg, want: "postgres"},
		{name: "sqlite refuses postgres", has: "sqlite", store: StorePostgres, url: pg, wantErr: "would not move to PostgreSQL"},
		{name: "postgres refuses sqlite", has: "postgres", store: StoreSQLite, url: pg, wantErr: "would not move to SQLite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.has != "" {
				file := map[string]string{"sqlite": "temporal.db", "postgres": "postgres.partitions"}[tc.has]
				if err := os.MkdirAll(filepath.Join(dir, "temporal"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "temporal", file), []byte("1\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var d devserver.Options
			_, err := chooseStore(Options{DataDir: dir, EmbeddedStore: tc.store, EmbeddedPostgresURL: tc.url}, &d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "sqlite"
			if d.Postgres != nil {
				got = "postgres"
				if d.Postgres.URL != tc.url || d.Postgres.StatePath != filepath.Join(dir, "temporal", "postgres") {
					t.Errorf("postgres store %+v", d.Postgres)
				}
			} else if d.DBPath != filepath.Join(dir, "temporal", "temporal.db") {
				t.Errorf("sqlite file %q", d.DBPath)
			}
			if got != tc.want {
				t.Errorf("store %s, want %s", got, tc.want)
			}
		})
	}
	for _, s := range []string{"", "auto", "sqlite", "postgres"} {
		if _, err := ParseStore(s); err != nil {
			t.Errorf("ParseStore(%q): %v", s, err)
		}
	}
	if _, err := ParseStore("mysql"); err == nil {
		t.Error("ParseStore(mysql) took it")
	}
}
