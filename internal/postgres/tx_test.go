package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// A deadlock inside a savepoint runs the whole top-level transaction again,
// even when the code between the savepoint and the transaction turned the
// error into something else (as the API turns an error into an answer that
// the idempotency layer then discards). Retrying inside the savepoint, as
// the runner used to, meets the same cycle: the transaction still holds the
// lock it took before the savepoint, which the other one waits for; the
// loser then answered 500.
func TestDeadlockInASavepointRetriesTheTransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE dl_t (id int PRIMARY KEY, v int); INSERT INTO dl_t VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	errConverted := errors.New("the handler answered an error")
	var runs atomic.Int64
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	work := func(first, second int) error {
		var once sync.Once
		return db.InTx(ctx, func(ctx context.Context) error {
			runs.Add(1)
			if _, err := db.Ext(ctx).ExecContext(ctx, `UPDATE dl_t SET v = v + 1 WHERE id = $1`, first); err != nil {
				return err
			}
			once.Do(func() { bothLocked.Done(); bothLocked.Wait() })
			inner := db.InTx(ctx, func(ctx context.Context) error {
				_, err := db.Ext(ctx).ExecContext(ctx, `UPDATE dl_t SET v = v + 1 WHERE id = $1`, second)
				return postgres.Translate(err)
			})
			if inner != nil {
				return errConverted // what a handler does with an error: not retryable itself
			}
			return nil
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- work(1, 2) }()
	go func() { errs <- work(2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction failed: %v", err)
		}
	}
	var sum int
	if err := db.GetContext(ctx, &sum, `SELECT sum(v) FROM dl_t`); err != nil || sum != 4 {
		t.Fatalf("sum %d (%v), want 4: each transaction's two updates once", sum, err)
	}
	if runs.Load() < 3 {
		t.Fatalf("%d runs: the deadlock's loser should have run again", runs.Load())
	}
}

// A transaction that keeps failing with a deadlock is run TxAttempts times,
// then answered as unavailable (503, nothing changed), never as an internal
// error; a request deadline too close for another attempt stops it early.
func TestRetriesRunOutAsUnavailable(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	deadlock := &pq.Error{Code: "40P01", Message: "deadlock detected"}
	var runs int
	err := db.InTx(context.Background(), func(context.Context) error { runs++; return deadlock })
	if !errors.Is(err, emi.ErrUnavailable) || emi.AsError(err).Code != 10503 {
		t.Fatalf("err = %v, want 10503", err)
	}
	if runs != postgres.TxAttempts {
		t.Fatalf("%d runs, want %d", runs, postgres.TxAttempts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	runs = 0
	start := time.Now()
	err = db.InTx(ctx, func(context.Context) error { runs++; return deadlock })
	if !errors.Is(err, emi.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v, want 10503 before the deadline's end", err, time.Since(start))
	}
}

// A failed COMMIT says what the client may conclude.
func TestCommitErrorSaysWhatIsKnown(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want *emi.Error
	}{
		{"not sent: the request's context ended", done, context.Canceled, emi.ErrUnavailable},
		{"not sent: the transaction was already rolled back", context.Background(), sql.ErrTxDone, emi.ErrUnavailable},
		{"refused by the server: a deferred unique constraint", context.Background(), &pq.Error{Code: "23505"}, emi.ErrNonUniqueValue},
		{"connection lost on the way", context.Background(), io.ErrUnexpectedEOF, emi.ErrOutcomeUnknown},
		{"the server was shut down", context.Background(), &pq.Error{Code: "57P01"}, emi.ErrOutcomeUnknown},
		{"connection failure", context.Background(), &pq.Error{Code: "08006"}, emi.ErrOutcomeUnknown},
	} {
		if got := postgres.CommitError(tc.ctx, tc.err); !errors.Is(got, tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want.Key)
		}
	}
}

// cutAtCommit is a TCP proxy in front of PostgreSQL that forwards everything
// and, once the client's COMMIT has reached the server, closes the client's
// side without passing the answer on: the transaction is committed and the
// client cannot know it.
func cutAtCommit(t *testing.T, target string) (addr string, cuts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	cuts = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			var cut atomic.Bool
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && !cut.Load() {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						_ = c.Close()
						return
					}
				}
			}()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						commit := bytes.Contains(buf[:n], []byte("COMMIT\x00"))
						if commit {
							cut.Store(true) // the answer to COMMIT never reaches the client
						}
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
						if commit {
							cuts.Add(1)
							time.Sleep(200 * time.Millisecond) // the server commits
							_ = c.Close()
							_ = s.Close()
							return
						}
					}
					if err != nil {
						_ = s.Close()
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), cuts
}

// A connection lost during COMMIT is ErrOutcomeUnknown, and the row it
// carried is in the database: the client is never told "nothing was
// changed" for a change that was made. A connection lost before COMMIT is
// ErrUnavailable: nothing was committed.
func TestConnectionLostAtCommitIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	raw := pgtest.URL(t)
	ctx := context.Background()
	direct, err := postgres.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if _, err := direct.ExecContext(ctx, `CREATE TABLE commit_t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	addr, cuts := cutAtCommit(t, u.Host)
	u.Host = addr
	db, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	err = db.InTx(ctx, func(ctx context.Context) error {
		_, err := db.Ext(ctx).ExecContext(ctx, `INSERT INTO commit_t VALUES (1)`)
		return postgres.Translate(err)
	})
	if !errors.Is(err, emi.ErrOutcomeUnknown) || cuts.Load() != 1 {
		t.Fatalf("err = %v (cuts %d), want 10504 outcome unknown", err, cuts.Load())
	}
	var n int
	if err := direct.GetContext(ctx, &n, `SELECT count(*) FROM commit_t WHERE id = 1`); err != nil || n != 1 {
		t.Fatalf("row count %d (%v): the commit should have reached the server", n, err)
	}

	// Lost before COMMIT: the server rolls back; the client is told nothing changed.
	err = db.InTx(ctx, func(ctx context.Context) error {
		if _, err := db.Ext(ctx).ExecContext(ctx, `INSERT INTO commit_t VALUES (2)`); err != nil {
			return postgres.Translate(err)
		}
		_, err := db.Ext(ctx).ExecContext(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return postgres.Translate(err)
	})
	if !errors.Is(err, emi.ErrUnavailable) {
		t.Fatalf("err = %v, want 10503 unavailable", err)
	}
	if err := direct.GetContext(ctx, &n, `SELECT count(*) FROM commit_t WHERE id = 2`); err != nil || n != 0 {
		t.Fatalf("row count %d (%v): nothing should be committed", n, err)
	}
}

// AfterCommit runs what a transaction registered once it committed, after
// COMMIT returned, and never what a rolled-back transaction, a rolled-back
// savepoint or an attempt that ran again registered; without a transaction
// it runs at once.
func TestAfterCommit(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE ac_t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var ran []string
	seen := func(name string) func() {
		return func() {
			// Registered work runs after COMMIT: another connection sees
			// the row.
			var n int
			if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM ac_t WHERE id = 1`).Scan(&n); err != nil {
				t.Error(err)
			}
			ran = append(ran, fmt.Sprintf("%s:%d", name, n))
		}
	}
	db.AfterCommit(ctx, seen("outside"))
	if want := []string{"outside:0"}; !slices.Equal(ran, want) {
		t.Fatalf("without a transaction: ran %v, want %v", ran, want)
	}
	ran = nil
	attempts := 0
	err := db.InTx(ctx, func(ctx context.Context) error {
		attempts++
		db.AfterCommit(ctx, seen(fmt.Sprintf("attempt %d", attempts)))
		if attempts == 1 {
			// A deadlock: InTx runs the transaction again.
			return &pq.Error{Code: "40P01", Message: "deadlock detected"}
		}
		if _, err := db.Ext(ctx).ExecContext(ctx, `INSERT INTO ac_t VALUES (1)`); err != nil {
			return err
		}
		_ = db.InTx(ctx, func(ctx context.Context) error {
			db.AfterCommit(ctx, seen("rolled-back savepoint"))
			return errors.New("refused")
		})
		if err := db.InTx(ctx, func(ctx context.Context) error {
			db.AfterCommit(ctx, seen("savepoint"))
			return nil
		}); err != nil {
			return err
		}
		if len(ran) != 0 {
			t.Errorf("ran %v before the commit", ran)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"attempt 2:1", "savepoint:1"}; !slices.Equal(ran, want) {
		t.Errorf("after the commit: ran %v, want %v", ran, want)
	}
	ran = nil
	_ = db.InTx(ctx, func(ctx context.Context) error {
		db.AfterCommit(ctx, seen("rolled back"))
		return errors.New("refused")
	})
	if len(ran) != 0 {
		t.Errorf("a rolled-back transaction ran %v", ran)
	}
}
