package postgres

import (
	"context"
	"fmt"
	"time"

	"emi/internal/service/kernel"

	"github.com/jmoiron/sqlx"
)

// LimitStore decides rolling-window limits atomically (kernel.RateLimiter).
type LimitStore struct {
	db *DB
}

// NewLimitStore returns the limit store.
func NewLimitStore(db *DB) *LimitStore { return &LimitStore{db: db} }

var _ kernel.RateLimiter = (*LimitStore)(nil)

// Take counts one event of (scope, subject) at now when fewer than limit
// were counted in the window before it, and reports whether it did. When it
// did not, retry is how long until the oldest counted event leaves the
// window. It runs under a transaction-scoped advisory lock on (scope,
// subject), so concurrent attempts are decided one at a time, across
// instances too. Events older than the window are deleted on the way.
//
// Without a transaction in ctx it commits on its own, so a refused
// attempt stays counted whatever the caller does next. Inside one (an API
// request with an Idempotency-Key runs in one) it joins it: a request then
// needs one database connection, never two (two per request can exhaust
// the pool under load and deadlock), and the caller's commit decides; the
// lock is then held until that commit, which serializes the subject's
// attempts all the same.
func (s *LimitStore) Take(ctx context.Context, scope, subject string, limit int, window time.Duration, now time.Time) (ok bool, retry time.Duration, err error) {
	err = s.db.InTx(ctx, func(ctx context.Context) error {
		ext := s.db.Ext(ctx)
		if _, err := ext.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 2020))`, scope, subject); err != nil {
			return Translate(err)
		}
		since := now.Add(-window)
		if _, err := ext.ExecContext(ctx, `DELETE FROM rate_events WHERE scope = $1 AND subject = $2 AND at <= $3`, scope, subject, since); err != nil {
			return Translate(err)
		}
		var row struct {
			N      int        `db:"n"`
			Oldest *time.Time `db:"oldest"`
		}
		if err := sqlx.GetContext(ctx, ext, &row, `SELECT count(*) AS n, min(at) AS oldest FROM rate_events
			WHERE scope = $1 AND subject = $2 AND at > $3`, scope, subject, since); err != nil {
			return Translate(err)
		}
		if row.N >= limit {
			ok, retry = false, window
			if row.Oldest != nil {
				retry = row.Oldest.Add(window).Sub(now)
			}
			return nil
		}
		if _, err := ext.ExecContext(ctx, `INSERT INTO rate_events (scope, subject, at) VALUES ($1, $2, $3)`, scope, subject, now); err != nil {
			return Translate(err)
		}
		ok = true
		return nil
	})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", scope, err)
	}
	return ok, retry, nil
}

// Release takes back one event of (scope, subject) counted at at: an
// attempt that turned out not to count (a text the SMS gateway refused).
func (s *LimitStore) Release(ctx context.Context, scope, subject string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM rate_events WHERE ctid = (SELECT ctid FROM rate_events
		WHERE scope = $1 AND subject = $2 AND at = $3 LIMIT 1)`, scope, subject, at)
	if err != nil {
		return fmt.Errorf("rate limit %s: release: %w", scope, Translate(err))
	}
	return nil
}

// Over reports whether (scope, subject) already has limit events in the
// window before now, counting nothing.
func (s *LimitStore) Over(ctx context.Context, scope, subject string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	var row struct {
		N      int        `db:"n"`
		Oldest *time.Time `db:"oldest"`
	}
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT count(*) AS n, min(at) AS oldest FROM rate_events
		WHERE scope = $1 AND subject = $2 AND at > $3`, scope, subject, now.Add(-window)); err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", scope, Translate(err))
	}
	if row.N < limit || row.Oldest == nil {
		return false, 0, nil
	}
	return true, row.Oldest.Add(window).Sub(now), nil
}
