package calendar_test

import (
	"io/fs"
	"testing"

	calendarmig "github.com/paydispatch/paydispatch/calendar/migrations"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{calendarmig.FS}})
}
