package postgres_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// The batched replay guard keeps the guarantee of one INSERT per request:
// 400 concurrent calls over two stores on two pools (two processes, as far
// as the database can tell), each of 100 digests sent 4 times: every digest
// is fresh exactly once, whatever the batches and the race between them.
func TestRememberSignatureBatchedAcrossTwoPools(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var stores []*postgres.PartnerStore
	for range 2 {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		stores = append(stores, postgres.NewPartnerStore(db))
	}
	exp := time.Now().Add(time.Minute)
	for round := range 3 {
		fresh := make([]atomic.Int32, 100)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 400)
		for i := range 400 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d := sha256.Sum256(fmt.Appendf(nil, "%d/%d", round, i%100))
				ok, err := stores[i%2].RememberSignature(context.Background(), d[:], exp)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					fresh[i%100].Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for d := range fresh {
			if n := fresh[d].Load(); n != 1 {
				t.Fatalf("round %d: digest %d accepted %d times, want once", round, d, n)
			}
		}
	}
	// Stored: a later call is a replay on either store, also in a
	// transaction (the Idempotency-Key path, unbatched).
	d := sha256.Sum256([]byte("0/7"))
	for _, s := range stores {
		if ok, err := s.RememberSignature(context.Background(), d[:], exp); err != nil || ok {
			t.Fatalf("stored digest: fresh %v, %v", ok, err)
		}
	}
}

// Inside a transaction the digest is written in it: rolled back with it,
// and a replay of a committed one is refused.
func TestRememberSignatureInATransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	s := postgres.NewPartnerStore(db)
	exp := time.Now().Add(time.Minute)
	d := sha256.Sum256([]byte("in tx"))
	errRollback := fmt.Errorf("roll back")
	err := db.InTx(context.Background(), func(ctx context.Context) error {
		ok, err := s.RememberSignature(ctx, d[:], exp)
		if err != nil || !ok {
			t.Fatalf("in tx: fresh %v, %v", ok, err)
		}
		return errRollback
	})
	if err != errRollback {
		t.Fatal(err)
	}
	if ok, err := s.RememberSignature(context.Background(), d[:], exp); err != nil || !ok {
		t.Fatalf("after the rollback the digest is fresh again: %v, %v", ok, err)
	}
	_ = db.InTx(context.Background(), func(ctx context.Context) error {
		if ok, err := s.RememberSignature(ctx, d[:], exp); err != nil || ok {
			t.Fatalf("committed digest inside a transaction: fresh %v, %v", ok, err)
		}
		return nil
	})
	// A cancelled context fails the call, not the batch it is in.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.RememberSignature(ctx, []byte("cancelled"), exp); err == nil {
		// The batch may have committed before the wait noticed: both
		// answers are allowed, but never a panic or a hang.
		t.Log("a cancelled call completed")
	}
}
