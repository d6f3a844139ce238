// Package migrations holds package routing's schema: its migrations (goose
// SQL files named NNNNN_name.sql), which schema merges with every other
// package's into one ordered sequence. A package of its own, so that the
// schema can be assembled without importing routing itself.
package migrations

import "embed"

// FS holds the migrations.
//
//go:embed *.sql
var FS embed.FS
