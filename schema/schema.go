// Package schema says which packages make up paydispatch's database: each
// package's migrations (its own tables, in its migrations/ directory, a
// package of its own) and the repeatable scripts holding the current
// source of the PL/pgSQL functions. It imports only those leaf packages
// and postgres, so the tests that need the whole database can hand it to
// internal/testkit/pgtest.Main without an import cycle (the others name
// only their own part). app.Migrate applies the schema and registers the
// domains' item types.
package schema

import (
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	auditmig "github.com/paydispatch/paydispatch/audit/migrations"
	authmig "github.com/paydispatch/paydispatch/auth/migrations"
	calendarmig "github.com/paydispatch/paydispatch/calendar/migrations"
	dispatchmig "github.com/paydispatch/paydispatch/dispatch/migrations"
	idemmig "github.com/paydispatch/paydispatch/idempotency/migrations"
	accountmig "github.com/paydispatch/paydispatch/ledger/account/migrations"
	fxmig "github.com/paydispatch/paydispatch/ledger/fx/migrations"
	limitmig "github.com/paydispatch/paydispatch/ledger/limit/migrations"
	outboxmig "github.com/paydispatch/paydispatch/outbox/migrations"
	pacingmig "github.com/paydispatch/paydispatch/pacing/migrations"
	paymentmig "github.com/paydispatch/paydispatch/payment/migrations"
	"github.com/paydispatch/paydispatch/postgres"
	processmig "github.com/paydispatch/paydispatch/process/migrations"
	queuemig "github.com/paydispatch/paydispatch/queue/migrations"
	routingmig "github.com/paydispatch/paydispatch/routing/migrations"
	screeningmig "github.com/paydispatch/paydispatch/screening/migrations"
	webhookmig "github.com/paydispatch/paydispatch/webhook/migrations"
)

// Schema is paydispatch's schema: every package's migrations, and the
// repeatable scripts.
func Schema() postgres.Schema {
	return postgres.Schema{
		Migrations: []fs.FS{queuemig.FS, dispatchmig.FS, pacingmig.FS, paymentmig.FS,
			accountmig.FS, limitmig.FS, fxmig.FS, processmig.FS, outboxmig.FS, authmig.FS, idemmig.FS, auditmig.FS, webhookmig.FS,
			calendarmig.FS, routingmig.FS, screeningmig.FS},
		Scripts: []postgres.Script{
			{Name: "queue/migrations/functions.sql", SQL: queuemig.Functions},
			{Name: "pacing/migrations/functions.sql", SQL: pacingmig.Functions},
			{Name: "ledger/account/migrations/functions.sql", SQL: accountmig.Functions},
			{Name: "process/migrations/functions.sql", SQL: processmig.Functions},
			{Name: "outbox/migrations/functions.sql", SQL: outboxmig.Functions},
			{Name: "audit/migrations/functions.sql", SQL: auditmig.Functions},
			{Name: "webhook/migrations/functions.sql", SQL: webhookmig.Functions},
			{Name: "payment/migrations/functions.sql", SQL: paymentmig.Functions},
		},
	}
}

// NewMigrator is a migrator of paydispatch's schema on pool.
func NewMigrator(pool *pgxpool.Pool, logger *slog.Logger) (*postgres.Migrator, error) {
	return postgres.NewMigrator(pool, Schema(), logger)
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
