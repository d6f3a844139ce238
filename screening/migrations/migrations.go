// Package migrations holds package screening's schema: its migrations
// (goose SQL files named NNNNN_name.sql), which schema merges with every
// other package's into one ordered sequence.
package migrations

import "embed"

// FS holds the migrations.
//
//go:embed *.sql
var FS embed.FS
