package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"emi/migrations"
)

// provider builds the goose provider over the embedded migrations. goose runs
// each SQL migration in its own transaction; with locked it takes a session
// advisory lock, so two processes migrating at once do not collide. Reading
// the version needs no lock: goose would take it for that too, and every
// /healthz of every instance would queue on it (its locker retries every
// 5 s), answering 503 while the database is fine.
func (db *DB) provider(locked bool) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	if !locked {
		return goose.NewProvider(goose.DialectPostgres, db.DB.DB, sub)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db.DB.DB, sub, goose.WithSessionLocker(locker))
}

// Migrate applies every pending migration and returns how many it applied.
// Applying them again is a no-op.
func (db *DB) Migrate(ctx context.Context) (int, error) {
	p, err := db.provider(true)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrate: %w", err)
	}
	return len(res), nil
}

// SchemaVersion returns the version the database is at and the newest
// version this binary embeds.
func (db *DB) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	p, err := db.provider(false)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: %w", err)
	}
	srcs := p.ListSources()
	if len(srcs) > 0 {
		latest = srcs[len(srcs)-1].Version
	}
	current, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, latest, fmt.Errorf("read schema version: %w", err)
	}
	return current, latest, nil
}

// ErrSchemaNotCurrent is the error CheckSchema wraps when the database's
// schema version differs from this binary's; any other error of CheckSchema
// means the version could not be read (the database is unreachable or a
// connection was cut).
var ErrSchemaNotCurrent = errors.New("database schema not current")

// CheckSchema returns an error saying what to run when the database schema is
// older (or newer) than this binary.
func (db *DB) CheckSchema(ctx context.Context) error {
	current, latest, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case current < latest:
		return fmt.Errorf("%w: it is at version %d but this binary needs %d: run `emi migrate` first", ErrSchemaNotCurrent, current, latest)
	case current > latest:
		return fmt.Errorf("%w: it is at version %d, newer than this binary (%d): deploy the newer binary", ErrSchemaNotCurrent, current, latest)
	}
	return nil
}
