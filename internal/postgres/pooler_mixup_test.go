package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// mixups runs the hot-path statement kinds the stores use (getPrepared, as
// account_details and card_details do; plain parameterised reads and
// writes; a transaction) from many goroutines at once, each with its own
// statement text and parameters, and counts the answers that are not its
// own and the errors. Through a transaction pooler with fewer server
// connections than clients, a statement parsed for one client and run for
// another shows as either.
func mixups(t *testing.T, db *postgres.DB) (wrong, failed int64, firstErr error) {
	t.Helper()
	const clients, rounds = 24, 60
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			ctx := context.Background()
			// A text per client: prepared statements of different texts
			// under the same per-connection names ("1", "2", …).
			q := fmt.Sprintf(`SELECT $1::bigint * 1000 + %d AS v`, c)
			for r := range rounds {
				want := int64(r)*1000 + int64(c)
				var got int64
				var err error
				switch r % 3 {
				case 0:
					err = postgres.GetPrepared(ctx, db, &got, q, r)
				case 1:
					err = db.GetContext(ctx, &got, q, r)
				default:
					err = db.InTx(ctx, func(ctx context.Context) error {
						return postgres.GetPrepared(ctx, db, &got, q, r)
					})
				}
				if err != nil {
					atomic.AddInt64(&failed, 1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				if got != want {
					atomic.AddInt64(&wrong, 1)
				}
			}
		})
	}
	wg.Wait()
	return wrong, failed, firstErr
}

// TestNoStatementRunsWithAnotherClientsParametersBehindATransactionPooler
// (issue 30, item 1): through PgBouncer in transaction mode (10 server
// connections, 24 clients), with EMI_DB_POOLER's default every statement
// answers its own client with its own parameters, and none fails. Before,
// the hot reads were always prepared: the same run through the same
// PgBouncer gets errors (42P05 "prepared statement already exists", 26000
// "does not exist", 08P01) and answers computed from another client's
// statement, which the second half shows (it is the measurement that
// makes the first half mean something; PoolerNone is what the code did
// whatever stood in front).
func TestNoStatementRunsWithAnotherClientsParametersBehindATransactionPooler(t *testing.T) {
	t.Parallel()
	u := pgtest.ThroughPooler(t, pgtest.URL(t))
	ctx := context.Background()

	safe, err := postgres.OpenWith(ctx, u, postgres.Options{Pooler: postgres.PoolerTransaction})
	if err != nil {
		t.Fatal(err)
	}
	defer safe.Close()
	start := time.Now()
	wrong, failed, first := mixups(t, safe)
	t.Logf("EMI_DB_POOLER=transaction through PgBouncer: %v", time.Since(start))
	if wrong != 0 || failed != 0 {
		t.Fatalf("EMI_DB_POOLER=transaction through PgBouncer: %d answers of another client's statement, %d errors (first: %v)", wrong, failed, first)
	}

	old, err := postgres.OpenWith(ctx, u, postgres.Options{Pooler: postgres.PoolerNone})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	start = time.Now()
	wrong, failed, first = mixups(t, old)
	t.Logf("%v: the same run with statements prepared (the old code, EMI_DB_POOLER=none) through PgBouncer: %d wrong answers, %d errors (first: %v)", time.Since(start), wrong, failed, first)
	if wrong+failed == 0 {
		t.Fatal("prepared statements through a transaction pooler went unharmed: this test no longer shows the hazard it guards against")
	}
}

// TestOpenRefusesBinaryParametersOffBehindAPooler: without
// binary_parameters lib/pq parses in one round trip and binds in the
// next, which a transaction pooler may send to two server connections.
func TestOpenRefusesBinaryParametersOffBehindAPooler(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t) + "&binary_parameters=no"
	if _, err := postgres.OpenWith(context.Background(), u, postgres.Options{Pooler: postgres.PoolerTransaction}); err == nil {
		t.Fatal("binary_parameters=no accepted behind a transaction pooler")
	}
	db, err := postgres.OpenWith(context.Background(), u, postgres.Options{Pooler: postgres.PoolerNone})
	if err != nil {
		t.Fatalf("a direct connection may turn it off: %v", err)
	}
	_ = db.Close()
}
