package staff

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Privileged staff changes. Creating a user with a privileged role
// (emi.PrivilegedRole), granting one, and resetting the credentials of a
// user who holds one or held one in the last StaffLinkWindow are proposed
// by one administrator and take effect only when a second, distinct
// administrator approves (ControlStaffPrivileged). So is taking privilege
// away: removing a privileged role, and disabling a user who holds one or
// held one in the last StaffLinkWindow (ControlStaffPrivilegeRemoval).
// Otherwise one administrator could lock every other out (strip or disable
// them, one step each) or take a colleague over (strip them to auditor,
// then reset them alone and sign in with the whole temporary password).
//
// What stays one step: an auditor-only user, granting or removing the
// auditor role alone, enabling, ending sessions, and the suspension
// (Suspend), the incident-response stop that never leaves fewer than two
// active administrators and lapses after a day unless a second
// administrator confirms it. Anything the system principal does is one
// step too: the `emi staff` command line bootstraps the first
// administrator, and someone with the server's shell and database
// credentials is outside what the back office's controls can hold.
//
// No administrator chooses a colleague's password or sees a working one.
// A change that issues a password issues a temporary one
// (emi.TemporaryPasswordTTL) that signs in only as far as choosing a new
// password and then enrolling TOTP. When two administrators take part, the
// proposer sees its first half once and the approver its second half once,
// so neither alone can sign in as the user.

// StaffChangeTTL is how long a proposed staff change can be approved.
const StaffChangeTTL = 7 * 24 * time.Hour

// StaffChangeRetention is how long a pending change that lapsed (nobody
// approved or rejected it within StaffChangeTTL) stays in the table before
// the maintenance job deletes it. Until then the staff page lists it with
// the other pending changes, where an administrator can still reject it
// (approving it is refused as stale); after it, it is gone from the page
// and the user or e-mail address it named is free for a new proposal
// without anyone rejecting the old one. Its audit rows (the proposal, and
// the deletion itself) stay: the audit log is never pruned.
const StaffChangeRetention = 90 * 24 * time.Hour

// lapsedChangeBatch is how many lapsed changes one transaction deletes.
const lapsedChangeBatch = 100

// StoredStaffChange is a staff change as stored, with the hash of the
// temporary password it issues and the approver's half of it, sealed.
type StoredStaffChange struct {
	emi.StaffChange
	PasswordHash  string
	SecondHalfEnc []byte
}

// SecondHalfContext binds a staff change's sealed second half to its row.
func SecondHalfContext(changeID string) string { return "staff_changes.second_half:" + changeID }

// byStaff reports whether the principal in ctx is a staff user (not the
// system): only staff principals are held to the second-administrator rule.
func byStaff(ctx context.Context) (emi.Principal, bool) {
	p, ok := emi.PrincipalFrom(ctx)
	return p, ok && p.Type == emi.ActorStaff
}

// issueTemporary returns a new temporary password and its hash.
func (s *Staff) issueTemporary(email string) (string, string, error) {
	temp, err := s.policy.temporaryPassword(email)
	if err != nil {
		return "", "", err
	}
	hash, err := s.cfg.PasswordCost.hashPassword(temp)
	if err != nil {
		return "", "", err
	}
	return temp, hash, nil
}

// Create creates a staff user; TOTP is enrolled by the user at the first
// sign-in. The principal must be the system or hold emi.PermManageStaff
// (else emi.ErrForbidden).
//
// The system principal (the command line, the sandbox seed) chooses the
// password and the user exists at once. An administrator chooses no
// password (a non-empty one is emi.ErrStaffValidation on "password"): the
// user gets a temporary one. For roles that are all unprivileged (auditor)
// the user exists at once and the outcome's Secret is the whole temporary
// password; otherwise the change is pending (Change.Status) until another
// administrator approves it (ApproveChange), and Secret is the first half.
//
// Returns emi.ErrStaffValidation (with fields) for invalid input,
// emi.ErrPasswordPolicy (fields on "password") for a chosen password the
// policy refuses, emi.ErrDuplicateStaff when the e-mail address is taken,
// in any case, and emi.ErrStaffChangePending when a creation with it is
// already pending.
func (s *Staff) Create(ctx context.Context, in emi.StaffCreate) (emi.StaffOutcome, error) {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.create", ""); err != nil {
		return emi.StaffOutcome{}, err
	}
	if _, ok := byStaff(ctx); !ok {
		u, hash, err := s.prepare(in)
		if err != nil {
			return emi.StaffOutcome{}, err
		}
		if err := s.insert(ctx, StoredStaff{StaffUser: u, PasswordHash: hash}, nil); err != nil {
			return emi.StaffOutcome{}, err
		}
		return emi.StaffOutcome{User: u, Change: appliedChange(emi.StaffChangeCreate, u, nil, u.CreatedAt)}, nil
	}
	if in.Password != "" {
		return emi.StaffOutcome{}, emi.ErrStaffValidation.Field("password",
			"is chosen by the new user: an administrator never sets a colleague's password")
	}
	u, err := s.prepareNoPassword(in)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	temp, hash, err := s.issueTemporary(u.Email)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	u.PasswordTemporary = true
	if !emi.AnyPrivileged(u.Roles) {
		if err := s.insert(ctx, StoredStaff{StaffUser: u, PasswordHash: hash}, nil); err != nil {
			return emi.StaffOutcome{}, err
		}
		return emi.StaffOutcome{User: u, Secret: temp, Change: appliedChange(emi.StaffChangeCreate, u, nil, u.CreatedAt)}, nil
	}
	switch _, err := s.store.StaffByEmail(ctx, u.Email); {
	case err == nil:
		return emi.StaffOutcome{}, emi.ErrDuplicateStaff.Field("email", "is already taken")
	case !errors.Is(err, emi.ErrStaffNotFound):
		return emi.StaffOutcome{}, err
	}
	return s.propose(ctx, StoredStaffChange{StaffChange: emi.StaffChange{Kind: emi.StaffChangeCreate, StaffID: u.ID,
		Email: u.Email, Name: u.Name, Roles: u.Roles}}, temp, hash)
}

// prepareNoPassword validates in like prepare, without a password.
func (s *Staff) prepareNoPassword(in emi.StaffCreate) (emi.StaffUser, error) {
	in.Email, in.Name = strings.TrimSpace(in.Email), strings.TrimSpace(in.Name)
	if err := s.validate.Struct(in, emi.ErrStaffValidation); err != nil {
		return emi.StaffUser{}, err
	}
	now := s.now().UTC()
	return emi.StaffUser{ID: kernel.NewToken(), Email: in.Email, Name: in.Name, Roles: normalizeRoles(in.Roles),
		CreatedAt: now, PasswordSetAt: now}, nil
}

// insert stores a new user and its staff.create audit row (extra names who
// proposed it, for a change two administrators took).
func (s *Staff) insert(ctx context.Context, u StoredStaff, extra map[string]any) error {
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.InsertStaff(ctx, u); err != nil {
			return err
		}
		changes := map[string]any{"email": u.Email, "name": u.Name, "roles": u.Roles, "temporary_password": u.PasswordTemporary}
		for k, v := range extra {
			changes[k] = v
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.create", ResourceType: "staff_user", ResourceToken: u.ID,
			Changes: changes})
	})
}

func appliedChange(kind emi.StaffChangeKind, u emi.StaffUser, from []emi.Role, at time.Time) emi.StaffChange {
	return emi.StaffChange{Kind: kind, StaffID: u.ID, Email: u.Email, Name: u.Name, Roles: u.Roles, FromRoles: from,
		Status: emi.StaffChangeApplied, ProposedAt: at, DecidedAt: &at}
}

// propose stores c as pending, proposed by the staff principal of ctx.
// temp (when not empty) is the temporary password the change issues: only
// its hash and its second half (sealed) are kept, and the first half is
// the outcome's Secret.
func (s *Staff) propose(ctx context.Context, c StoredStaffChange, temp, hash string) (emi.StaffOutcome, error) {
	p, _ := byStaff(ctx)
	c.ID, c.Status, c.ProposedBy, c.ProposedAt = kernel.NewToken(), emi.StaffChangePending, p.ActorID, s.now().UTC()
	var first string
	if temp != "" {
		half := len(temp) / 2
		enc, err := s.sealer.Seal([]byte(temp[half:]), SecondHalfContext(c.ID))
		if err != nil {
			return emi.StaffOutcome{}, err
		}
		first, c.PasswordHash, c.SecondHalfEnc = temp[:half], hash, enc
	}
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.InsertStaffChange(ctx, c); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.change_propose", ResourceType: "staff_change", ResourceToken: c.ID,
			Changes: map[string]any{"kind": c.Kind, "staff_id": c.StaffID, "email": c.Email, "roles": c.Roles, "from_roles": c.FromRoles}})
	})
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	return emi.StaffOutcome{Change: c.StaffChange, Secret: first}, nil
}

// SetRoles replaces the roles of a staff user and ends its sessions, so the
// new roles apply from its next sign-in. Needs emi.PermManageStaff (else
// emi.ErrForbidden); nobody changes their own roles (emi.ErrOwnRoles).
// When an administrator grants a privileged role the user did not hold, or
// removes one they held, the change is pending until another administrator
// approves it; a change of the auditor role alone takes effect at once.
// Returns
// emi.ErrStaffValidation for an empty or unknown role,
// emi.ErrStaffNotFound, and emi.ErrStaffChangePending when the user has a
// pending change.
func (s *Staff) SetRoles(ctx context.Context, staffID string, roles []emi.Role) (emi.StaffOutcome, error) {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.set_roles", staffID); err != nil {
		return emi.StaffOutcome{}, err
	}
	if isSelf(ctx, staffID) {
		s.deny(ctx, "staff.set_roles", staffID, "own roles")
		return emi.StaffOutcome{}, emi.ErrOwnRoles
	}
	in := struct {
		Roles []emi.Role `json:"roles" validate:"required,min=1,max=5,dive,oneof=admin underwriter compliance customer_service auditor"`
	}{roles}
	if err := s.validate.Struct(in, emi.ErrStaffValidation); err != nil {
		return emi.StaffOutcome{}, err
	}
	roles = normalizeRoles(roles)
	u, err := s.store.StaffByID(ctx, staffID)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	_, byAdmin := byStaff(ctx)
	grantsPrivilege := func(from []emi.Role) bool {
		added := slices.DeleteFunc(slices.Clone(roles), func(r emi.Role) bool { return slices.Contains(from, r) })
		return byAdmin && emi.AnyPrivileged(added)
	}
	removesPrivilege := func(from []emi.Role) bool { return byAdmin && emi.AnyPrivileged(removedRoles(from, roles)) }
	if grantsPrivilege(u.Roles) {
		// The grant also reissues the user's credentials, in two halves:
		// a user an administrator created or reset alone (an auditor, whole
		// password shown to that admin) could otherwise be signed in by
		// that admin, given their own password and TOTP, and then promoted
		// through an unsuspecting second admin.
		temp, hash, err := s.issueTemporary(u.Email)
		if err != nil {
			return emi.StaffOutcome{}, err
		}
		return s.propose(ctx, StoredStaffChange{StaffChange: emi.StaffChange{Kind: emi.StaffChangeRoles, StaffID: staffID,
			Email: u.Email, Name: u.Name, Roles: roles, FromRoles: u.Roles}}, temp, hash)
	}
	if removesPrivilege(u.Roles) {
		// Taking privilege away takes two people too: one administrator
		// could otherwise strip every other (a lockout) or strip one to
		// auditor and reset them alone (a takeover). No new credentials.
		return s.propose(ctx, StoredStaffChange{StaffChange: emi.StaffChange{Kind: emi.StaffChangeRoles, StaffID: staffID,
			Email: u.Email, Name: u.Name, Roles: roles, FromRoles: u.Roles}}, "", "")
	}
	var out emi.StaffOutcome
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		// Decided again on the locked row: roles read before the lock may
		// have changed (an approved grant meanwhile).
		if grantsPrivilege(u.Roles) || removesPrivilege(u.Roles) {
			return emi.ErrStaffChangeStale.WithDetail("roles changed to %v meanwhile", u.Roles)
		}
		out, err = s.applyRoles(ctx, u, roles, nil)
		return err
	})
	return out, err
}

// removedRoles returns the roles of from that to does not hold.
func removedRoles(from, to []emi.Role) []emi.Role {
	return slices.DeleteFunc(slices.Clone(from), func(r emi.Role) bool { return slices.Contains(to, r) })
}

// applyRoles sets the roles of u (locked), ends its sessions and audits; a
// privileged role removed is recorded (emi.StaffUser's PrivilegeEndedAt).
func (s *Staff) applyRoles(ctx context.Context, u StoredStaff, roles []emi.Role, extra map[string]any) (emi.StaffOutcome, error) {
	now := s.now().UTC()
	var ended *time.Time
	if emi.AnyPrivileged(removedRoles(u.Roles, roles)) {
		ended = &now
	}
	if err := s.store.UpdateStaffRoles(ctx, u.ID, roles, ended); err != nil {
		return emi.StaffOutcome{}, err
	}
	if err := s.store.RevokeStaffSessions(ctx, u.ID, now); err != nil {
		return emi.StaffOutcome{}, err
	}
	changes := map[string]any{"roles": map[string]any{"from": u.Roles, "to": roles}, "sessions_revoked": true}
	for k, v := range extra {
		changes[k] = v
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "staff.set_roles", ResourceType: "staff_user", ResourceToken: u.ID,
		Changes: changes}); err != nil {
		return emi.StaffOutcome{}, err
	}
	from := u.Roles
	u.Roles = roles
	if ended != nil {
		u.PrivilegeEndedAt = ended
	}
	return emi.StaffOutcome{User: u.StaffUser, Change: appliedChange(emi.StaffChangeRoles, u.StaffUser, from, now)}, nil
}

// ResetCredentials gives a staff user a new random temporary password,
// removes its TOTP secret and recovery codes so it enrols again at the next
// sign-in, clears a lockout and ends its sessions. Needs
// emi.PermManageStaff (else emi.ErrForbidden); not for oneself. For a user
// holding a privileged role or who held one in the last StaffLinkWindow
// (stripped to auditor first, they would otherwise be a one-step takeover),
// an administrator's reset is pending until
// another administrator approves it (the outcome's Secret is then the first
// half of the password; the user keeps their credentials meanwhile);
// otherwise it takes effect at once and Secret is the whole password.
// Returns emi.ErrStaffNotFound and emi.ErrStaffChangePending.
func (s *Staff) ResetCredentials(ctx context.Context, staffID string) (emi.StaffOutcome, error) {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.reset_credentials", staffID); err != nil {
		return emi.StaffOutcome{}, err
	}
	if isSelf(ctx, staffID) {
		s.deny(ctx, "staff.reset_credentials", staffID, "own account")
		return emi.StaffOutcome{}, emi.ErrForbidden.WithDetail("reset of one's own credentials")
	}
	u, err := s.store.StaffByID(ctx, staffID)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	temp, hash, err := s.issueTemporary(u.Email)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	if _, ok := byStaff(ctx); ok && s.recentlyPrivileged(u.StaffUser) {
		return s.propose(ctx, StoredStaffChange{StaffChange: emi.StaffChange{Kind: emi.StaffChangeReset, StaffID: staffID,
			Email: u.Email, Name: u.Name, Roles: u.Roles, FromRoles: u.Roles}}, temp, hash)
	}
	var out emi.StaffOutcome
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.StaffForUpdate(ctx, staffID)
		if err != nil {
			return err
		}
		// Decided again on the locked row: a privileged role granted
		// meanwhile makes the reset a two-admin change.
		if _, ok := byStaff(ctx); ok && s.recentlyPrivileged(u.StaffUser) {
			return emi.ErrStaffChangeStale.WithDetail("roles changed to %v meanwhile", u.Roles)
		}
		out, err = s.applyReset(ctx, u, hash, nil)
		return err
	})
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	out.Secret = temp
	return out, nil
}

// applyReset gives u (locked) the temporary password hash, clears its
// second factor and lockout, ends its sessions and audits.
func (s *Staff) applyReset(ctx context.Context, u StoredStaff, hash string, extra map[string]any) (emi.StaffOutcome, error) {
	now := s.now().UTC()
	if err := s.store.UpdateStaffPassword(ctx, u.ID, hash, true, &now); err != nil {
		return emi.StaffOutcome{}, err
	}
	if err := s.store.ClearTOTP(ctx, u.ID); err != nil {
		return emi.StaffOutcome{}, err
	}
	if err := s.store.ClearLockout(ctx, u.ID); err != nil {
		return emi.StaffOutcome{}, err
	}
	if err := s.store.RevokeStaffSessions(ctx, u.ID, now); err != nil {
		return emi.StaffOutcome{}, err
	}
	changes := map[string]any{"email": u.Email, "second_factor_cleared": true, "sessions_revoked": true}
	for k, v := range extra {
		changes[k] = v
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "staff.reset_credentials", ResourceType: "staff_user", ResourceToken: u.ID,
		Changes: changes}); err != nil {
		return emi.StaffOutcome{}, err
	}
	u.PasswordTemporary, u.PasswordSetAt, u.TOTPEnrolled, u.RecoveryCodesLeft = true, now, false, 0
	return emi.StaffOutcome{User: u.StaffUser, Change: appliedChange(emi.StaffChangeReset, u.StaffUser, u.Roles, now)}, nil
}

// ApproveChange approves a pending staff change as the second
// administrator, and the change takes effect. The approver needs
// emi.PermManageStaff and must be a person distinct (Controls) from the
// proposer and, for a change to an existing user, from that user:
// otherwise emi.ErrForbidden or emi.ErrFourEyes, and nothing changes. The
// outcome's Secret is the second half of the temporary password, when the
// change issues one. Returns emi.ErrStaffChangeNotFound,
// emi.ErrStaffChangeDecided when it is no longer pending,
// emi.ErrStaffChangeStale when it is older than StaffChangeTTL or the
// user's roles changed since it was proposed, and emi.ErrDuplicateStaff
// when the e-mail address of a new user was taken meanwhile.
func (s *Staff) ApproveChange(ctx context.Context, changeID string) (emi.StaffOutcome, error) {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.change_approve", changeID); err != nil {
		return emi.StaffOutcome{}, err
	}
	me, _ := emi.PrincipalFrom(ctx)
	var out emi.StaffOutcome
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := s.store.StaffChangeForUpdate(ctx, changeID)
		if err != nil {
			return err
		}
		if c.Status != emi.StaffChangePending {
			return emi.ErrStaffChangeDecided
		}
		participants := []string{c.ProposedBy}
		if c.Kind != emi.StaffChangeCreate {
			participants = append(participants, c.StaffID)
		}
		if err := s.controls.Approve(ctx, controlOf(c.StaffChange), participants...); err != nil {
			return err
		}
		now := s.now().UTC()
		if now.After(c.ProposedAt.Add(StaffChangeTTL)) {
			return emi.ErrStaffChangeStale.WithDetail("proposed at %s", c.ProposedAt)
		}
		link := map[string]any{"proposed_by": c.ProposedBy, "change": c.ID}
		switch c.Kind {
		case emi.StaffChangeCreate:
			u := emi.StaffUser{ID: c.StaffID, Email: c.Email, Name: c.Name, Roles: c.Roles, CreatedAt: now, PasswordSetAt: now,
				PasswordTemporary: true}
			if err := s.insert(ctx, StoredStaff{StaffUser: u, PasswordHash: c.PasswordHash}, link); err != nil {
				return err
			}
			out = emi.StaffOutcome{User: u}
		case emi.StaffChangeRoles, emi.StaffChangeReset, emi.StaffChangeDisable:
			u, err := s.store.StaffForUpdate(ctx, c.StaffID)
			if err != nil {
				return err
			}
			if !slices.Equal(u.Roles, c.FromRoles) {
				return emi.ErrStaffChangeStale.WithDetail("roles are %v, were %v when proposed", u.Roles, c.FromRoles)
			}
			switch c.Kind {
			case emi.StaffChangeRoles:
				if out, err = s.applyRoles(ctx, u, c.Roles, link); err != nil {
					return err
				}
				u.Roles = c.Roles
			case emi.StaffChangeDisable:
				if out, err = s.applyDisable(ctx, u, link); err != nil {
					return err
				}
			}
			if c.PasswordHash != "" { // a reset, or a grant that reissues the credentials
				if out, err = s.applyReset(ctx, u, c.PasswordHash, link); err != nil {
					return err
				}
			}
		}
		if err := s.store.DecideStaffChange(ctx, c.ID, emi.StaffChangeApplied, me.ActorID, now, ""); err != nil {
			return err
		}
		c.Status, c.DecidedBy, c.DecidedAt = emi.StaffChangeApplied, me.ActorID, &now
		out.Change = c.StaffChange
		if c.SecondHalfEnc != nil {
			// Opened inside the transaction: a half that does not open rolls
			// the change back instead of applying it with the half lost.
			half, err := s.sealer.Open(c.SecondHalfEnc, SecondHalfContext(c.ID))
			if err != nil {
				return emi.Internal(err)
			}
			out.Secret = string(half)
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.change_approve", ResourceType: "staff_change", ResourceToken: c.ID,
			Changes: map[string]any{"kind": c.Kind, "staff_id": c.StaffID, "proposed_by": c.ProposedBy}})
	})
	if errors.Is(err, emi.ErrFourEyes) {
		s.deny(ctx, "staff.change_approve", changeID, err.Error())
	}
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	return out, nil
}

// controlOf returns the decision-table row that approves c: taking
// privilege away (a disable, or roles that remove a privileged role and
// grant none) or the rest (creating, granting, resetting).
func controlOf(c emi.StaffChange) Control {
	switch c.Kind {
	case emi.StaffChangeDisable:
		return ControlStaffPrivilegeRemoval
	case emi.StaffChangeRoles:
		if !emi.AnyPrivileged(removedRoles(c.Roles, c.FromRoles)) {
			return ControlStaffPrivilegeRemoval
		}
	}
	return ControlStaffPrivileged
}

// RejectChange rejects a pending staff change (any administrator, the
// proposer too: that withdraws it); nothing changes for the user. Needs
// emi.PermManageStaff. reason is kept (at most 1,000 characters, else
// emi.ErrStaffValidation). Returns emi.ErrStaffChangeNotFound and
// emi.ErrStaffChangeDecided.
func (s *Staff) RejectChange(ctx context.Context, changeID, reason string) error {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.change_reject", changeID); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	if len([]rune(reason)) > 1000 {
		return emi.ErrStaffValidation.Field("reason", "must be at most 1000 characters")
	}
	me, _ := emi.PrincipalFrom(ctx)
	own := false
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := s.store.StaffChangeForUpdate(ctx, changeID)
		if err != nil {
			return err
		}
		if c.Status != emi.StaffChangePending {
			return emi.ErrStaffChangeDecided
		}
		if c.Kind != emi.StaffChangeCreate && isSelf(ctx, c.StaffID) {
			// An admin whose own reset or roles are proposed could
			// otherwise keep rejecting it.
			own = true
			return emi.ErrForbidden.WithDetail("a change to one's own account")
		}
		if err := s.store.DecideStaffChange(ctx, c.ID, emi.StaffChangeRejected, me.ActorID, s.now().UTC(), reason); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.change_reject", ResourceType: "staff_change", ResourceToken: c.ID,
			Changes: map[string]any{"kind": c.Kind, "staff_id": c.StaffID, "proposed_by": c.ProposedBy, "reason": reason}})
	})
	if own {
		s.deny(ctx, "staff.change_reject", changeID, "a change to one's own account") // outside the rolled-back transaction
	}
	return err
}

// Changes returns the pending staff changes, oldest first, then the latest
// decided ones. Needs emi.PermViewStaff (else emi.ErrForbidden).
func (s *Staff) Changes(ctx context.Context) ([]emi.StaffChange, error) {
	if err := s.authorize(ctx, emi.PermViewStaff, "", "staff.changes", ""); err != nil {
		return nil, err
	}
	return s.store.ListStaffChanges(ctx)
}

// PruneLapsedChanges deletes the pending staff changes whose StaffChangeTTL
// ended more than StaffChangeRetention ago, in batches of
// lapsedChangeBatch, each batch in a transaction with one
// "staff.change_lapsed_delete" audit row per change (actor: the system's
// maintenance job), and returns how many it deleted. It is part of Prune,
// which the maintenance job runs.
//
// A change that an administrator is approving or rejecting at that moment
// is locked, and skipped: the approval then answers
// emi.ErrStaffChangeStale (the change is long past its TTL), and the next
// run deletes it. A change deleted first is not found by an approval that
// was waiting for its lock (emi.ErrStaffChangeNotFound). Either way nothing
// is half done.
func (s *Staff) PruneLapsedChanges(ctx context.Context) (int, error) {
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("maintenance"))
	cutoff := s.now().UTC().Add(-StaffChangeTTL - StaffChangeRetention)
	total := 0
	for {
		var n int
		err := s.tx.InTx(ctx, func(ctx context.Context) error {
			gone, err := s.store.DeleteLapsedStaffChanges(ctx, cutoff, lapsedChangeBatch)
			if err != nil {
				return err
			}
			for _, c := range gone {
				if err := s.audit.Record(ctx, emi.AuditEntry{Action: "staff.change_lapsed_delete", ResourceType: "staff_change",
					ResourceToken: c.ID, Changes: map[string]any{"kind": c.Kind, "staff_id": c.StaffID, "email": c.Email,
						"proposed_by": c.ProposedBy, "proposed_at": c.ProposedAt, "lapsed_at": c.ProposedAt.Add(StaffChangeTTL)}}); err != nil {
					return err
				}
			}
			n = len(gone)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < lapsedChangeBatch {
			return total, nil
		}
	}
}
