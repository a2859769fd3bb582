package postgres_test

import (
	"context"
	"testing"

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

	if err := db.CheckSchema(ctx); err == nil {
		t.Fatal("CheckSchema on an empty database: want an error telling to run emi migrate")
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
