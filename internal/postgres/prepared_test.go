package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// The hot reads run as prepared statements (issue 18): the same answers on
// the pool and inside a transaction (where the transaction's own rows are
// seen), one prepared statement per text however many goroutines race to
// prepare it, and a column whose type a migration changes under a prepared
// statement costs one unprepared run instead of an error.
func TestPreparedStatements(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE prep_t (id int PRIMARY KEY, v int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO prep_t VALUES (1, 10)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT v FROM prep_t WHERE id = $1`

	// Many goroutines, one statement.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v int
			if err := postgres.GetPrepared(ctx, db, &v, q, 1); err != nil || v != 10 {
				errs <- errors.Join(err, errors.New("wrong value"))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := postgres.PreparedCount(db); n != 1 {
		t.Fatalf("%d prepared statements for one text, want 1", n)
	}

	// Inside a transaction: its uncommitted row is visible, and a rollback
	// leaves the pool's statement usable.
	sentinel := errors.New("roll back")
	err := db.InTx(ctx, func(ctx context.Context) error {
		if _, err := db.Ext(ctx).ExecContext(ctx, `INSERT INTO prep_t VALUES (2, 20)`); err != nil {
			return err
		}
		var v int
		if err := postgres.GetPrepared(ctx, db, &v, q, 2); err != nil || v != 20 {
			t.Errorf("in the transaction: %d, %v; want 20", v, err)
		}
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatal(err)
	}
	var v int
	if err := postgres.GetPrepared(ctx, db, &v, q, 2); err == nil {
		t.Fatalf("row 2 after the rollback: %d", v)
	}

	// A migration changes the result type: the call still answers.
	if _, err := db.ExecContext(ctx, `ALTER TABLE prep_t ALTER COLUMN v TYPE text USING v::text`); err != nil {
		t.Fatal(err)
	}
	var s string
	for i := range 3 {
		if err := postgres.GetPrepared(ctx, db, &s, q, 1); err != nil || s != "10" {
			t.Fatalf("call %d after the type change: %q, %v", i, s, err)
		}
	}
}
