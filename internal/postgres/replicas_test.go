package postgres_test

import (
	"context"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
)

// TestLagTolerantReadsGoToAReplicaWithinItsBound: a read marked
// lag-tolerant (emi.WithLagTolerant, as back-office pages and ledger verify
// are) runs on the replica while its lag is within the bound, and on the
// primary when the replica falls behind or is down; a write in such a
// context still goes to the primary; an unmarked read (a partner's) never
// goes to the replica.
func TestLagTolerantReadsGoToAReplicaWithinItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	t.Parallel()
	primary := pgtest.NewCluster(t)
	standby := primary.Standby(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, primary.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const bound = time.Second
	if err := db.AddReplicas([]string{standby.Admin}, bound); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE seen (n int)`); err != nil {
		t.Fatal(err)
	}
	tolerant := emi.WithLagTolerant(ctx)
	onReplica := func(ctx context.Context) bool {
		var recovery bool
		if err := db.Ext(ctx).QueryRowxContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovery); err != nil {
			t.Fatal(err)
		}
		return recovery
	}
	testwait.Until(t, "lag-tolerant reads on the replica", func() bool { return onReplica(tolerant) })
	if onReplica(ctx) {
		t.Fatal("an unmarked read went to the replica")
	}
	if _, err := db.Ext(tolerant).ExecContext(tolerant, `INSERT INTO seen VALUES (1)`); err != nil {
		t.Fatalf("a write in a lag-tolerant context: %v", err)
	}
	var n int
	if err := db.Ext(tolerant).QueryRowxContext(tolerant, `WITH i AS (INSERT INTO seen VALUES (2) RETURNING n) SELECT count(*) FROM i`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a data-modifying WITH in a lag-tolerant context: %d, %v", n, err)
	}

	// The replica stops replaying: past the bound, the primary answers,
	// with the rows the replica lacks.
	rep, err := postgres.Open(ctx, standby.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := rep.ExecContext(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO seen VALUES (3)`); err != nil {
		t.Fatal(err)
	}
	before := db.ReplicaStats()
	testwait.Until(t, "reads back on the primary once the replica lags past the bound", func() bool { return !onReplica(tolerant) })
	if err := db.Ext(tolerant).QueryRowxContext(tolerant, `SELECT count(*) FROM seen`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("a lag-tolerant read while the replica lags: %d rows (%v), want the primary's 3", n, err)
	}
	if after := db.ReplicaStats(); after.Primary <= before.Primary {
		t.Fatalf("reads sent to the primary instead: %d then %d", before.Primary, after.Primary)
	}
	if _, err := rep.ExecContext(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "reads on the replica again once it caught up", func() bool { return onReplica(tolerant) })

	// A replica that is down: the primary answers, nothing fails.
	standby.Do(t, "stop")
	testwait.Until(t, "reads on the primary with the replica down", func() bool { return !onReplica(tolerant) })
}
