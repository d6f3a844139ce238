// Package postgres is paydispatch's PostgreSQL adapter: it opens the pgx
// pool (on DATABASE_URL, or on a private server started with pgserver when
// none is given) and owns the versioned schema migrations embedded in the
// binary.
package postgres
