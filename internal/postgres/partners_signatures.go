package postgres

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"
)

// The replay guard's write, batched.
//
// Every authenticated request remembers its request digest (partners.Auth's
// Consume): one INSERT into api_signatures, which used to be one statement,
// one transaction and one WAL flush per request. Concurrent requests now
// share them: a request queues its digest, and whoever finds a flush slot
// free (at most sigFlushers at a time per process) sends everything queued
// as one statement,
//
//	INSERT ... SELECT FROM unnest(hashes, expiries) ON CONFLICT (hash) DO NOTHING RETURNING hash
//
// in autocommit, so one commit (synchronous, as before) covers the batch.
// The guarantee is exactly the one of a single INSERT per request: the
// primary key on hash decides, across processes, which of two identical
// requests is first, and the answer is given only after the commit. Two
// identical requests in one batch: the first gets the database's answer,
// the others are replays. With no concurrency a batch is one request and
// costs what the single INSERT did.
//
// Inside a transaction (a POST with an Idempotency-Key: kernel.Idempotency
// runs the guard in the request's transaction) the digest is written in
// that transaction, unbatched, as before: its fate is the transaction's,
// which commits anyway, and Idempotency.Do records it again on its own when
// the transaction rolls back.

// sigFlushers is how many batches one process has in flight at once: with
// no load every request flushes at once, under load each flush carries
// what queued meanwhile.
const sigFlushers = 4

// sigMaxBatch bounds one statement.
const sigMaxBatch = 1000

type sigRequest struct {
	digest  []byte
	expires time.Time
	done    chan sigResult
}

type sigResult struct {
	fresh bool
	err   error
}

type sigBatcher struct {
	db       *DB
	mu       sync.Mutex
	pending  []*sigRequest
	flushing int
}

// remember queues digest and waits for the commit of its batch. Returns
// ctx's error when ctx ends first (the digest may then be stored or not:
// the request fails either way).
func (b *sigBatcher) remember(ctx context.Context, digest []byte, expires time.Time) (bool, error) {
	r := &sigRequest{digest: digest, expires: expires, done: make(chan sigResult, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	lead := b.flushing < sigFlushers
	if lead {
		b.flushing++
	}
	b.mu.Unlock()
	if lead {
		// This request flushes one batch (its own, or an earlier one that
		// no flusher took yet); what queued meanwhile is flushed by a
		// goroutine that keeps the slot, so no request waits on others'
		// batches after its own.
		if b.flushNext() {
			go func() {
				for b.flushNext() {
				}
			}()
		}
	}
	select {
	case res := <-r.done:
		return res.fresh, res.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// flushNext flushes one batch; it returns whether more are queued (the
// caller then keeps the flush slot and calls again). With nothing queued it
// gives the slot back.
func (b *sigBatcher) flushNext() bool {
	b.mu.Lock()
	n := min(len(b.pending), sigMaxBatch)
	if n == 0 {
		b.flushing--
		b.mu.Unlock()
		return false
	}
	batch := b.pending[:n:n]
	b.pending = b.pending[n:]
	if len(b.pending) == 0 {
		b.pending = nil // let the old array go
	}
	b.mu.Unlock()
	b.flush(batch)
	return true
}

// Asynchronous commit. The batch's commit does not wait for its WAL to reach
// the disk (synchronous_commit = off for that transaction only). The
// primary key still decides every race at once, in memory, across all
// processes: two identical requests get one "fresh" whatever the commit
// mode. What a crash of PostgreSQL (not of emi) may lose is the rows
// committed in the last moments before it (at most 3 × wal_writer_delay,
// 600 ms by default), and only of requests that wrote nothing durable after
// their guard row: any request that changes something commits its own
// transaction synchronously afterwards, and that commit flushes the WAL up
// to its own record, the earlier guard row included. So after a database
// crash, a request that could be replayed once within its 15 s window is a
// read or a refused request sent in the last 600 ms before the crash; a
// request that moved money, changed a card or created anything cannot. A
// POST with an Idempotency-Key writes its digest inside its own
// (synchronous) transaction and is unaffected. Measured on the development
// cluster (fsync on): 1,245 single-row guard inserts per second with a
// synchronous commit, 15,756 with this one (pgbench, 4 clients).
func (b *sigBatcher) flush(batch []*sigRequest) {
	first := make(map[string]int, len(batch))
	var unique []*sigRequest
	for i, r := range batch {
		if _, dup := first[string(r.digest)]; dup {
			continue
		}
		first[string(r.digest)] = i
		unique = append(unique, r)
	}
	// Every batch inserts its digests in one order (ascending bytes) and
	// the statement keeps it (ORDER BY ordinality). Two batches from two
	// processes that share digests otherwise deadlock: each inserts one
	// digest first and then waits for the other's uncommitted row (CI saw
	// "deadlock detected" in TestRememberSignatureBatchedAcrossTwoPools).
	// In one order, a batch only ever waits for a digest lower than any it
	// still has to insert, so no cycle of waits can form.
	slices.SortFunc(unique, func(a, b *sigRequest) int { return bytes.Compare(a.digest, b.digest) })
	hashes := make([][]byte, len(unique))
	expiries := make([]string, len(unique))
	for i, r := range unique {
		hashes[i] = r.digest
		expiries[i] = r.expires.UTC().Format(time.RFC3339Nano)
	}
	// A batch answers many requests: one client hanging up must not fail
	// the others.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inserted := map[string]bool{}
	// set_config(..., true) lasts until the end of this statement's own
	// transaction, its commit included: the batch commits asynchronously
	// (see flush).
	rows, err := b.db.queryPrepared(ctx, `INSERT INTO api_signatures (hash, expires_at)
		SELECT h, e::timestamptz FROM unnest($1::bytea[], $2::text[]) WITH ORDINALITY AS t (h, e, n),
		     (SELECT set_config('synchronous_commit', 'off', true)) AS async (setting)
		ORDER BY n
		ON CONFLICT (hash) DO NOTHING RETURNING hash`, pq.ByteaArray(hashes), pq.StringArray(expiries))
	if err == nil {
		for rows.Next() {
			var h []byte
			if err = rows.Scan(&h); err != nil {
				break
			}
			inserted[string(h)] = true
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = rows.Err()
		}
	}
	for i, r := range batch {
		if err != nil {
			r.done <- sigResult{err: Translate(err)}
			continue
		}
		r.done <- sigResult{fresh: first[string(r.digest)] == i && inserted[string(r.digest)]}
	}
}

// RememberSignature implements the replay guard: true when digest was new.
// Outside a transaction, concurrent calls share one statement and one
// commit (partners_signatures.go); inside one, the row is written in it.
func (s *PartnerStore) RememberSignature(ctx context.Context, digest []byte, expires time.Time) (bool, error) {
	if !InTransaction(ctx) {
		return s.sigs.remember(ctx, digest, expires)
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO api_signatures (hash, expires_at) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, digest, expires)
	if err != nil {
		return false, Translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, Translate(err)
}

// PruneSignatures deletes replay-guard rows that expired before now.
func (s *PartnerStore) PruneSignatures(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM api_signatures WHERE expires_at < $1`, now)
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, Translate(err)
	}
	// Counted events of rolling-window limits (LimitStore) older than any
	// window in use (the longest is 24 hours).
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM rate_events WHERE at < $1`, now.Add(-48*time.Hour)); err != nil {
		return 0, Translate(err)
	}
	return n, nil
}
