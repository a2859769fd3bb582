package postgres

import (
	"context"
	"database/sql"
	"net/netip"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/staff"
)

// StaffStore implements staff.StaffStore: staff users, their second
// factors, sign-in attempts, and the revocation of their sessions.
type StaffStore struct {
	db *DB
}

// NewStaffStore returns the staff store.
func NewStaffStore(db *DB) *StaffStore { return &StaffStore{db: db} }

var (
	_ staff.StaffStore     = (*StaffStore)(nil)
	_ staff.StaffLinkStore = (*StaffStore)(nil)
	// The review names the underwriters through it.
	_ onboarding.StaffDirectory = (*StaffStore)(nil)
)

type staffRow struct {
	emi.StaffUser
	RoleList          pq.StringArray `db:"roles"`
	PasswordHash      string         `db:"password_hash"`
	TOTPSecretEnc     []byte         `db:"totp_secret_enc"`
	TOTPLastStep      int64          `db:"totp_last_step"`
	FailedAttempts    int            `db:"failed_attempts"`
	DisabledAt        *time.Time     `db:"disabled_at"`
	SessionsRevokedAt *time.Time     `db:"sessions_revoked_at"`
}

func (r staffRow) stored() staff.StoredStaff {
	u := r.StaffUser
	u.Roles = roles(r.RoleList)
	return staff.StoredStaff{
		StaffUser: u, PasswordHash: r.PasswordHash, TOTPSecretEnc: r.TOTPSecretEnc, TOTPLastStep: r.TOTPLastStep,
		FailedAttempts: r.FailedAttempts, DisabledAt: r.DisabledAt, SessionsRevokedAt: r.SessionsRevokedAt,
	}
}

func roles(list []string) []emi.Role {
	out := make([]emi.Role, len(list))
	for i, r := range list {
		out[i] = emi.Role(r)
	}
	return out
}

func roleList(rs []emi.Role) pq.StringArray {
	out := make(pq.StringArray, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

const staffColumns = `s.id, s.email, s.name, s.roles, s.totp_enrolled_at IS NOT NULL AS totp_enrolled,
       s.disabled_at IS NOT NULL AS disabled, s.locked_until, s.created_at, s.last_sign_in_at, s.password_set_at,
       s.password_temporary, s.privilege_ended_at, s.suspended_at, coalesce(s.suspended_by::text, '') AS suspended_by,
       s.suspension_reason, coalesce(s.suspension_confirmed_by::text, '') AS suspension_confirmed_by,
       (SELECT count(*) FROM staff_recovery_codes c WHERE c.staff_id = s.id AND c.used_at IS NULL) AS recovery_codes_left`

const staffSelect = `SELECT ` + staffColumns + `, s.password_hash, s.totp_secret_enc, s.totp_last_step,
       s.failed_attempts, s.disabled_at, s.sessions_revoked_at
  FROM staff_users s`

// InsertStaff inserts u. Returns emi.ErrDuplicateStaff when the e-mail
// address is taken, in any case.
func (s *StaffStore) InsertStaff(ctx context.Context, u staff.StoredStaff) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO staff_users (id, email, name, password_hash, password_temporary, roles, password_set_at, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		u.ID, u.Email, u.Name, u.PasswordHash, u.PasswordTemporary, roleList(u.Roles), u.PasswordSetAt, u.CreatedAt)
	if UniqueViolation(err, "staff_users_email_lower") {
		return emi.ErrDuplicateStaff.Field("email", "is already taken")
	}
	return Translate(err)
}

func (s *StaffStore) one(ctx context.Context, where string, arg any) (staff.StoredStaff, error) {
	var r staffRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, staffSelect+` WHERE `+where, arg); err != nil {
		return staff.StoredStaff{}, NotFound(err, emi.ErrStaffNotFound)
	}
	return r.stored(), nil
}

// StaffByID returns the user with id. Returns emi.ErrStaffNotFound.
func (s *StaffStore) StaffByID(ctx context.Context, id string) (staff.StoredStaff, error) {
	if !validUUID(id) {
		return staff.StoredStaff{}, emi.ErrStaffNotFound
	}
	return s.one(ctx, `s.id = $1`, id)
}

// StaffForUpdate returns the user with id and locks its row. Returns
// emi.ErrStaffNotFound.
func (s *StaffStore) StaffForUpdate(ctx context.Context, id string) (staff.StoredStaff, error) {
	if !validUUID(id) {
		return staff.StoredStaff{}, emi.ErrStaffNotFound
	}
	return s.one(ctx, `s.id = $1 FOR UPDATE OF s`, id)
}

// StaffByEmail returns the user with that e-mail address, compared
// case-insensitively (through the unique index on lower(email)). Returns
// emi.ErrStaffNotFound.
func (s *StaffStore) StaffByEmail(ctx context.Context, email string) (staff.StoredStaff, error) {
	return s.one(ctx, `lower(s.email) = lower($1)`, email)
}

// ListStaff returns every staff user, ordered by e-mail address.
func (s *StaffStore) ListStaff(ctx context.Context) ([]emi.StaffUser, error) {
	var rows []staffRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, staffSelect+` ORDER BY lower(s.email)`)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.StaffUser, len(rows))
	for i, r := range rows {
		out[i] = r.stored().StaffUser
	}
	return out, nil
}

// UpdateStaffRoles replaces the user's roles; privilegeEndedAt, when not
// nil, is recorded as the time the user lost a privileged role.
func (s *StaffStore) UpdateStaffRoles(ctx context.Context, id string, rs []emi.Role, privilegeEndedAt *time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET roles = $2, privilege_ended_at = coalesce($3, privilege_ended_at) WHERE id = $1`,
		id, roleList(rs), privilegeEndedAt)
	return Translate(err)
}

// AdministratorsForUpdate returns the users holding the admin role and
// locks their rows, in id order (two transactions that both lock them
// queue instead of deadlocking).
func (s *StaffStore) AdministratorsForUpdate(ctx context.Context) ([]staff.StoredStaff, error) {
	var rows []staffRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, staffSelect+` WHERE 'admin' = ANY (s.roles) ORDER BY s.id FOR UPDATE OF s`)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]staff.StoredStaff, len(rows))
	for i, r := range rows {
		out[i] = r.stored()
	}
	return out, nil
}

// SetStaffSuspension records a suspension of the user (at, by, reason),
// or clears it (at nil) with its confirmation.
func (s *StaffStore) SetStaffSuspension(ctx context.Context, id string, at *time.Time, by, reason string) error {
	q := `UPDATE staff_users SET suspended_at = $2, suspended_by = $3::uuid, suspension_reason = $4, suspension_confirmed_by = NULL
	       WHERE id = $1`
	var byArg any = by
	if at == nil {
		byArg, reason = nil, ""
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, q, id, at, byArg, reason)
	return Translate(err)
}

// ConfirmStaffSuspension records who confirmed the user's suspension.
func (s *StaffStore) ConfirmStaffSuspension(ctx context.Context, id, by string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET suspension_confirmed_by = $2::uuid WHERE id = $1 AND suspended_at IS NOT NULL`, id, by)
	return Translate(err)
}

// UpdateStaffPassword stores a new password hash; setAt nil keeps
// password_set_at (a re-hash of the same password).
func (s *StaffStore) UpdateStaffPassword(ctx context.Context, id, hash string, temporary bool, setAt *time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET password_hash = $2, password_temporary = $3, password_set_at = coalesce($4, password_set_at)
		  WHERE id = $1`, id, hash, temporary, setAt)
	return Translate(err)
}

// SetStaffDisabled disables the user at at, or enables it and clears a
// lockout when at is nil.
func (s *StaffStore) SetStaffDisabled(ctx context.Context, id string, at *time.Time) error {
	q := `UPDATE staff_users SET disabled_at = $2 WHERE id = $1`
	if at == nil {
		q = `UPDATE staff_users SET disabled_at = $2, failed_attempts = 0, locked_until = NULL WHERE id = $1`
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, q, id, at)
	return Translate(err)
}

// RevokeStaffSessions records the revocation time (Current refuses sessions
// signed in before it) and deletes the user's session rows.
func (s *StaffStore) RevokeStaffSessions(ctx context.Context, id string, at time.Time) error {
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE staff_users SET sessions_revoked_at = $2 WHERE id = $1`, id, at); err != nil {
		return Translate(err)
	}
	_, err := deleteStaffSessions(ctx, s.db.Ext(ctx), id)
	return err
}

// SetPendingTOTP stores a pending secret; false when the user is enrolled.
func (s *StaffStore) SetPendingTOTP(ctx context.Context, id string, secretEnc []byte) (bool, error) {
	return affected(s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET totp_secret_enc = $2 WHERE id = $1 AND totp_enrolled_at IS NULL`, id, secretEnc))
}

// ConfirmTOTP marks the pending secret enrolled and step used; false when
// there is no pending secret.
func (s *StaffStore) ConfirmTOTP(ctx context.Context, id string, step int64, at time.Time) (bool, error) {
	return affected(s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET totp_enrolled_at = $3, totp_last_step = greatest(totp_last_step, $2)
		  WHERE id = $1 AND totp_enrolled_at IS NULL AND totp_secret_enc IS NOT NULL`, id, step, at))
}

// EnrollTOTP stores secretEnc as enrolled at once.
func (s *StaffStore) EnrollTOTP(ctx context.Context, id string, secretEnc []byte, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET totp_secret_enc = $2, totp_enrolled_at = $3, totp_last_step = 0 WHERE id = $1`, id, secretEnc, at)
	return Translate(err)
}

// ConsumeTOTPStep marks step used if it is newer than the last used one. The
// row lock taken by the UPDATE serialises concurrent calls: the second one
// re-evaluates the condition against the committed step and matches nothing.
func (s *StaffStore) ConsumeTOTPStep(ctx context.Context, id string, step int64) (bool, error) {
	return affected(s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET totp_last_step = $2
		  WHERE id = $1 AND totp_last_step < $2 AND totp_enrolled_at IS NOT NULL`, id, step))
}

// ClearTOTP removes the TOTP secret and the recovery codes.
func (s *StaffStore) ClearTOTP(ctx context.Context, id string) error {
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM staff_recovery_codes WHERE staff_id = $1`, id); err != nil {
		return Translate(err)
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET totp_secret_enc = NULL, totp_enrolled_at = NULL, totp_last_step = 0 WHERE id = $1`, id)
	return Translate(err)
}

// ReplaceRecoveryCodes deletes the user's codes and inserts the new hashes.
func (s *StaffStore) ReplaceRecoveryCodes(ctx context.Context, id string, hashes [][]byte, at time.Time) error {
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM staff_recovery_codes WHERE staff_id = $1`, id); err != nil {
		return Translate(err)
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO staff_recovery_codes (staff_id, code_hash, created_at)
		 SELECT $1, h, $3 FROM unnest($2::bytea[]) AS h`, id, pq.ByteaArray(hashes), at)
	return Translate(err)
}

// UseRecoveryCode marks the unused code with that hash used; false when
// there is none.
func (s *StaffStore) UseRecoveryCode(ctx context.Context, id string, hash []byte, at time.Time) (bool, error) {
	return affected(s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_recovery_codes SET used_at = $3 WHERE staff_id = $1 AND code_hash = $2 AND used_at IS NULL`, id, hash, at))
}

// InsertSignInAttempt records one attempt.
func (s *StaffStore) InsertSignInAttempt(ctx context.Context, a staff.SignInAttempt) error {
	var staffID, ip *string
	if a.StaffID != "" {
		staffID = &a.StaffID
	}
	if a.IP.IsValid() {
		v := a.IP.String()
		ip = &v
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO signin_attempts (email_lookup, staff_id, ip, at, success, reason) VALUES ($1, $2, $3, $4, $5, $6)`,
		a.EmailLookup, staffID, ip, a.At, a.Success, a.Reason)
	return Translate(err)
}

// CountSignInFailures counts failed, not throttled attempts since the given
// time, for the e-mail lookup and for the IP.
func (s *StaffStore) CountSignInFailures(ctx context.Context, emailLookup string, ip netip.Addr, since time.Time) (int, int, error) {
	var ipArg *string
	if ip.IsValid() {
		v := ip.String()
		ipArg = &v
	}
	var n struct {
		ByEmail int `db:"by_email"`
		ByIP    int `db:"by_ip"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n,
		`SELECT count(*) FILTER (WHERE email_lookup = $1) AS by_email,
		        count(*) FILTER (WHERE ip = $2::inet) AS by_ip
		   FROM signin_attempts
		  WHERE NOT success AND reason <> 'throttled' AND at > $3
		    AND (email_lookup = $1 OR ip = $2::inet)`, emailLookup, ipArg, since)
	return n.ByEmail, n.ByIP, Translate(err)
}

// RecordSignInFailure adds one consecutive failure in one statement (so
// concurrent failures all count); the failure that reaches threshold locks
// the user until lockUntil and restarts the count.
func (s *StaffStore) RecordSignInFailure(ctx context.Context, id string, threshold int, lockUntil time.Time) (bool, error) {
	var lockedNow bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &lockedNow,
		`UPDATE staff_users
		    SET failed_attempts = CASE WHEN failed_attempts + 1 >= $2 THEN 0 ELSE failed_attempts + 1 END,
		        locked_until = CASE WHEN failed_attempts + 1 >= $2 THEN $3 ELSE locked_until END
		  WHERE id = $1
		  RETURNING locked_until IS NOT DISTINCT FROM $3::timestamptz`, id, threshold, lockUntil)
	return lockedNow, NotFound(err, emi.ErrStaffNotFound)
}

// RecordSignInSuccess clears failures and lockout and sets last_sign_in_at.
func (s *StaffStore) RecordSignInSuccess(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE staff_users SET failed_attempts = 0, locked_until = NULL, last_sign_in_at = $2 WHERE id = $1`, id, at)
	return Translate(err)
}

// ClearLockout clears failures and lockout.
func (s *StaffStore) ClearLockout(ctx context.Context, id string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE staff_users SET failed_attempts = 0, locked_until = NULL WHERE id = $1`, id)
	return Translate(err)
}

// PruneSignInAttempts deletes attempts made before the cutoff.
func (s *StaffStore) PruneSignInAttempts(ctx context.Context, before time.Time) (int64, error) {
	return rowsAffected(s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM signin_attempts WHERE at < $1`, before))
}

// DeleteExpiredSessions deletes sessions that expired at or before now.
func (s *StaffStore) DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error) {
	return deleteExpiredSessions(ctx, s.db.Ext(ctx), now)
}

// affected reports whether the statement changed at least one row.
func affected(res sql.Result, err error) (bool, error) {
	n, err := rowsAffected(res, err)
	return n > 0, err
}

// rowsAffected returns how many rows the statement changed.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	return n, Translate(err)
}

// StaffControllers implements staff.StaffLinkStore from the audit log
// (who created, reset, changed the roles of, disabled or suspended whom),
// which is append-only (its triggers refuse UPDATE and DELETE), so a link
// cannot be erased by the people it links. Uses audit_log_resource. A
// change two administrators took (proposed by one, approved by the other)
// is one audit row by the approver that names the proposer in
// changes.proposed_by: both are linked.
func (s *StaffStore) StaffControllers(ctx context.Context, ids []string, since time.Time) (map[string][]string, error) {
	var rows []struct {
		Subject string `db:"resource_token"`
		Actor   string `db:"actor_id"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows,
		`SELECT DISTINCT resource_token, actor_id FROM (
		   SELECT resource_token, unnest(ARRAY[actor_id, changes->>'proposed_by']) AS actor_id FROM audit_log
		    WHERE resource_type = 'staff_user' AND resource_token = ANY($1) AND at >= $2
		      AND actor_type = 'staff' AND outcome = 'success'
		      AND action IN ('staff.create', 'staff.reset_credentials', 'staff.set_roles', 'staff.disable', 'staff.suspend')) l
		  WHERE actor_id IS NOT NULL AND actor_id <> resource_token`, pq.Array(ids), since)
	if err != nil {
		return nil, Translate(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.Subject] = append(out[r.Subject], r.Actor)
	}
	return out, nil
}
