package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jmoiron/sqlx"

	"emi/internal/service/staff"
)

// SessionStore keeps the back office's scs sessions in the sessions table.
// It implements scs.Store and scs.CtxStore.
//
// Tokens: the table is keyed by the SHA-256 of the session token, never the
// token itself (check S1), so a copy of the table, a backup or a read-only
// SQL injection does not yield live sessions. (Leave the SessionManager's
// HashTokenInStore off: it would only hash twice.)
//
// Staff users: every Commit decodes the session data with scs's default
// codec (scs.GobCodec; the SessionManager must use it too) and copies the
// value under staff.SessionStaffKey, when it is a staff id, into the row's
// staff_id column. So the portal needs no extra call after signing a user
// in: the session row is tagged when scs saves it at the end of the request,
// under the renewed token. TagSession does the same explicitly for a token
// already saved. DeleteStaffSessions (and staff.Staff's revocations, which
// run the same statement inside their transaction) then removes every
// session of a user at once.
//
// Revocation wins over requests in flight. scs saves a request's session
// when the request ends, so a request that started before a sign-out used
// to write the deleted session back (the commit was an upsert) and the old
// cookie kept working. Now every deletion (sign-out, token renewal, "sign
// out everywhere", a revocation by an administrator) leaves a tombstone in
// revoked_sessions until the token could no longer be valid, and a commit
// whose token has a tombstone is dropped: the commit upserts, then looks
// for the tombstone in a later statement (which sees every revocation
// committed meanwhile, including one that waited on the session row's lock)
// and rolls back when it finds one; a commit and a deletion of one token
// also serialize on an advisory lock. Revocation still stamps
// staff_users.sessions_revoked_at, which staff.Staff.Current checks on
// every request.
//
// It does not implement scs.IterableStore: All must return the tokens,
// and the table only has their hashes.
//
// Expiry: Find ignores rows whose expiry is not after the store's clock, and
// DeleteExpired removes them (the maintenance job calls it through
// staff.Staff.Prune).
type SessionStore struct {
	db    *DB
	codec scs.Codec
	now   func() time.Time
}

// NewSessionStore returns the session store. now is the clock that decides
// expiry (time.Now when nil); tests pass a settable one.
func NewSessionStore(db *DB, now func() time.Time) *SessionStore {
	if now == nil {
		now = time.Now
	}
	return &SessionStore{db: db, codec: scs.GobCodec{}, now: now}
}

var (
	_ scs.Store    = (*SessionStore)(nil)
	_ scs.CtxStore = (*SessionStore)(nil)
)

// tokenHash is what the table stores instead of the token.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// FindCtx returns the data of the unexpired session with token. An unknown,
// expired or malformed token is found = false with a nil error.
func (s *SessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var b []byte
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &b,
		`SELECT data FROM sessions WHERE token_hash = $1 AND expiry > $2`, tokenHash(token), s.now())
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, Translate(err)
	}
	return b, true, nil
}

// CommitCtx saves the session data under token until expiry, replacing an
// existing row, and tags it with the staff id found in the data.
// A token that was deleted (signed out, renewed, revoked) is never saved
// again: the commit is dropped without an error, so the request that
// carried it ends normally and its cookie leads nowhere.
func (s *SessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	h := tokenHash(token)
	err := s.db.InTx(WithoutTx(ctx), func(ctx context.Context) error {
		ext := s.db.Ext(ctx)
		if _, err := ext.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 7))`, h); err != nil {
			return Translate(err)
		}
		if _, err := ext.ExecContext(ctx,
			`INSERT INTO sessions (token_hash, data, expiry, staff_id) VALUES ($1, $2, $3, $4)
			 ON CONFLICT (token_hash) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry, staff_id = EXCLUDED.staff_id`,
			h, b, expiry, s.staffID(b)); err != nil {
			return Translate(err)
		}
		var revoked bool
		if err := sqlx.GetContext(ctx, ext, &revoked, `SELECT EXISTS (SELECT 1 FROM revoked_sessions WHERE token_hash = $1)`, h); err != nil {
			return Translate(err)
		}
		if revoked {
			return errSessionRevoked
		}
		return nil
	})
	if errors.Is(err, errSessionRevoked) {
		return nil
	}
	return err
}

// errSessionRevoked rolls back the commit of a revoked token.
var errSessionRevoked = errors.New("session revoked")

// revokedFor is how long a deleted token is remembered: longer than any
// session can live (12 hours absolute).
const revokedFor = 13 * time.Hour

// staffID returns the staff id in the session data, or nil when there is
// none (anonymous session, another codec, not a UUID).
func (s *SessionStore) staffID(b []byte) *string {
	_, values, err := s.codec.Decode(b)
	if err != nil {
		return nil
	}
	id, ok := values[staff.SessionStaffKey].(string)
	if !ok || !validUUID(id) {
		return nil
	}
	return &id
}

// DeleteCtx deletes the session with token; an unknown token is no error.
// It leaves a tombstone, so a request in flight cannot save the session
// again (CommitCtx).
func (s *SessionStore) DeleteCtx(ctx context.Context, token string) error {
	h := tokenHash(token)
	return s.db.InTx(ctx, func(ctx context.Context) error {
		ext := s.db.Ext(ctx)
		if _, err := ext.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 7))`, h); err != nil {
			return Translate(err)
		}
		if _, err := ext.ExecContext(ctx, `INSERT INTO revoked_sessions (token_hash, expires_at) VALUES ($1, $2)
			ON CONFLICT (token_hash) DO NOTHING`, h, s.now().Add(revokedFor)); err != nil {
			return Translate(err)
		}
		_, err := ext.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = $1`, h)
		return Translate(err)
	})
}

// Find implements scs.Store.
func (s *SessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit implements scs.Store.
func (s *SessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements scs.Store.
func (s *SessionStore) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

// TagSession ties the saved session with token to a staff user. Commit
// already does this from the session data; TagSession is for a caller that
// keeps the staff id elsewhere. An unknown token changes nothing.
func (s *SessionStore) TagSession(ctx context.Context, token, staffID string) error {
	if !validUUID(staffID) {
		return nil
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE sessions SET staff_id = $2 WHERE token_hash = $1`, tokenHash(token), staffID)
	return Translate(err)
}

// DeleteStaffSessions deletes every session tagged with the staff user and
// returns how many there were. It does not stamp sessions_revoked_at; use
// staff.Staff.RevokeSessions for a full revocation.
func (s *SessionStore) DeleteStaffSessions(ctx context.Context, staffID string) (int64, error) {
	return deleteStaffSessions(ctx, s.db.Ext(ctx), staffID)
}

// CountStaffSessions returns how many unexpired sessions the staff user has.
func (s *SessionStore) CountStaffSessions(ctx context.Context, staffID string) (int, error) {
	if !validUUID(staffID) {
		return 0, nil
	}
	var n int
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n,
		`SELECT count(*) FROM sessions WHERE staff_id = $1 AND expiry > $2`, staffID, s.now())
	return n, Translate(err)
}

// DeleteExpired deletes the sessions that expired, by the store's clock, and
// returns how many.
func (s *SessionStore) DeleteExpired(ctx context.Context) (int64, error) {
	return deleteExpiredSessions(ctx, s.db.Ext(ctx), s.now())
}

func deleteStaffSessions(ctx context.Context, ext sqlx.ExtContext, staffID string) (int64, error) {
	if !validUUID(staffID) {
		return 0, nil
	}
	// Each deleted token leaves a tombstone (see CommitCtx).
	return rowsAffected(ext.ExecContext(ctx, `WITH d AS (DELETE FROM sessions WHERE staff_id = $1 RETURNING token_hash)
		INSERT INTO revoked_sessions (token_hash, expires_at) SELECT token_hash, now() + $2::interval FROM d
		ON CONFLICT (token_hash) DO NOTHING`, staffID, fmt.Sprintf("%d seconds", int(revokedFor.Seconds()))))
}

func deleteExpiredSessions(ctx context.Context, ext sqlx.ExtContext, now time.Time) (int64, error) {
	if _, err := ext.ExecContext(ctx, `DELETE FROM revoked_sessions WHERE expires_at <= $1`, now); err != nil {
		return 0, Translate(err)
	}
	return rowsAffected(ext.ExecContext(ctx, `DELETE FROM sessions WHERE expiry <= $1`, now))
}
