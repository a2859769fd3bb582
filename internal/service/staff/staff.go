package staff

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/validate"
)

// SessionStaffKey is the key under which the back office keeps the signed-in
// staff user's id (a string) in its scs session. The session store reads it
// whenever a session is saved and tags the session row with it, so that
// revoking a user's sessions can delete every one of them.
const SessionStaffKey = "staff_id"

// StaffStore keeps staff users, their second factors, sign-in attempts and
// the back-office sessions tagged with them. Every method runs on the
// transaction in ctx when there is one.
type StaffStore interface {
	// InsertStaff inserts u. Returns emi.ErrDuplicateStaff when another user
	// has the same e-mail address, whatever its case.
	InsertStaff(ctx context.Context, u StoredStaff) error
	// StaffByID returns the user. Returns emi.ErrStaffNotFound.
	StaffByID(ctx context.Context, id string) (StoredStaff, error)
	// StaffForUpdate returns the user and locks its row for the
	// transaction. Returns emi.ErrStaffNotFound.
	StaffForUpdate(ctx context.Context, id string) (StoredStaff, error)
	// StaffByEmail finds a user by e-mail address, case-insensitively.
	// Returns emi.ErrStaffNotFound.
	StaffByEmail(ctx context.Context, email string) (StoredStaff, error)
	// ListStaff returns every user ordered by e-mail address.
	ListStaff(ctx context.Context) ([]emi.StaffUser, error)

	// InsertStaffChange stores what the request c.ID proposes.
	InsertStaffChange(ctx context.Context, c StoredStaffChange) error
	// StaffChange returns a change with its secrets (empty once decided);
	// forUpdate locks it. Returns emi.ErrStaffChangeNotFound.
	StaffChange(ctx context.Context, id string, forUpdate bool) (StoredStaffChange, error)
	// ListStaffChanges returns the pending changes and the latest decided.
	ListStaffChanges(ctx context.Context) ([]emi.StaffChange, error)

	// UpdateStaffRoles replaces the roles; privilegeEndedAt, when not nil,
	// records that the user lost a privileged role then.
	UpdateStaffRoles(ctx context.Context, id string, roles []emi.Role, privilegeEndedAt *time.Time) error
	// AdministratorsForUpdate returns the holders of the admin role,
	// locked, in id order.
	AdministratorsForUpdate(ctx context.Context) ([]StoredStaff, error)
	// SetStaffSuspension records a suspension (at, by, reason) or clears
	// it and its confirmation (at nil).
	SetStaffSuspension(ctx context.Context, id string, at *time.Time, by, reason string) error
	// ConfirmStaffSuspension records the second administrator's
	// confirmation of the user's suspension.
	ConfirmStaffSuspension(ctx context.Context, id, by string) error
	// UpdateStaffPassword stores a new hash. setAt is nil when only the
	// hash's parameters change (the password stays the same).
	UpdateStaffPassword(ctx context.Context, id, hash string, temporary bool, setAt *time.Time) error
	// SetStaffDisabled disables the user at the given time, or enables it
	// (and clears a lockout) when at is nil.
	SetStaffDisabled(ctx context.Context, id string, at *time.Time) error
	// RevokeStaffSessions sets sessions_revoked_at and deletes every session
	// row tagged with the user.
	RevokeStaffSessions(ctx context.Context, id string, at time.Time) error

	// SetPendingTOTP stores a new, not yet confirmed TOTP secret. Returns
	// false when the user has a confirmed one.
	SetPendingTOTP(ctx context.Context, id string, secretEnc []byte) (bool, error)
	// ConfirmTOTP marks the pending secret as enrolled and step as used.
	// Returns false when there is no pending secret.
	ConfirmTOTP(ctx context.Context, id string, step int64, at time.Time) (bool, error)
	// EnrollTOTP stores a secret as enrolled at once (sandbox users).
	EnrollTOTP(ctx context.Context, id string, secretEnc []byte, at time.Time) error
	// ConsumeTOTPStep records step as used, only if it is newer than the
	// last used step; it returns false otherwise. This one statement is what
	// makes each code usable once, also under concurrent requests.
	ConsumeTOTPStep(ctx context.Context, id string, step int64) (bool, error)
	// ClearTOTP removes the secret and every recovery code.
	ClearTOTP(ctx context.Context, id string) error
	// ReplaceRecoveryCodes deletes the user's recovery codes and stores
	// these hashes instead.
	ReplaceRecoveryCodes(ctx context.Context, id string, hashes [][]byte, at time.Time) error
	// UseRecoveryCode marks the unused code with that hash as used; it
	// returns false when there is no such unused code.
	UseRecoveryCode(ctx context.Context, id string, hash []byte, at time.Time) (bool, error)

	// InsertSignInAttempt records one attempt.
	InsertSignInAttempt(ctx context.Context, a SignInAttempt) error
	// CountSignInFailures counts the failed, not throttled attempts since
	// the given time for the e-mail lookup and for the IP (0 when ip is not
	// valid).
	CountSignInFailures(ctx context.Context, emailLookup string, ip netip.Addr, since time.Time) (byEmail, byIP int, err error)
	// RecordSignInFailure adds one consecutive failure; when the count
	// reaches threshold it locks the user until lockUntil and starts the
	// count again. It returns whether this failure locked the user.
	RecordSignInFailure(ctx context.Context, id string, threshold int, lockUntil time.Time) (locked bool, err error)
	// RecordSignInSuccess clears the failure count and the lockout and sets
	// last_sign_in_at.
	RecordSignInSuccess(ctx context.Context, id string, at time.Time) error
	// ClearLockout clears the failure count and the lockout.
	ClearLockout(ctx context.Context, id string) error

	// PruneSignInAttempts deletes attempts made before the cutoff.
	PruneSignInAttempts(ctx context.Context, before time.Time) (int64, error)
	// DeleteExpiredSessions deletes sessions that expired at or before now.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error)
}

// StoredStaff is a staff user as stored: the public view plus the secrets
// and counters that never leave the service.
type StoredStaff struct {
	emi.StaffUser
	PasswordHash      string
	TOTPSecretEnc     []byte
	TOTPLastStep      int64
	FailedAttempts    int
	DisabledAt        *time.Time
	SessionsRevokedAt *time.Time
}

// SignInAttempt is one row of the sign-in attempt log.
type SignInAttempt struct {
	EmailLookup string
	StaffID     string // empty when no such user
	IP          netip.Addr
	At          time.Time
	Success     bool
	Reason      string
}

// Reasons recorded with sign-in attempts.
const (
	reasonPassword      = "password"          // first factor passed
	reasonTOTP          = "totp"              // second factor passed
	reasonRecoveryCode  = "recovery_code"     // second factor passed with a recovery code
	reasonEnrolled      = "totp_enrolled"     // first TOTP code confirmed the enrolment
	reasonBadPassword   = "bad_password"      // known e-mail address, wrong password
	reasonUnknownEmail  = "unknown_email"     // told apart here and in the audit log, never to the client
	reasonDisabled      = "disabled"          // right or wrong password, account disabled
	reasonSuspended     = "suspended"         // right or wrong password, a suspension in force
	reasonLocked        = "locked"            // right or wrong password, account locked
	reasonBadTOTP       = "bad_totp"          // wrong or reused TOTP code
	reasonBadRecovery   = "bad_recovery"      // wrong or used recovery code
	reasonBadCurrentPwd = "bad_current_pw"    // #nosec G101 -- an audit reason label, not a credential; wrong current password when changing it
	reasonThrottled     = "throttled"         // refused before any check; does not count
	reasonTempExpired   = "temporary_expired" // right temporary password, older than emi.TemporaryPasswordTTL
)

// StaffConfig holds the staff rules that come from configuration.
type StaffConfig struct {
	// Sandbox allows the sandbox-only operations: seeding the demo users
	// and reading a user's current TOTP code.
	Sandbox bool
	// Issuer names the service in authenticator apps ("emi" when empty).
	Issuer string
	// Limits makes sign-in throttling atomic: each attempt takes a slot per
	// address and per IP before it is evaluated (see Staff.throttle).
	// Without it the throttle only counts recorded failures, which a
	// concurrent burst gets past.
	Limits kernel.RateLimiter
	// PasswordCost is the argon2id cost of new hashes (the zero value is
	// the standard one; see PasswordCostTestFixture).
	PasswordCost PasswordCost
}

// Sign-in throttling and lockout (PCI DSS 8.3.4; ASVS 6.3.1).
const (
	// ThrottleWindow is the period over which failures are counted.
	ThrottleWindow = 15 * time.Minute
	// MaxAccountFailures failed attempts for one e-mail address within
	// ThrottleWindow make further attempts for it wait.
	MaxAccountFailures = 5
	// MaxIPFailures failed attempts from one IP address within
	// ThrottleWindow make further attempts from it wait.
	MaxIPFailures = 20
	// LockoutThreshold consecutive failures lock the account.
	LockoutThreshold = 10
	// LockoutDuration is how long a locked account stays locked.
	LockoutDuration = 30 * time.Minute
	// signInAttemptRetention is how long attempt rows are kept (the audit
	// log keeps the permanent record).
	signInAttemptRetention = 7 * 24 * time.Hour
)

// Staff manages back-office users: accounts and roles, passwords, TOTP
// second factor and recovery codes, sign-in throttling and lockout, and the
// revocation of their sessions.
type Staff struct {
	controls *Controls
	inbox    *Inbox
	tx       kernel.TxRunner
	store    StaffStore
	sealer   kernel.Sealer
	audit    *kernel.Auditor
	validate *validate.Validator
	cfg      StaffConfig
	now      kernel.Clock
	policy   *passwordPolicy

	// dummyHash is verified when an e-mail address is unknown, so that the
	// answer takes as long as for a wrong password. It is made at the first
	// use, with the current parameters, from a password nobody knows.
	dummyOnce sync.Once
	dummyHash string
	dummyErr  error
}

// StaffDeps is what Staff needs; NewStaff checks that none is nil.
type StaffDeps struct {
	Tx       kernel.TxRunner
	Store    StaffStore
	Sealer   kernel.Sealer
	Audit    *kernel.Auditor
	Validate *validate.Validator
	Controls *Controls
	// Inbox tells the other administrators of a suspension.
	Inbox  *Inbox
	Config StaffConfig
	Now    kernel.Clock
}

// NewStaff returns the staff service. It loads the common-password list.
// controls approves the privileged staff changes (a second administrator).
func NewStaff(d StaffDeps) *Staff {
	kernel.MustHave("Staff", d)
	if d.Config.Issuer == "" {
		d.Config.Issuer = "emi"
	}
	return &Staff{tx: d.Tx, store: d.Store, sealer: d.Sealer, audit: d.Audit, validate: d.Validate, controls: d.Controls, inbox: d.Inbox, cfg: d.Config, now: d.Now,
		policy: newPasswordPolicy()}
}

// TOTPSecretContext binds a staff user's sealed TOTP secret to its row.
func TOTPSecretContext(staffID string) string { return "staff_users.totp:" + staffID }

// emailLookup is the form of an e-mail address used for lookups and
// throttling.
func emailLookup(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// staffPrincipal returns the principal of u, for audit rows written on its
// behalf before it has a session.
func staffPrincipal(u emi.StaffUser) emi.Principal {
	roles := make([]string, len(u.Roles))
	for i, r := range u.Roles {
		roles[i] = string(r)
	}
	return emi.Principal{Type: emi.ActorStaff, ActorID: u.ID, StaffRoles: roles}
}

// isSelf reports whether the principal in ctx is the staff user id.
func isSelf(ctx context.Context, id string) bool {
	p, ok := emi.PrincipalFrom(ctx)
	return ok && p.Type == emi.ActorStaff && p.ActorID == id && id != ""
}

// authorize returns nil when the principal in ctx may do perm (or is the
// staff user self, when self is not empty). Otherwise it records a denied
// audit row (ASVS 16.3.2) and returns emi.ErrForbidden.
func (s *Staff) authorize(ctx context.Context, perm emi.Permission, self, action, resource string) error {
	p, ok := emi.PrincipalFrom(ctx)
	if ok && p.Can(perm) {
		return nil
	}
	if self != "" && isSelf(ctx, self) {
		return nil
	}
	s.deny(ctx, action, resource, "missing permission "+string(perm))
	return emi.NewOp(string(perm), perm).Refusal().WithDetail("%s needs %s", action, perm)
}

// manageOther authorizes an administrator's action on another staff user:
// emi.PermManageStaff, and never on oneself (emi.ErrForbidden, with a
// denied audit row either way).
func (s *Staff) manageOther(ctx context.Context, action, staffID string) error {
	if err := s.authorize(ctx, emi.PermManageStaff, "", action, staffID); err != nil {
		return err
	}
	if isSelf(ctx, staffID) {
		s.deny(ctx, action, staffID, "own account")
		return emi.ErrForbidden.WithDetail("%s of oneself", action)
	}
	return nil
}

// deny records a refused action. A failure to write it is not reported: the
// caller is refusing anyway.
func (s *Staff) deny(ctx context.Context, action, resource, why string) {
	_ = s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "staff_user", ResourceToken: resource,
		Outcome: emi.OutcomeDenied, Changes: map[string]any{"reason": why}})
}

// normalizeRoles drops duplicates and orders roles as emi.Roles does.
func normalizeRoles(in []emi.Role) []emi.Role {
	out := make([]emi.Role, 0, len(in))
	for _, r := range emi.Roles() {
		if slices.Contains(in, r) {
			out = append(out, r)
		}
	}
	return out
}

// prepare validates in and returns the new user and its password hash.
func (s *Staff) prepare(in emi.StaffCreate) (emi.StaffUser, string, error) {
	in.Email = strings.TrimSpace(in.Email)
	in.Name = strings.TrimSpace(in.Name)
	if err := s.validate.Struct(in, emi.ErrStaffValidation); err != nil {
		return emi.StaffUser{}, "", err
	}
	if err := s.policy.check(in.Password, in.Email); err != nil {
		return emi.StaffUser{}, "", err
	}
	hash, err := s.cfg.PasswordCost.hashPassword(in.Password)
	if err != nil {
		return emi.StaffUser{}, "", err
	}
	now := s.now().UTC()
	return emi.StaffUser{
		ID: kernel.NewToken(), Email: in.Email, Name: in.Name, Roles: normalizeRoles(in.Roles),
		CreatedAt: now, PasswordSetAt: now,
	}, hash, nil
}

// List returns every staff user. Needs emi.PermViewStaff (else
// emi.ErrForbidden).
func (s *Staff) List(ctx context.Context) ([]emi.StaffUser, error) {
	if err := s.authorize(ctx, emi.PermViewStaff, "", "staff.list", ""); err != nil {
		return nil, err
	}
	list, err := s.store.ListStaff(ctx)
	now := s.now()
	for i := range list {
		list[i] = withSuspension(list[i], now)
	}
	return list, err
}

// Names returns every staff member's name by id, for any staff member: the
// back office names colleagues wherever it shows who did something (a bare
// id means nothing to a colleague), also to roles that may not open the
// staff pages. Returns emi.ErrForbidden for a principal that is not staff.
func (s *Staff) Names(ctx context.Context) (map[string]string, error) {
	if err := ViewDashboard.Require(ctx); err != nil {
		return nil, err
	}
	list, err := s.store.ListStaff(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, u := range list {
		out[u.ID] = u.Name
	}
	return out, nil
}

// Get returns one staff user. Needs emi.PermViewStaff, or to be that user
// (else emi.ErrForbidden, checked before the lookup). Returns
// emi.ErrStaffNotFound.
func (s *Staff) Get(ctx context.Context, id string) (emi.StaffUser, error) {
	if err := s.authorize(ctx, emi.PermViewStaff, id, "staff.view", id); err != nil {
		return emi.StaffUser{}, err
	}
	u, err := s.store.StaffByID(ctx, id)
	return withSuspension(u.StaffUser, s.now()), err
}

// Current returns the signed-in user for the back office, on every request:
// staffID and signedInAt are what the session holds (signedInAt is the time,
// by this service's clock, at which the sign-in completed). Returns
// emi.ErrSessionExpired when the user no longer exists, is disabled, or had
// its sessions revoked at or after signedInAt (role change, credential
// reset, disable, "sign out everywhere"). The portal then destroys the
// session. Current needs no principal and writes no audit row.
func (s *Staff) Current(ctx context.Context, staffID string, signedInAt time.Time) (emi.StaffUser, error) {
	u, err := s.store.StaffByID(ctx, staffID)
	if errors.Is(err, emi.ErrStaffNotFound) {
		return emi.StaffUser{}, emi.ErrSessionExpired.WithDetail("unknown staff user")
	}
	if err != nil {
		return emi.StaffUser{}, err
	}
	if u.DisabledAt != nil {
		return emi.StaffUser{}, emi.ErrSessionExpired.WithDetail("staff user disabled")
	}
	if suspendedAt(u.StaffUser, s.now()) {
		return emi.StaffUser{}, emi.ErrSessionExpired.WithDetail("staff user suspended")
	}
	if u.SessionsRevokedAt != nil && !signedInAt.After(*u.SessionsRevokedAt) {
		return emi.StaffUser{}, emi.ErrSessionExpired.WithDetail("sessions revoked")
	}
	return u.StaffUser, nil
}

// Disable makes a staff user unable to sign in and ends its sessions
// (ASVS 7.4.2). Needs emi.PermManageStaff (else emi.ErrForbidden); nobody
// disables themselves (emi.ErrForbidden). Disabling a disabled user changes
// nothing. When an administrator disables a user who holds a privileged
// role or held one in the last StaffLinkWindow, the change is pending
// (the outcome's Change) until a second administrator approves it
// (ControlStaffPrivilegeRemoval): one administrator alone cannot take the
// others out. Suspend is the one-step stop for an incident. Returns
// emi.ErrStaffNotFound and emi.ErrStaffChangePending.
func (s *Staff) Disable(ctx context.Context, staffID string) (emi.StaffOutcome, error) {
	if err := s.manageOther(ctx, "staff.disable", staffID); err != nil {
		return emi.StaffOutcome{}, err
	}
	u, err := s.store.StaffByID(ctx, staffID)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	if _, ok := byStaff(ctx); ok && u.DisabledAt == nil && s.recentlyPrivileged(u.StaffUser) {
		return s.propose(ctx, StoredStaffChange{StaffChange: emi.StaffChange{Kind: emi.StaffChangeDisable, StaffID: staffID,
			Email: u.Email, Name: u.Name, Roles: u.Roles, FromRoles: u.Roles}}, "", "")
	}
	var out emi.StaffOutcome
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		// Decided again on the locked row: a privileged role granted
		// meanwhile makes it a two-person change.
		if _, ok := byStaff(ctx); ok && u.DisabledAt == nil && s.recentlyPrivileged(u.StaffUser) {
			return emi.ErrStaffChangeStale.WithDetail("roles changed to %v meanwhile", u.Roles)
		}
		out, err = s.applyDisable(ctx, u, nil)
		return err
	})
	return out, err
}

// applyDisable disables u (locked) and ends its sessions, and audits;
// a disabled user is left as it is.
func (s *Staff) applyDisable(ctx context.Context, u StoredStaff, extra map[string]any) (emi.StaffOutcome, error) {
	now := s.now().UTC()
	out := emi.StaffOutcome{User: u.StaffUser, Change: appliedChange(emi.StaffChangeDisable, u.StaffUser, u.Roles, now)}
	if u.DisabledAt != nil {
		return out, nil
	}
	if err := s.store.SetStaffDisabled(ctx, u.ID, &now); err != nil {
		return emi.StaffOutcome{}, err
	}
	if err := s.store.RevokeStaffSessions(ctx, u.ID, now); err != nil {
		return emi.StaffOutcome{}, err
	}
	changes := map[string]any{"email": u.Email}
	for k, v := range extra {
		changes[k] = v
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "staff.disable", ResourceType: "staff_user", ResourceToken: u.ID,
		Changes: changes}); err != nil {
		return emi.StaffOutcome{}, err
	}
	out.User.Disabled = true
	return out, nil
}

// recentlyPrivileged reports whether u holds a privileged role or lost one
// less than StaffLinkWindow ago: taking such a user's access away or
// resetting them takes two administrators, so that stripping a colleague
// first does not make them a one-step target.
func (s *Staff) recentlyPrivileged(u emi.StaffUser) bool {
	return emi.AnyPrivileged(u.Roles) || (u.PrivilegeEndedAt != nil && s.now().Sub(*u.PrivilegeEndedAt) < StaffLinkWindow)
}

// withSuspension fills in u's suspension as in force at now.
func withSuspension(u emi.StaffUser, now time.Time) emi.StaffUser {
	u.Suspended = suspendedAt(u, now)
	if u.Suspended && u.SuspensionConfirmedBy == "" {
		end := u.SuspendedAt.Add(emi.SuspensionTTL)
		u.SuspensionLapsesAt = &end
	}
	return u
}

// suspendedAt reports whether u's suspension is in force at now: recorded,
// and confirmed by a second administrator or younger than
// emi.SuspensionTTL.
func suspendedAt(u emi.StaffUser, now time.Time) bool {
	return u.SuspendedAt != nil && (u.SuspensionConfirmedBy != "" || now.Before(u.SuspendedAt.Add(emi.SuspensionTTL)))
}

// Enable lets a disabled staff user sign in again, and clears a lockout.
// Needs emi.PermManageStaff (else emi.ErrForbidden); not for oneself.
// Returns emi.ErrStaffNotFound.
func (s *Staff) Enable(ctx context.Context, staffID string) error {
	const action = "staff.enable"
	if err := s.manageOther(ctx, action, staffID); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		if err := s.store.SetStaffDisabled(ctx, staffID, nil); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "staff_user", ResourceToken: staffID,
			Changes: map[string]any{"email": u.Email}})
	})
}

// RevokeSessions ends every session of a staff user ("sign out
// everywhere", ASVS 7.4.5). Needs emi.PermManageStaff, or to be that user
// (else emi.ErrForbidden). Returns emi.ErrStaffNotFound.
func (s *Staff) RevokeSessions(ctx context.Context, staffID string) error {
	if err := s.authorize(ctx, emi.PermManageStaff, staffID, "staff.revoke_sessions", staffID); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		if _, err := s.store.StaffForUpdate(ctx, staffID); err != nil {
			return err
		}
		if err := s.store.RevokeStaffSessions(ctx, staffID, s.now().UTC()); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.revoke_sessions", ResourceType: "staff_user", ResourceToken: staffID})
	})
}

// ChangePassword sets a new password for the signed-in user itself (the
// principal must be that staff user, else emi.ErrForbidden). current must be
// the present password: a wrong one returns emi.ErrStaffValidation with a
// field error on "current_password" and counts as a failed sign-in
// (throttling and lockout). Returns emi.ErrSignInThrottled while throttled
// and emi.ErrPasswordPolicy (fields on "password") for a refused new
// password or one equal to the current. The new password is not
// temporary: this is how a user on a temporary password leaves it.
func (s *Staff) ChangePassword(ctx context.Context, staffID, current, next string) error {
	if !isSelf(ctx, staffID) {
		s.deny(ctx, "staff.change_password", staffID, "not own account")
		return emi.ErrForbidden.WithDetail("change of another user's password")
	}
	u, err := s.store.StaffByID(ctx, staffID)
	if err != nil {
		return err
	}
	release, err := s.throttle(ctx, &u, emailLookup(u.Email), "staff.change_password")
	if err != nil {
		return err
	}
	ok, _, err := s.cfg.PasswordCost.verifyPassword(current, u.PasswordHash)
	if err != nil {
		return err
	}
	if !ok {
		if err := s.recordFailure(ctx, u, "staff.change_password", reasonBadCurrentPwd); err != nil {
			return err
		}
		return emi.ErrStaffValidation.Field("current_password", "is not correct")
	}
	release() // the current password was right: not a failure
	if err := s.policy.check(next, u.Email); err != nil {
		return err
	}
	if next == current {
		// A temporary password was seen by an administrator: keeping it
		// would keep their access.
		return emi.ErrPasswordPolicy.Field("password", "must differ from the current password")
	}
	hash, err := s.cfg.PasswordCost.hashPassword(next)
	if err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		now := s.now().UTC()
		if err := s.store.UpdateStaffPassword(ctx, staffID, hash, false, &now); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.change_password", ResourceType: "staff_user", ResourceToken: staffID})
	})
}

// Prune deletes expired sessions and sign-in attempts older than seven
// days, and closes the two-person requests past their lapse time, staff
// changes included (Controls.LapseDueRequests).
func (s *Staff) Prune(ctx context.Context) error {
	now := s.now()
	if _, err := s.controls.LapseDueRequests(ctx); err != nil {
		return err
	}
	if _, err := s.store.DeleteExpiredSessions(ctx, now); err != nil {
		return err
	}
	_, err := s.store.PruneSignInAttempts(ctx, now.Add(-signInAttemptRetention))
	return err
}

// Search finds staff users by name or e-mail (substring, case-insensitive)
// or id, for the global search (emi.PermViewStaff; without it, no hits and
// no error). Staff lists are small, so this filters the full list.
func (s *Staff) Search(ctx context.Context, q string, limit int) ([]emi.SearchHit, error) {
	if ViewStaff.Require(ctx) != nil {
		return nil, nil
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	q = strings.ToLower(q)
	var hits []emi.SearchHit
	for _, u := range all {
		if len(hits) >= limit {
			break
		}
		if strings.Contains(strings.ToLower(u.Name), q) || strings.Contains(strings.ToLower(u.Email), q) || u.ID == q {
			hits = append(hits, emi.SearchHit{Kind: "staff", Token: u.ID, Title: u.Name, Detail: u.Email})
		}
	}
	return hits, nil
}

// SignOut records that the staff user ended their session (the portal
// destroys the session itself). The actor is the staff user.
func (s *Staff) SignOut(ctx context.Context, staffID string) error {
	ctx = emi.WithPrincipal(ctx, emi.Principal{Type: emi.ActorStaff, ActorID: staffID})
	return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.sign_out", ResourceType: "staff_user", ResourceToken: staffID})
}
