package pgerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/internal/pgerr"
)

func TestIs(t *testing.T) {
	t.Parallel()
	unique := &pgconn.PgError{Code: pgerr.UniqueViolation}
	for _, tt := range []struct {
		name string
		err  error
		code string
		want bool
	}{
		{"the error itself", unique, pgerr.UniqueViolation, true},
		{"wrapped", fmt.Errorf("store: %w", unique), pgerr.UniqueViolation, true},
		{"another code", unique, pgerr.DeadlockDetected, false},
		{"not PostgreSQL's", errors.New("23505"), pgerr.UniqueViolation, false},
		{"none", nil, pgerr.UniqueViolation, false},
	} {
		if got := pgerr.Is(tt.err, tt.code); got != tt.want {
			t.Errorf("%s: Is = %v, want %v", tt.name, got, tt.want)
		}
	}
}
