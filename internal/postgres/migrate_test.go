package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pressly/goose/v3/lock"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

func TestMigrationsApplyFromZeroAndTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := pgtest.AdminURL(t)
	// A database created empty (not from the template) migrates from zero.
	tdb := pgtest.DB(t) // only to get a connection to create an empty database
	name := "emi_zero_" + randSuffix(t)
	if _, err := tdb.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = tdb.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	db, err := postgres.Open(ctx, pgtest.WithDatabase(admin, name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	if err := db.CheckSchema(ctx); !errors.Is(err, postgres.ErrSchemaNotCurrent) {
		t.Fatalf("CheckSchema on an empty database: %v, want ErrSchemaNotCurrent telling to run emi migrate", err)
	}
	n, err := db.Migrate(ctx)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if n == 0 {
		t.Fatal("first migrate applied nothing")
	}
	current, latest, err := db.SchemaVersion(ctx)
	if err != nil || current != latest {
		t.Fatalf("after migrate: current %d latest %d err %v", current, latest, err)
	}
	n, err = db.Migrate(ctx)
	if err != nil || n != 0 {
		t.Fatalf("second migrate: applied %d, err %v; want 0, nil", n, err)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after migrate: %v", err)
	}
}

// TestCheckSchemaDoesNotWaitForTheMigrationLock: reading the schema
// version (every /healthz) must not take goose's session advisory lock.
// It did: two instances' health checks (or one check during a migration)
// queued on the lock, whose locker retries every 5 s, and /healthz
// answered 503 "database schema not current" after its 2 s budget while
// the database was fine (found by cmd/emi TestFaultsUnderMixedLoad).
func TestCheckSchemaDoesNotWaitForTheMigrationLock(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	// The lock a migration in progress holds (goose's lock.DefaultLockID).
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = holder.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lock.DefaultLockID) }()
	// The deadline bounds a hang; before the fix the check waited for the
	// lock until it ran out.
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.CheckSchema(cctx); err != nil {
		t.Fatalf("CheckSchema while the migration lock is held: %v", err)
	}
}
