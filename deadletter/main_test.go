package deadletter_test

import (
	"io/fs"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	outboxmig "github.com/paydispatch/paydispatch/outbox/migrations"
	pacingmig "github.com/paydispatch/paydispatch/pacing/migrations"
	"github.com/paydispatch/paydispatch/postgres"
	queuemig "github.com/paydispatch/paydispatch/queue/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{
		Migrations: []fs.FS{queuemig.FS, pacingmig.FS, outboxmig.FS},
		Scripts:    []postgres.Script{{Name: "pacing/migrations/functions.sql", SQL: pacingmig.Functions}, {Name: "outbox/migrations/functions.sql", SQL: outboxmig.Functions}},
	})
}
