package screening_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/schema"
)

// Phase A's tests need the whole database: payments, the queue, the
// ledger's accounts, the pacer and the kept hits.
func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }
