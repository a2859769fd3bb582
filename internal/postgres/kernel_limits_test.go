package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// The atomic limit (a burst must not pass a count before it is recorded):
// 50 attempts at once, over two pools (two processes, as far as the
// database can tell), against a limit of 10: at most 10 are counted,
// whatever the interleaving; inside a caller's transaction that rolls back
// the count stands; the window rolls.
func TestLimitStoreTakeIsAtomic(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var stores []*postgres.LimitStore
	var dbs []*postgres.DB
	for range 2 {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		stores = append(stores, postgres.NewLimitStore(db))
		dbs = append(dbs, db)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for round := range 3 {
		subject := "staff-" + randSuffix(t)
		var ok atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				took, _, err := stores[i%2].Take(context.Background(), "test", subject, 10, time.Hour, now)
				if err != nil {
					t.Error(err)
				}
				if took {
					ok.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := ok.Load(); n != 10 {
			t.Fatalf("round %d: %d of 50 taken with a limit of 10", round, n)
		}
		took, retry, err := stores[0].Take(context.Background(), "test", subject, 10, time.Hour, now.Add(30*time.Minute))
		if err != nil || took || retry != 30*time.Minute {
			t.Fatalf("within the window: took %v, retry %s, %v", took, retry, err)
		}
		if took, _, err := stores[0].Take(context.Background(), "test", subject, 10, time.Hour, now.Add(time.Hour+time.Second)); err != nil || !took {
			t.Fatalf("after the window: took %v, %v", took, err)
		}
	}
	// Inside a caller's transaction the count joins it (one connection per
	// request): the caller's commit keeps it, its rollback takes it back.
	subject := "staff-" + randSuffix(t)
	_ = dbs[0].InTx(context.Background(), func(ctx context.Context) error {
		if took, _, err := stores[0].Take(ctx, "test", subject, 1, time.Hour, now); err != nil || !took {
			t.Fatalf("first: %v %v", took, err)
		}
		return context.Canceled
	})
	if took, _, err := stores[0].Take(context.Background(), "test", subject, 1, time.Hour, now); err != nil || !took {
		t.Fatalf("after a rolled-back caller: took %v, %v", took, err)
	}
	if took, _, err := stores[0].Take(context.Background(), "test", subject, 1, time.Hour, now); err != nil || took {
		t.Fatalf("on its own, committed: took %v, %v", took, err)
	}
}
