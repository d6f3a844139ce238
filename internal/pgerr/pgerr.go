// Package pgerr tells PostgreSQL's errors apart by their SQLSTATE, through
// any wrapping: the one check the packages that retry or fall back on a
// refusal (a key that exists, a deadlock) share.
package pgerr

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs the callers act on.
const (
	UniqueViolation  = "23505"
	DeadlockDetected = "40P01"
	UndefinedTable   = "42P01"
)

// Is reports whether err is, or wraps, PostgreSQL's error with this
// SQLSTATE.
func Is(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}
