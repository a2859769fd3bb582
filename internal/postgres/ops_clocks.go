package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// TestClockStore keeps the sandbox partners' test clocks
// (sandbox_test_clocks; ops.TestClocks) and answers kernel.ClockReader.
type TestClockStore struct{ db *DB }

// NewTestClockStore returns the store.
func NewTestClockStore(db *DB) *TestClockStore { return &TestClockStore{db: db} }

// onClock is the SQL condition "the partner runs on a test clock", for the
// instance's sweeps, which leave such a partner's due work to the clock's
// advances. partnerColumn names the row's partner.
func onClock(partnerColumn string) string {
	return `EXISTS (SELECT 1 FROM sandbox_test_clocks tc WHERE tc.partner_id = ` + partnerColumn + `)`
}

// earliest runs query, a SELECT min(time) of the work a test clock's
// advance finds due, and returns the time and whether there was any.
func earliest(ctx context.Context, ext sqlx.ExtContext, query string, args ...any) (time.Time, bool, error) {
	var t sql.NullTime
	if err := sqlx.GetContext(ctx, ext, &t, query, args...); err != nil {
		return time.Time{}, false, Translate(err)
	}
	return t.Time.UTC(), t.Valid, nil
}

type clockRow struct {
	Token          string       `db:"token"`
	Name           string       `db:"name"`
	FrozenTime     time.Time    `db:"frozen_time"`
	AdvancingSince sql.NullTime `db:"advancing_since"`
	AdvancingTo    sql.NullTime `db:"advancing_to"`
	CreatedAt      time.Time    `db:"created_at"`
}

const clockColumns = `token::text, name, frozen_time, advancing_since, advancing_to, created_at`

func (r clockRow) clock() emi.TestClock {
	c := emi.TestClock{Token: r.Token, Name: r.Name, FrozenTime: r.FrozenTime.UTC(), Status: emi.TestClockReady, CreatedAt: r.CreatedAt.UTC()}
	if r.AdvancingSince.Valid {
		c.Status = emi.TestClockAdvancing
		since := r.AdvancingSince.Time.UTC()
		c.AdvancingSince = &since
		if r.AdvancingTo.Valid {
			t := r.AdvancingTo.Time.UTC()
			c.AdvancingTo = &t
		}
	}
	return c
}

// PartnerClock implements kernel.ClockReader. It reads the primary: a
// partner's request right after an advance must see the advanced time.
func (s *TestClockStore) PartnerClock(ctx context.Context, partnerID string) (time.Time, bool, error) {
	if !validUUID(partnerID) {
		return time.Time{}, false, nil
	}
	var t time.Time
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &t, `SELECT frozen_time FROM sandbox_test_clocks WHERE partner_id = $1`, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, Translate(err)
	}
	return t.UTC(), true, nil
}

// CreateClock stores partnerID's clock; a partner has one at most
// (emi.ErrTestClockExists).
func (s *TestClockStore) CreateClock(ctx context.Context, partnerID string, c emi.TestClock) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO sandbox_test_clocks (partner_id, token, name, frozen_time, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)`, partnerID, c.Token, c.Name, c.FrozenTime, c.CreatedAt)
	if UniqueViolation(err, "sandbox_test_clocks_pkey") {
		return emi.ErrTestClockExists
	}
	return Translate(err)
}

// Clock returns partnerID's clock (emi.ErrTestClockNotFound when it has
// none); forUpdate locks its row.
func (s *TestClockStore) Clock(ctx context.Context, partnerID string, forUpdate bool) (emi.TestClock, error) {
	q := `SELECT ` + clockColumns + ` FROM sandbox_test_clocks WHERE partner_id = $1`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var r clockRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, partnerID); err != nil {
		return emi.TestClock{}, NotFound(err, emi.ErrTestClockNotFound)
	}
	return r.clock(), nil
}

// BeginAdvance marks partnerID's clock advancing to to, unless an advance
// that started after staleBefore is under way (emi.ErrTestClockAdvancing).
func (s *TestClockStore) BeginAdvance(ctx context.Context, partnerID string, to, now, staleBefore time.Time) (emi.TestClock, error) {
	var r clockRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `UPDATE sandbox_test_clocks
		SET advancing_since = $2, advancing_to = $3, updated_at = $2
		WHERE partner_id = $1 AND (advancing_since IS NULL OR advancing_since < $4)
		RETURNING `+clockColumns, partnerID, now, to, staleBefore)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Clock(ctx, partnerID, false); err != nil {
			return emi.TestClock{}, err
		}
		return emi.TestClock{}, emi.ErrTestClockAdvancing
	}
	if err != nil {
		return emi.TestClock{}, Translate(err)
	}
	return r.clock(), nil
}

// SetClockTime moves partnerID's clock to t (an advance's step; done
// ends the advance).
func (s *TestClockStore) SetClockTime(ctx context.Context, partnerID string, t, now time.Time, done bool) error {
	q := `UPDATE sandbox_test_clocks SET frozen_time = $2, updated_at = $3 WHERE partner_id = $1`
	if done {
		q = `UPDATE sandbox_test_clocks SET frozen_time = $2, updated_at = $3, advancing_since = NULL, advancing_to = NULL
			WHERE partner_id = $1`
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx, q, partnerID, t, now)
	if err != nil {
		return Translate(err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return emi.ErrTestClockNotFound
	}
	return nil
}

// DeleteClock removes partnerID's clock.
func (s *TestClockStore) DeleteClock(ctx context.Context, partnerID string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM sandbox_test_clocks WHERE partner_id = $1`, partnerID)
	return Translate(err)
}
