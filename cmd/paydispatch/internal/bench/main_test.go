package bench

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }
