package outbox_test

import (
	"os"
	"testing"

	"github.com/paydispatch/paydispatch/internal/pgtest"
)

func TestMain(m *testing.M) {
	// The kill test re-executes this binary as relayer processes.
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	pgtest.Main(m)
}
