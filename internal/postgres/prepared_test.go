package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// The hot reads run as prepared statements (planning was most of their
// cost): the same answers on the pool and inside a transaction (where the
// transaction's own rows are seen), one prepared statement per text however
// many goroutines race to prepare it, and a column whose type a migration
// changes under a prepared statement costs one unprepared run instead of an
// error.
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

// preparedTable creates a table with one row (1, 10) and returns the query
// of the tests below, each on its own table.
func preparedTable(t *testing.T, db *postgres.DB, name string) string {
	t.Helper()
	for _, q := range []string{`CREATE TABLE ` + name + ` (id int PRIMARY KEY, v int)`, `INSERT INTO ` + name + ` VALUES (1, 10)`} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	return `SELECT v FROM ` + name + ` WHERE id = $1`
}

// A prepared statement that became stale while a transaction uses it: the
// failed execution (0A000, "cached plan must not change result type")
// aborts the transaction, so the old fallback, which ran the query
// unprepared in that same transaction, got "current transaction is
// aborted" (25P02) and the whole transaction failed: this test failed
// there. Now the transaction runs again, once, with the statement prepared
// afresh, and answers the new column's value.
//
// The pool has a single connection until the retry (every step before it
// runs alone), so the transaction's connection is the one that holds the
// stale statement.
func TestPreparedFallbackInsideATransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	q := preparedTable(t, db, "prep_tx")
	var v int
	if err := postgres.GetPrepared(ctx, db, &v, q, 1); err != nil || v != 10 {
		t.Fatalf("before the type change: %d, %v", v, err)
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE prep_tx ALTER COLUMN v TYPE text USING 'v' || v`); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	var s string
	err := db.InTx(ctx, func(ctx context.Context) error {
		attempts++
		if err := postgres.GetPrepared(ctx, db, &s, q, 1); err != nil {
			return err
		}
		// The transaction is usable after the read.
		_, err := db.Ext(ctx).ExecContext(ctx, `INSERT INTO prep_tx VALUES (2, 'v20')`)
		return err
	})
	if err != nil || s != "v10" {
		t.Fatalf("in a transaction after the type change: %q, %v; want v10", s, err)
	}
	if attempts != 2 {
		t.Fatalf("%d attempts; want the stale statement to fail the first and the retry to succeed", attempts)
	}
	// The next call, on the pool, runs the fresh statement.
	if err := postgres.GetPrepared(ctx, db, &s, q, 2); err != nil || s != "v20" {
		t.Fatalf("after the transaction: %q, %v; want v20 (the transaction's row)", s, err)
	}
	if n := postgres.PreparedCount(db); n != 1 {
		t.Fatalf("%d prepared statements, want the fresh one only", n)
	}
}

// A statement the server no longer has: DEALLOCATE ALL on the connection,
// as a pooler's reset query (DISCARD ALL) or an operator does. PostgreSQL
// answers 26000 ("prepared statement does not exist"), and database/sql
// would keep sending that name on the connection, so the old code, which
// fell back on 0A000 only, failed this call and every later one on the
// connection: this test failed there. Now the call answers unprepared,
// the next one prepares the statement again, and inside a transaction the
// transaction is run again. The pool has one connection, so the
// DEALLOCATE hits the one that holds the statement.
func TestPreparedFallbackAfterDeallocate(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	db.SetMaxOpenConns(1)
	q := preparedTable(t, db, "prep_dealloc")
	get := func(what string, ctx context.Context, want int) error {
		t.Helper()
		var v int
		err := postgres.GetPrepared(ctx, db, &v, q, 1)
		if err == nil && v != want {
			t.Fatalf("%s: %d, want %d", what, v, want)
		}
		return err
	}
	if err := get("first call", ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DEALLOCATE ALL`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := get("after DEALLOCATE ALL", ctx, 10); err != nil {
			t.Fatalf("call %d after DEALLOCATE ALL: %v", i, err)
		}
	}
	if n := postgres.PreparedCount(db); n != 1 {
		t.Fatalf("%d prepared statements, want 1", n)
	}

	// Inside a transaction (a second connection for the retry's prepare;
	// the transaction keeps the first).
	db.SetMaxOpenConns(2)
	attempts := 0
	err := db.InTx(ctx, func(ctx context.Context) error {
		attempts++
		if attempts == 1 {
			if _, err := db.Ext(ctx).ExecContext(ctx, `DEALLOCATE ALL`); err != nil {
				return err
			}
		}
		if err := get("in a transaction", ctx, 10); err != nil {
			return err
		}
		_, err := db.Ext(ctx).ExecContext(ctx, `UPDATE prep_dealloc SET v = 11 WHERE id = 1`)
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("transaction after DEALLOCATE ALL: %v after %d attempts; want success on the second", err, attempts)
	}
	if err := get("after the transaction", ctx, 11); err != nil {
		t.Fatal(err)
	}
}

// queryPrepared (the replay guard's batch insert) falls back the same way
// on the pool: after a type change and after DEALLOCATE ALL the rows are
// still right, and the next call runs prepared again. It had no test of
// its own; the old code failed the DEALLOCATE ALL step (26000).
func TestQueryPreparedFallback(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	db.SetMaxOpenConns(1)
	q := preparedTable(t, db, "prep_query")
	values := func(what string) []string {
		t.Helper()
		rows, err := postgres.QueryPrepared(ctx, db, q, 1)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return out
	}
	check := func(what, want string) {
		t.Helper()
		if got := values(what); len(got) != 1 || got[0] != want {
			t.Fatalf("%s: %v, want [%s]", what, got, want)
		}
	}
	check("first call", "10")
	if _, err := db.ExecContext(ctx, `ALTER TABLE prep_query ALTER COLUMN v TYPE text USING 'v' || v`); err != nil {
		t.Fatal(err)
	}
	check("after the type change", "v10")
	check("the call after", "v10")
	if _, err := db.ExecContext(ctx, `DEALLOCATE ALL`); err != nil {
		t.Fatal(err)
	}
	check("after DEALLOCATE ALL", "v10")
	check("the call after", "v10")
	if n := postgres.PreparedCount(db); n != 1 {
		t.Fatalf("%d prepared statements, want 1", n)
	}
}
