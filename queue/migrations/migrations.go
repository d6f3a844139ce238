// Package migrations holds package queue's schema: its migrations (goose
// SQL files named NNNNN_name.sql), which schema merges with every
// other package's into one ordered sequence. A package of its own, so
// that the schema can be assembled without importing queue itself.
package migrations

import "embed"

// FS holds the migrations.
//
//go:embed *.sql
var FS embed.FS

// Functions is the current source of the package's PL/pgSQL functions
// (functions.sql), applied after the migrations and again whenever it
// changes.
//
//go:embed functions.sql
var Functions string
