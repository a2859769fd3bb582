package postgres

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// GetPrepared exposes getPrepared to the package's external tests.
func GetPrepared(ctx context.Context, db *DB, dest any, query string, args ...any) error {
	return db.getPrepared(ctx, dest, query, args...)
}

// QueryPrepared exposes queryPrepared to the package's external tests.
func QueryPrepared(ctx context.Context, db *DB, query string, args ...any) (*sql.Rows, error) {
	return db.queryPrepared(ctx, query, args...)
}

// PreparedCount is how many statements db keeps prepared.
func PreparedCount(db *DB) int {
	n := 0
	db.stmts.Range(func(any, any) bool { n++; return true })
	return n
}

// CommitError exposes commitError to the package's external tests.
func CommitError(ctx context.Context, err error) error { return commitError(ctx, err) }

// OverPool makes a DB of a pool the test opened itself (its own connector,
// dialer or limits), preparing as OpenWith would for pooler p.
func OverPool(db *sqlx.DB, p Pooler) *DB { return &DB{DB: db, pooler: p} }

// WithBinaryParameters exposes withBinaryParameters (what OpenWith does to
// every URL) to the package's external tests.
func WithBinaryParameters(dsn string) string { return withBinaryParameters(dsn) }
