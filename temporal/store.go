package temporal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// Store is where the embedded Temporal server keeps its data.
type Store string

const (
	// StoreAuto keeps an existing store where it is and puts a new one in
	// SQLite, the faster on one machine (docs/performance.md: a third
	// less CPU per payment, half as fast again at 100/s offered).
	StoreAuto Store = ""
	// StorePostgres: Temporal's SQL schema in two databases of the
	// PostgreSQL server (temporal, temporal_visibility).
	StorePostgres Store = "postgres"
	// StoreSQLite: one SQLite file, DataDir/temporal/temporal.db.
	StoreSQLite Store = "sqlite"
)

// ParseStore reads a store name: auto, postgres or sqlite.
func ParseStore(s string) (Store, error) {
	switch s {
	case "", "auto":
		return StoreAuto, nil
	case "postgres", "sqlite":
		return Store(s), nil
	}
	return "", fmt.Errorf("want auto, postgres or sqlite")
}

// chooseStore points dopts at the store to use and names it. A data
// directory keeps the store it has: the other would start empty, and the
// workflows open in the first (payments on their way) would never run.
func chooseStore(o Options, dopts *devserver.Options) (string, error) {
	if o.DataDir == "" {
		return "", errors.New("temporal: no TEMPORAL_ADDRESS and no data directory for the embedded server")
	}
	dir := filepath.Join(o.DataDir, "temporal")
	sqliteFile := filepath.Join(dir, "temporal.db")
	pgState := filepath.Join(dir, "postgres")
	hasSQLite := exists(sqliteFile)
	hasPostgres := exists(pgState + ".partitions")
	store := o.EmbeddedStore
	switch {
	case store == StorePostgres && hasSQLite:
		return "", fmt.Errorf("temporal: %s holds the embedded Temporal's SQLite store, and its open workflows would not move to PostgreSQL: keep PAYDISPATCH_TEMPORAL_STORE=auto (or sqlite) for this data directory", sqliteFile)
	case store == StoreSQLite && hasPostgres:
		return "", fmt.Errorf("temporal: the data directory's embedded Temporal keeps its data in PostgreSQL (%s), and its open workflows would not move to SQLite: keep PAYDISPATCH_TEMPORAL_STORE=auto (or postgres) for this data directory", pgState+".partitions")
	case store == StoreAuto && hasSQLite:
		store = StoreSQLite
	case store == StoreAuto && hasPostgres:
		store = StorePostgres
	case store == StoreAuto:
		store = StoreSQLite
	}
	if store == StoreSQLite {
		dopts.DBPath = sqliteFile
		return "sqlite " + sqliteFile, nil
	}
	if o.EmbeddedPostgresURL == "" {
		return "", errors.New("temporal: the embedded Temporal's store is PostgreSQL, but no PostgreSQL server was given for it (DATABASE_URL or the private one)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("temporal: create %s: %w", dir, err)
	}
	dopts.Postgres = &devserver.Postgres{URL: o.EmbeddedPostgresURL, StatePath: pgState}
	return "postgres (databases temporal, temporal_visibility)", nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
