package outbox_test

import (
	"io/fs"
	"os"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	outboxmig "github.com/paydispatch/paydispatch/outbox/migrations"
	"github.com/paydispatch/paydispatch/postgres"
)

// ownSchema is the outbox's tables and functions, all its tests and
// benchmarks use.
var ownSchema = postgres.Schema{
	Migrations: []fs.FS{outboxmig.FS},
	Scripts:    []postgres.Script{{Name: "outbox/migrations/functions.sql", SQL: outboxmig.Functions}},
}

func TestMain(m *testing.M) {
	// The kill test re-executes this binary as relayer processes.
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	pgtest.Main(m, ownSchema)
}
