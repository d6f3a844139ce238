package pgcopy_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

// The tests make their own tables: no schema.
func TestMain(m *testing.M) { pgtest.Main(m, postgres.Schema{}) }
