package dispatch_test

import (
	"io/fs"
	"testing"

	dispatchmig "github.com/paydispatch/paydispatch/dispatch/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	pacingmig "github.com/paydispatch/paydispatch/pacing/migrations"
	"github.com/paydispatch/paydispatch/postgres"
	queuemig "github.com/paydispatch/paydispatch/queue/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{
		Migrations: []fs.FS{queuemig.FS, dispatchmig.FS, pacingmig.FS},
		Scripts:    []postgres.Script{{Name: "pacing/migrations/functions.sql", SQL: pacingmig.Functions}},
	})
}
