// Package migrations holds the SQL migrations of emi, embedded in the binary.
// Files are append-only: never edit a migration that has shipped, add one.
// Each file runs in its own transaction (goose's default for SQL files).
package migrations

import "embed"

// FS holds every *.sql migration, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
