package account

import "embed"

// Migrations holds the package's schema migrations (goose SQL files under
// migrations/); internal/schema merges every package's into one sequence.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// Functions is the current source of ledger_post (functions.sql), applied
// after the migrations and re-applied whenever it changes.
//
//go:embed functions.sql
var Functions string
