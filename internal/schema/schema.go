// Package schema says which packages make up paydispatch's database: each
// package embeds its own migrations (its own tables), and the pacing
// package its functions; Migrate applies them all, then registers the item
// types of the domains in the dispatch queue.
package schema

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
)

// Schema is paydispatch's schema: every package's migrations, and the
// repeatable scripts.
func Schema() postgres.Schema {
	dirs := []fs.FS{queue.Migrations, dispatch.Migrations, pacing.Migrations, payment.Migrations,
		account.Migrations, limit.Migrations, fx.Migrations}
	s := postgres.Schema{Scripts: []postgres.Script{
		{Name: "pacing/functions.sql", SQL: pacing.Functions},
		{Name: "ledger/account/functions.sql", SQL: account.Functions},
	}}
	for _, d := range dirs {
		sub, err := fs.Sub(d, "migrations")
		if err != nil {
			panic(err) // each package embeds migrations/*.sql
		}
		s.Migrations = append(s.Migrations, sub)
	}
	return s
}

// NewMigrator is a migrator of paydispatch's schema on pool.
func NewMigrator(pool *pgxpool.Pool, logger *slog.Logger) (*postgres.Migrator, error) {
	return postgres.NewMigrator(pool, Schema(), logger)
}

// Migrate brings pool's database to paydispatch's current schema and
// registers the domains' item types (a type an operator has configured
// keeps its settings). A current database is left as it is.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (postgres.Applied, error) {
	applied, err := postgres.Migrate(ctx, pool, Schema(), logger)
	if err != nil {
		return applied, err
	}
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		return applied, fmt.Errorf("register item types: %w", err)
	}
	return applied, nil
}

// Latest is the schema version this build migrates to: the newest
// migration of any package.
func Latest() int64 {
	v, err := Schema().Latest()
	if err != nil {
		panic(err) // the embedded migrations are named NNNNN_name.sql
	}
	return v
}
