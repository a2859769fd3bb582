package kernel

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/google/uuid"
)

// TxRunner runs fn in one database transaction (or a savepoint of the one in
// ctx). Stores called with the ctx given to fn take part in it.
type TxRunner interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Committer runs fn once the transaction of ctx has committed, or at once
// when ctx carries none; never when it rolls back (postgres.DB.AfterCommit).
type Committer interface {
	AfterCommit(ctx context.Context, fn func())
}

// InTxRead runs write in one transaction and then read in the same
// transaction, and returns what read found: the answer to a write is built
// from the transaction's own rows. Reading it back after the commit, on
// another connection, fails when the database goes away in between (a
// failover), and a partner then got "nothing was changed" for a committed
// write, and opened a second account on retry. With read inside, a failure
// before COMMIT is a rollback, and one during COMMIT is reported as an
// unknown outcome (10504), never as a failure.
func InTxRead[T any](ctx context.Context, tx TxRunner, write func(ctx context.Context) error, read func(ctx context.Context) (T, error)) (T, error) {
	var out T
	err := tx.InTx(ctx, func(ctx context.Context) error {
		if err := write(ctx); err != nil {
			return err
		}
		var err error
		out, err = read(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// RateLimiter decides rolling-window limits atomically
// (internal/postgres.LimitStore): Take counts one event of (scope, subject)
// when fewer than limit were counted within window before now, and
// otherwise says how long to wait. Without a transaction in ctx it commits
// on its own (a refused attempt stays counted whatever the caller does
// next); inside one it joins it (one connection per request).
type RateLimiter interface {
	Take(ctx context.Context, scope, subject string, limit int, window time.Duration, now time.Time) (ok bool, retry time.Duration, err error)
	// Over reports, without counting anything, whether (scope, subject)
	// already has limit events within window before now.
	Over(ctx context.Context, scope, subject string, limit int, window time.Duration, now time.Time) (over bool, retry time.Duration, err error)
	// Release takes back one event counted at at (an attempt that turned
	// out not to count).
	Release(ctx context.Context, scope, subject string, at time.Time) error
}

// Sealer encrypts and decrypts small values bound to a context string (the
// table, column and row they belong to). internal/seal implements it.
type Sealer interface {
	Seal(plaintext []byte, context string) ([]byte, error)
	Open(ciphertext []byte, context string) ([]byte, error)
}

// Clock tells the time; tests inject a fake one.
type Clock func() time.Time

// NewToken returns a new resource token: a UUID version 7 (time-ordered) in
// canonical lowercase form (contract §1).
func NewToken() string {
	return uuid.Must(uuid.NewV7()).String()
}

// RandomBytes returns n bytes from crypto/rand.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
}

// RandomString returns n random bytes as unpadded base64url.
func RandomString(n int) string { return base64.RawURLEncoding.EncodeToString(RandomBytes(n)) }

// b64 is standard padded base64.
func B64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// RetryAfter is the wait a rate-limited caller is told (Retry-After).
type RetryAfter time.Duration

func (r RetryAfter) Error() string { return "retry after " + time.Duration(r).String() }

// Seconds is the wait in whole seconds, at least 1.
func (r RetryAfter) Seconds() int { return max(1, int((time.Duration(r)+time.Second-1)/time.Second)) }
