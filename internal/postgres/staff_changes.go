package postgres

import (
	"context"

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

// staffChangeSelect reads changes with their lifecycle
// (control_requests): an approved request is an applied change.
const staffChangeSelect = `SELECT c.id, c.kind, c.staff_id, c.email, c.name, c.roles, c.from_roles, c.password_hash, c.second_half_enc,
       CASE r.status WHEN 'approved' THEN 'applied' ELSE r.status END AS status, r.proposed_by, r.proposed_at,
       coalesce(r.decided_by::text, '') AS decided_by, r.decided_at, r.note AS reason
  FROM staff_changes c JOIN control_requests r ON r.id = c.id`

// InsertStaffChange implements staff.StaffStore: what the request c.ID
// proposes.
func (s *StaffStore) InsertStaffChange(ctx context.Context, c staff.StoredStaffChange) error {
	var hash *string
	if c.PasswordHash != "" {
		hash = &c.PasswordHash
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO staff_changes (id, kind, staff_id, email, name, roles, from_roles, password_hash, second_half_enc)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		c.ID, c.Kind, c.StaffID, c.Email, c.Name, roleList(c.Roles), roleList(c.FromRoles), hash, c.SecondHalfEnc)
	return Translate(err)
}

// StaffChange implements staff.StaffStore. Returns
// emi.ErrStaffChangeNotFound.
func (s *StaffStore) StaffChange(ctx context.Context, id string, forUpdate bool) (staff.StoredStaffChange, error) {
	if !validUUID(id) {
		return staff.StoredStaffChange{}, emi.ErrStaffChangeNotFound
	}
	q := staffChangeSelect + ` WHERE c.id = $1`
	if forUpdate {
		q += ` FOR UPDATE OF c`
	}
	var r staffChangeRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, id); err != nil {
		return staff.StoredStaffChange{}, NotFound(err, emi.ErrStaffChangeNotFound)
	}
	return r.stored(), nil
}

// ListStaffChanges returns the pending changes, oldest first, and the 50
// latest decided ones.
func (s *StaffStore) ListStaffChanges(ctx context.Context) ([]emi.StaffChange, error) {
	var rows []staffChangeRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows,
		`(`+staffChangeSelect+` WHERE r.status = 'pending' ORDER BY r.proposed_at)
		 UNION ALL
		 (`+staffChangeSelect+` WHERE r.status <> 'pending' ORDER BY r.decided_at DESC LIMIT 50)`); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.StaffChange, len(rows))
	for i, r := range rows {
		out[i] = r.stored().StaffChange
	}
	return out, nil
}
