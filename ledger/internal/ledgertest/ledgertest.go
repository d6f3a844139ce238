// Package ledgertest gives the ledger's tests and runnable examples a
// database of their own (internal/pgtest) and small fixtures.
package ledgertest

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/pgtest"
)

// ExamplePool returns a pool on a new migrated database for a runnable
// example (which has no *testing.T), and the function that drops it.
// Call it only from a test binary whose TestMain runs pgtest.Main.
func ExamplePool() (*pgxpool.Pool, func()) {
	s := &shim{}
	pool := pgtest.NewPool(s)
	return pool, s.cleanup
}

// shim is the part of testing.TB that pgtest uses. The embedded nil
// interface only supplies the unexported method; pgtest calls nothing else.
type shim struct {
	testing.TB
	cleanups []func()
}

func (s *shim) Helper()                   {}
func (s *shim) Name() string              { return "example" }
func (s *shim) Logf(string, ...any)       {}
func (s *shim) Cleanup(f func())          { s.cleanups = append(s.cleanups, f) }
func (s *shim) Fatalf(f string, a ...any) { panic("ledgertest: " + fmt.Sprintf(f, a...)) }
func (s *shim) Fatal(a ...any)            { panic("ledgertest: " + fmt.Sprint(a...)) }

func (s *shim) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}
