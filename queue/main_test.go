package queue_test

import (
	"io/fs"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
	queuemig "github.com/paydispatch/paydispatch/queue/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{queuemig.FS}})
}
