package webhook_test

import (
	"io/fs"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
	webhookmig "github.com/paydispatch/paydispatch/webhook/migrations"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{
		Migrations: []fs.FS{webhookmig.FS},
		Scripts:    []postgres.Script{{Name: "webhook/migrations/functions.sql", SQL: webhookmig.Functions}},
	})
}
