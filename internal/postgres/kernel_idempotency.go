package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// IdempotencyStore keeps the partner API's stored responses per
// Idempotency-Key (idempotency_keys) for kernel.Idempotency.
type IdempotencyStore struct{ db *DB }

// NewIdempotencyStore returns the idempotency keys' store.
func NewIdempotencyStore(db *DB) *IdempotencyStore { return &IdempotencyStore{db: db} }

var _ kernel.IdempotencyStore = (*IdempotencyStore)(nil)

// TryLockIdempotencyKey takes a transaction-scoped advisory lock on
// (partner, key) without waiting. It must run inside a transaction.
func (s *IdempotencyStore) TryLockIdempotencyKey(ctx context.Context, partnerID, key string) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok,
		`SELECT pg_try_advisory_xact_lock(hashtextextended($1 || ':' || $2, 4242))`, partnerID, key)
	return ok, Translate(err)
}

// StoredResponse returns the response stored for (partner, key) created at
// or after since. Its body is sealed (BodySealed, opened by the service)
// unless the row was stored before migration 00054.
func (s *IdempotencyStore) StoredResponse(ctx context.Context, partnerID, key string, since time.Time) (kernel.StoredResponse, bool, error) {
	var row struct {
		ID          string    `db:"id"`
		Fingerprint []byte    `db:"fingerprint"`
		Status      int       `db:"status"`
		Headers     []byte    `db:"headers"`
		Body        []byte    `db:"body"`
		BodyEnc     []byte    `db:"body_enc"`
		CreatedAt   time.Time `db:"created_at"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row,
		`SELECT id, fingerprint, status, headers, body, body_enc, created_at FROM idempotency_keys
		  WHERE partner_id = $1 AND key = $2 AND created_at >= $3`, partnerID, key, since)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return kernel.StoredResponse{}, false, nil
		}
		return kernel.StoredResponse{}, false, Translate(err)
	}
	resp := kernel.StoredResponse{ID: row.ID, Fingerprint: row.Fingerprint, Status: row.Status, Body: row.Body, CreatedAt: row.CreatedAt}
	if row.BodyEnc != nil {
		resp.Body, resp.BodySealed = row.BodyEnc, true
	}
	if err := json.Unmarshal(row.Headers, &resp.Headers); err != nil {
		return kernel.StoredResponse{}, false, emi.Internal(err)
	}
	return resp, true, nil
}

// SaveResponse stores resp for (partner, key), replacing an expired row.
// resp.Body must be sealed (resp.BodySealed) under resp.ID's context.
func (s *IdempotencyStore) SaveResponse(ctx context.Context, partnerID, key string, resp kernel.StoredResponse) error {
	if !resp.BodySealed || resp.ID == "" {
		return emi.Internal(errors.New("idempotency: a stored response must be sealed"))
	}
	h, err := json.Marshal(resp.Headers)
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO idempotency_keys (id, partner_id, key, fingerprint, status, headers, body, body_enc, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8)
		 ON CONFLICT (partner_id, key) DO UPDATE
		   SET id = EXCLUDED.id, fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, headers = EXCLUDED.headers,
		       body = NULL, body_enc = EXCLUDED.body_enc, created_at = EXCLUDED.created_at`,
		resp.ID, partnerID, key, resp.Fingerprint, resp.Status, jsonText(h), resp.Body, resp.CreatedAt)
	return Translate(err)
}

// PruneIdempotencyKeys deletes stored responses created before the cutoff.
func (s *IdempotencyStore) PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, before)
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	return n, Translate(err)
}
