package fx

import "embed"

// Migrations holds the package's schema migrations (goose SQL files under
// migrations/); internal/schema merges every package's into one sequence.
//
//go:embed migrations/*.sql
var Migrations embed.FS
