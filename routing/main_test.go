package routing_test

import (
	"io/fs"
	"testing"

	calendarmig "github.com/paydispatch/paydispatch/calendar/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	pacingmig "github.com/paydispatch/paydispatch/pacing/migrations"
	"github.com/paydispatch/paydispatch/postgres"
	routingmig "github.com/paydispatch/paydispatch/routing/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{
		Migrations: []fs.FS{pacingmig.FS, calendarmig.FS, routingmig.FS},
		Scripts:    []postgres.Script{{Name: "pacing/migrations/functions.sql", SQL: pacingmig.Functions}},
	})
}
