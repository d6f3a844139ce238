package retention_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m, postgres.Schema{}) }
