// Package postgres is paydispatch's PostgreSQL adapter: it opens the pgx
// pool (on DATABASE_URL, or on a private server started with pgserver when
// none is given) and applies a schema: the versioned migrations each
// package embeds, merged into one ordered sequence, then the repeatable
// scripts (the current source of the PL/pgSQL functions), all under one
// advisory lock. It knows no tables of its own beyond its bookkeeping:
// schema says which packages make up paydispatch's schema.
package postgres
