package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

// RequestStore keeps the two-person requests (control_requests, migration
// 00095).
type RequestStore struct{ db *DB }

// NewRequestStore returns the requests' store.
func NewRequestStore(db *DB) *RequestStore { return &RequestStore{db: db} }

var _ staff.RequestStore = (*RequestStore)(nil)

// requestRow is a request as read.
type requestRow struct {
	staff.Request
	Approvals pq.StringArray `db:"approvals"`
}

const requestColumns = `r.id::text AS id, r.control, r.subject, r.resource_type, r.resource_token,
	coalesce(r.partner_id::text, '') AS partner_id, r.reason, r.revision, r.status, r.proposed_by::text AS proposed_by,
	r.proposed_at, r.lapses_at, r.approvals::text[] AS approvals, coalesce(r.decided_by::text, '') AS decided_by,
	r.decided_at, r.note, coalesce(u.name, '') AS proposed_by_name`

func (r requestRow) request() staff.Request {
	out := r.Request
	out.Approvals = []string(r.Approvals)
	out.ProposedAt = out.ProposedAt.UTC()
	return out
}

// InsertRequest implements staff.RequestStore.
func (s *RequestStore) InsertRequest(ctx context.Context, r staff.Request) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO control_requests (id, control, subject, resource_type,
		resource_token, partner_id, reason, revision, status, proposed_by, proposed_at, lapses_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, r.ID, string(r.Control), r.Subject, r.ResourceType,
		r.ResourceToken, nullUUID(r.PartnerID), r.Reason, r.Revision, r.Status, r.ProposedBy, r.ProposedAt, r.LapsesAt)
	return Translate(err)
}

// PendingRequest implements staff.RequestStore.
func (s *RequestStore) PendingRequest(ctx context.Context, subject string, forUpdate bool) (staff.Request, bool, error) {
	q := `SELECT ` + requestColumns + ` FROM control_requests r LEFT JOIN staff_users u ON u.id = r.proposed_by
		WHERE r.subject = $1 AND r.status = 'pending'`
	if forUpdate {
		q += ` FOR UPDATE OF r`
	}
	var row requestRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, q, subject)
	if errors.Is(err, sql.ErrNoRows) {
		return staff.Request{}, false, nil
	}
	if err != nil {
		return staff.Request{}, false, Translate(err)
	}
	return row.request(), true, nil
}

// UpdateRequest implements staff.RequestStore.
func (s *RequestStore) UpdateRequest(ctx context.Context, r staff.Request) error {
	approvals := r.Approvals
	if approvals == nil {
		approvals = []string{}
	}
	// Only a pending request changes: a second line behind the caller's
	// row lock, as the flows' own tables had.
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE control_requests SET status = $2, approvals = $3::uuid[],
		decided_by = $4, decided_at = $5, note = $6 WHERE id = $1 AND status = 'pending'`,
		r.ID, r.Status, pq.StringArray(approvals), nullUUID(r.DecidedBy), r.DecidedAt, r.Note)
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return emi.ErrRequestClosed.WithDetail("request %s is no longer pending", r.ID)
	}
	return nil
}

// DueRequests implements staff.RequestStore.
func (s *RequestStore) DueRequests(ctx context.Context, now time.Time, limit int) ([]staff.Request, error) {
	var rows []requestRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+requestColumns+`
		FROM control_requests r LEFT JOIN staff_users u ON u.id = r.proposed_by
		WHERE r.status = 'pending' AND r.lapses_at <= $1 ORDER BY r.lapses_at, r.id LIMIT $2
		FOR UPDATE OF r SKIP LOCKED`, now, limit)
	return requests(rows), Translate(err)
}

func requests(rows []requestRow) []staff.Request {
	out := make([]staff.Request, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.request())
	}
	return out
}
