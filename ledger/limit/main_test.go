package limit_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/internal/ledgertest"
)

func TestMain(m *testing.M) { pgtest.Main(m, ledgertest.Schema()) }
