package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// ComplianceStore keeps the compliance alert queue's claims and the staff
// inbox (migration 00041).
type ComplianceStore struct{ db *DB }

// NewComplianceStore returns the store.
func NewComplianceStore(db *DB) *ComplianceStore { return &ComplianceStore{db: db} }

// AlertClaims implements service.AlertStore: every claim by "kind|subject".
func (s *ComplianceStore) AlertClaims(ctx context.Context) (map[string]emi.AlertClaim, error) {
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

// AlertClaim implements service.AlertStore: the claim of one alert, locked.
func (s *ComplianceStore) AlertClaim(ctx context.Context, kind, subject string) (emi.AlertClaim, bool, error) {
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

// ClaimAlert implements service.AlertStore: it takes a free alert (false
// when someone holds it).
func (s *ComplianceStore) ClaimAlert(ctx context.Context, kind, subject, staff string, at time.Time) (bool, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO compliance_claims (subject_kind, subject, staff_id, claimed_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (subject_kind, subject) DO NOTHING`, kind, subject, staff, at)
	if err != nil {
		return false, Translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, Translate(err)
}

// AssignAlert implements service.AlertStore: staff holds the alert now,
// whoever held it before.
func (s *ComplianceStore) AssignAlert(ctx context.Context, kind, subject, staff, by string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO compliance_claims (subject_kind, subject, staff_id, assigned_by, claimed_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (subject_kind, subject) DO UPDATE
		SET staff_id = EXCLUDED.staff_id, assigned_by = EXCLUDED.assigned_by, claimed_at = EXCLUDED.claimed_at`, kind, subject, staff, by, at)
	return Translate(err)
}

// ReleaseAlert implements service.AlertStore.
func (s *ComplianceStore) ReleaseAlert(ctx context.Context, kind, subject string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM compliance_claims WHERE subject_kind = $1 AND subject = $2`, kind, subject)
	return Translate(err)
}

// ApplicationsWithHits implements service.AlertStore: applications not
// decided whose sanctions check raised hits, oldest first.
func (s *ComplianceStore) ApplicationsWithHits(ctx context.Context, limit int) ([]string, error) {
	var out []string
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT token::text FROM applications
		WHERE has_sanctions_hit AND status NOT IN ('approved', 'rejected') ORDER BY created_at LIMIT $1`, limit)
	return out, Translate(err)
}

// CountApplicationsWithOpenHits implements service.AlertStore: the
// applications ApplicationsWithHits returns that still have a hit without
// a final decision (a true match, or a confirmed false positive). The hit
// key is service.HitKey's, built in SQL.
func (s *ComplianceStore) CountApplicationsWithOpenHits(ctx context.Context) (int64, error) {
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

// Notify implements service.InboxStore.
func (s *ComplianceStore) Notify(ctx context.Context, it emi.InboxItem) error {
	var by any
	if it.By != "" {
		by = it.By
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO staff_inbox (staff_id, kind, href, body, by_staff, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, it.StaffID, it.Kind, it.Href, it.Body, by, it.At)
	return Translate(err)
}

// Inbox implements service.InboxStore: a person's items, newest first.
func (s *ComplianceStore) Inbox(ctx context.Context, staff string, unreadOnly bool, limit int) ([]emi.InboxItem, error) {
	var out []emi.InboxItem
	if !validUUID(staff) {
		return nil, nil
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT i.id, i.staff_id::text AS staff_id, i.kind, i.href, i.body,
		coalesce(i.by_staff::text, '') AS by_staff, coalesce(u.name, '') AS by_name, i.created_at, i.read_at
		FROM staff_inbox i LEFT JOIN staff_users u ON u.id = i.by_staff
		WHERE i.staff_id = $1 AND (NOT $2 OR i.read_at IS NULL) ORDER BY i.created_at DESC, i.id DESC LIMIT $3`, staff, unreadOnly, limit)
	return out, Translate(err)
}

// UnreadCount implements service.InboxStore.
func (s *ComplianceStore) UnreadCount(ctx context.Context, staff string) (int64, error) {
	var n int64
	if !validUUID(staff) {
		return 0, nil
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM staff_inbox WHERE staff_id = $1 AND read_at IS NULL`, staff)
	return n, Translate(err)
}

// MarkRead implements service.InboxStore: id 0 marks every item.
func (s *ComplianceStore) MarkRead(ctx context.Context, staff string, id int64, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE staff_inbox SET read_at = $3
		WHERE staff_id = $1 AND read_at IS NULL AND ($2 = 0 OR id = $2)`, staff, id, at)
	return Translate(err)
}
