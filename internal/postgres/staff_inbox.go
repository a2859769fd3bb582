package postgres

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

// InboxStore keeps each staff user's inbox of mentions and assignments
// (staff_inbox, migration 00041).
type InboxStore struct{ db *DB }

// NewInboxStore returns the staff inbox's store.
func NewInboxStore(db *DB) *InboxStore { return &InboxStore{db: db} }

var _ staff.InboxStore = (*InboxStore)(nil)

// Notify implements staff.InboxStore.
func (s *InboxStore) Notify(ctx context.Context, it emi.InboxItem) error {
	var by any
	if it.By != "" {
		by = it.By
	}
	// Nobody to tell when the person is not (or no longer) a staff user.
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO staff_inbox (staff_id, kind, href, body, by_staff, created_at)
		SELECT $1::uuid, $2, $3, $4, $5::uuid, $6::timestamptz WHERE EXISTS (SELECT 1 FROM staff_users WHERE id = $1::uuid)`,
		it.StaffID, it.Kind, it.Href, it.Body, by, it.At)
	return Translate(err)
}

// Inbox implements staff.InboxStore: a person's items, newest first.
func (s *InboxStore) Inbox(ctx context.Context, staff string, unreadOnly bool, limit int) ([]emi.InboxItem, error) {
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

// UnreadCount implements staff.InboxStore.
func (s *InboxStore) UnreadCount(ctx context.Context, staff string) (int64, error) {
	var n int64
	if !validUUID(staff) {
		return 0, nil
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM staff_inbox WHERE staff_id = $1 AND read_at IS NULL`, staff)
	return n, Translate(err)
}

// MarkRead implements staff.InboxStore: id 0 marks every item.
func (s *InboxStore) MarkRead(ctx context.Context, staff string, id int64, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE staff_inbox SET read_at = $3
		WHERE staff_id = $1 AND read_at IS NULL AND ($2 = 0 OR id = $2)`, staff, id, at)
	return Translate(err)
}
