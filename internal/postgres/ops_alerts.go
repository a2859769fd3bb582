package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/ops"
)

// AlertStore keeps the compliance alert queue's claims (migration 00041)
// and counts the applications with open hits for it.
type AlertStore struct{ db *DB }

// NewAlertStore returns the alert queue's store.
func NewAlertStore(db *DB) *AlertStore { return &AlertStore{db: db} }

var _ ops.AlertStore = (*AlertStore)(nil)

// AlertClaims implements ops.AlertStore: every claim by "kind|subject".
func (s *AlertStore) AlertClaims(ctx context.Context) (map[string]emi.AlertClaim, error) {
	var rows []emi.AlertClaim
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT c.subject_kind, c.subject::text AS subject, c.staff_id::text AS staff_id,
		coalesce(u.name, '') AS staff_name, coalesce(c.assigned_by::text, '') AS assigned_by, c.claimed_at
		FROM compliance_claims c LEFT JOIN staff_users u ON u.id = c.staff_id`)
	if err != nil {
		return nil, Translate(err)
	}
	out := make(map[string]emi.AlertClaim, len(rows))
	for _, r := range rows {
		out[r.Kind+"|"+r.Subject] = r
	}
	return out, nil
}

// AlertClaim implements ops.AlertStore: the claim of one alert, locked.
func (s *AlertStore) AlertClaim(ctx context.Context, kind, subject string) (emi.AlertClaim, bool, error) {
	var c emi.AlertClaim
	if !validUUID(subject) {
		return c, false, nil
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &c, `SELECT subject_kind, subject::text AS subject, staff_id::text AS staff_id, '' AS staff_name,
		coalesce(assigned_by::text, '') AS assigned_by, claimed_at FROM compliance_claims
		WHERE subject_kind = $1 AND subject = $2 FOR UPDATE`, kind, subject)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, Translate(err)
}

// ClaimAlert implements ops.AlertStore: it takes a free alert (false
// when someone holds it).
func (s *AlertStore) ClaimAlert(ctx context.Context, kind, subject, staff string, at time.Time) (bool, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO compliance_claims (subject_kind, subject, staff_id, claimed_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (subject_kind, subject) DO NOTHING`, kind, subject, staff, at)
	if err != nil {
		return false, Translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, Translate(err)
}

// AssignAlert implements ops.AlertStore: staff holds the alert now,
// whoever held it before.
func (s *AlertStore) AssignAlert(ctx context.Context, kind, subject, staff, by string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO compliance_claims (subject_kind, subject, staff_id, assigned_by, claimed_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (subject_kind, subject) DO UPDATE
		SET staff_id = EXCLUDED.staff_id, assigned_by = EXCLUDED.assigned_by, claimed_at = EXCLUDED.claimed_at`, kind, subject, staff, by, at)
	return Translate(err)
}

// ReleaseAlert implements ops.AlertStore.
func (s *AlertStore) ReleaseAlert(ctx context.Context, kind, subject string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM compliance_claims WHERE subject_kind = $1 AND subject = $2`, kind, subject)
	return Translate(err)
}

// ApplicationsWithHits implements ops.AlertStore: applications not
// decided whose sanctions check raised hits, oldest first.
func (s *AlertStore) ApplicationsWithHits(ctx context.Context, limit int) ([]string, error) {
	var out []string
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT token::text FROM applications
		WHERE has_sanctions_hit AND status NOT IN ('approved', 'rejected') ORDER BY created_at LIMIT $1`, limit)
	return out, Translate(err)
}

// CountApplicationsWithOpenHits implements ops.AlertStore: the
// applications ApplicationsWithHits returns that still have a hit without
// a final decision (a true match, or a confirmed false positive). The hit
// key is onboarding.HitKey's, built in SQL.
func (s *AlertStore) CountApplicationsWithOpenHits(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM applications a
		WHERE a.has_sanctions_hit AND a.status NOT IN ('approved', 'rejected') AND EXISTS (
			SELECT 1 FROM application_checks c,
				jsonb_array_elements(CASE WHEN jsonb_typeof(c.details->'hits') = 'array' THEN c.details->'hits' ELSE '[]'::jsonb END) h
			WHERE c.application = a.token AND c.name = 'sanctions' AND NOT EXISTS (
				SELECT 1 FROM application_hit_decisions d
				WHERE d.application = a.token
				AND d.hit_key = concat_ws('|', h->>'list', h->>'entry_id', coalesce(nullif(h->>'member', ''), 'company'), h->>'fingerprint')
				AND (d.decision = 'true_match' OR d.confirmed_by IS NOT NULL)))`)
	return n, Translate(err)
}
