package postgres

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

type staffChangeRow struct {
	emi.StaffChange
	RoleList      pq.StringArray `db:"roles"`
	FromRoleList  pq.StringArray `db:"from_roles"`
	PasswordHash  *string        `db:"password_hash"`
	SecondHalfEnc []byte         `db:"second_half_enc"`
}

func (r staffChangeRow) stored() staff.StoredStaffChange {
	c := r.StaffChange
	c.Roles, c.FromRoles = roles(r.RoleList), roles(r.FromRoleList)
	out := staff.StoredStaffChange{StaffChange: c, SecondHalfEnc: r.SecondHalfEnc}
	if r.PasswordHash != nil {
		out.PasswordHash = *r.PasswordHash
	}
	return out
}

const staffChangeSelect = `SELECT id, kind, staff_id, email, name, roles, from_roles, password_hash, second_half_enc,
       status, proposed_by, proposed_at, coalesce(decided_by::text, '') AS decided_by, decided_at, reason
  FROM staff_changes`

// InsertStaffChange stores a proposed change. Returns
// emi.ErrStaffChangePending when the user (or, for a create, the e-mail
// address) already has a pending change.
func (s *StaffStore) InsertStaffChange(ctx context.Context, c staff.StoredStaffChange) error {
	var hash *string
	if c.PasswordHash != "" {
		hash = &c.PasswordHash
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO staff_changes (id, kind, staff_id, email, name, roles, from_roles, password_hash, second_half_enc,
		                            status, proposed_by, proposed_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		c.ID, c.Kind, c.StaffID, c.Email, c.Name, roleList(c.Roles), roleList(c.FromRoles), hash, c.SecondHalfEnc,
		c.Status, c.ProposedBy, c.ProposedAt)
	if UniqueViolation(err, "staff_changes_one_pending") || UniqueViolation(err, "staff_changes_pending_email") {
		return emi.ErrStaffChangePending
	}
	return Translate(err)
}

// StaffChangeForUpdate returns the change and locks it. Returns
// emi.ErrStaffChangeNotFound.
func (s *StaffStore) StaffChangeForUpdate(ctx context.Context, id string) (staff.StoredStaffChange, error) {
	if !validUUID(id) {
		return staff.StoredStaffChange{}, emi.ErrStaffChangeNotFound
	}
	var r staffChangeRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, staffChangeSelect+` WHERE id = $1 FOR UPDATE`, id); err != nil {
		return staff.StoredStaffChange{}, NotFound(err, emi.ErrStaffChangeNotFound)
	}
	return r.stored(), nil
}

// ListStaffChanges returns the pending changes, oldest first, and the 50
// latest decided ones.
func (s *StaffStore) ListStaffChanges(ctx context.Context) ([]emi.StaffChange, error) {
	return s.selectStaffChanges(ctx,
		`(`+staffChangeSelect+` WHERE status = 'pending' ORDER BY proposed_at)
		 UNION ALL
		 (`+staffChangeSelect+` WHERE status <> 'pending' ORDER BY decided_at DESC LIMIT 50)`)
}

// selectStaffChanges runs a query of staffChangeSelect's columns and
// returns the changes without their secrets.
func (s *StaffStore) selectStaffChanges(ctx context.Context, query string, args ...any) ([]emi.StaffChange, error) {
	var rows []staffChangeRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, query, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.StaffChange, len(rows))
	for i, r := range rows {
		out[i] = r.stored().StaffChange
	}
	return out, nil
}

// DecideStaffChange marks a pending change applied or rejected and clears
// its secrets.
func (s *StaffStore) DecideStaffChange(ctx context.Context, id string, status emi.StaffChangeStatus, by string, at time.Time, reason string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_changes SET status = $2, decided_by = $3, decided_at = $4, reason = $5,
		        password_hash = NULL, second_half_enc = NULL
		  WHERE id = $1 AND status = 'pending'`, id, status, by, at, reason)
	return Translate(err)
}

// DeleteLapsedStaffChanges deletes up to limit pending changes proposed
// before the cutoff, oldest first, skipping the rows another transaction
// has locked (an approval or rejection under way), and returns them
// (without their secrets, which go with the rows).
func (s *StaffStore) DeleteLapsedStaffChanges(ctx context.Context, proposedBefore time.Time, limit int) ([]emi.StaffChange, error) {
	return s.selectStaffChanges(ctx, `
		WITH gone AS (
		  DELETE FROM staff_changes WHERE status = 'pending' AND id IN (
		    SELECT id FROM staff_changes WHERE status = 'pending' AND proposed_at < $1
		     ORDER BY proposed_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		  RETURNING *)
		SELECT id, kind, staff_id, email, name, roles, from_roles, NULL::text AS password_hash, NULL::bytea AS second_half_enc,
		       status, proposed_by, proposed_at, '' AS decided_by, decided_at, reason
		  FROM gone ORDER BY proposed_at`, proposedBefore, limit)
}
