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

// StaffChangeFlow is a staff change that takes two administrators: one
// proposes, a second, distinct one (and distinct from the user it
// changes) approves, and only then does it take effect. Its row of the
// decision table is ControlStaffPrivileged, or ControlStaffPrivilegeRemoval
// for taking privilege away (changeFlow). It binds to the user's roles
// when proposed and lapses after StaffChangeTTL; a decided change keeps no
// secret (the store clears them with the decision).
var StaffChangeFlow = DeclareFlow(Flow{
	Control:        ControlStaffPrivileged,
	Asked:          "this staff change",
	Changed:        "the user's roles",
	Proposed:       "staff.change_propose",
	Approved:       "staff.change_approve",
	Rejected:       "staff.change_reject",
	Withdrawn:      "staff.change_withdraw",
	Voided:         "staff.change_voided",
	Lapse:          StaffChangeTTL,
	ReasonOptional: true,
	// The codes the back office knew before the lifecycle.
	Codes: RequestCodes{Pending: emi.ErrStaffChangePending, Closed: emi.ErrStaffChangeDecided,
		Lapsed: emi.ErrStaffChangeStale, Void: emi.ErrStaffChangeStale},
	Href: func(Request) string { return "/backoffice/staff" },
})

// StaffChangeFlow under ControlStaffPrivilegeRemoval, declared for the
// lapse job (changeFlow gives the same flow to the change's own steps).
var _ = DeclareFlow(func() Flow {
	f := StaffChangeFlow
	f.Control = ControlStaffPrivilegeRemoval
	return f
}())

// changeFlow is StaffChangeFlow under c's row of the decision table.
func changeFlow(c emi.StaffChange) Flow {
	f := StaffChangeFlow
	f.Control = controlOf(c)
	return f
}

// changeSubject is what a change is about: the user, or for a create the
// e-mail address (one pending change per user, one pending create per
// address).
func changeSubject(c emi.StaffChange) string {
	if c.Kind == emi.StaffChangeCreate {
		return SubjectOf("staff-email", strings.ToLower(c.Email))
	}
	return SubjectOf("staff", c.StaffID)
}

// rolesRevision is the revision a change to an existing user binds to.
func rolesRevision(roles []emi.Role) string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return strings.Join(out, ",")
}

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

// propose stores c as pending (StaffChangeFlow), proposed by the staff
// principal of ctx. temp (when not empty) is the temporary password the
// change issues: only its hash and its second half (sealed) are kept, and
// the first half is the outcome's Secret.
func (s *Staff) propose(ctx context.Context, c StoredStaffChange, temp, hash string) (emi.StaffOutcome, error) {
	c.ID = kernel.NewToken()
	var first string
	if temp != "" {
		half := len(temp) / 2
		enc, err := s.sealer.Seal([]byte(temp[half:]), SecondHalfContext(c.ID))
		if err != nil {
			return emi.StaffOutcome{}, err
		}
		first, c.PasswordHash, c.SecondHalfEnc = temp[:half], hash, enc
	}
	revision := ""
	if c.Kind != emi.StaffChangeCreate {
		revision = rolesRevision(c.FromRoles)
	}
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		r, err := s.controls.ProposeRequest(ctx, changeFlow(c.StaffChange), Proposal{ID: c.ID, Subject: changeSubject(c.StaffChange),
			ResourceType: "staff_change", ResourceToken: c.ID, Revision: revision,
			Changes: map[string]any{"kind": c.Kind, "staff_id": c.StaffID, "email": c.Email, "roles": c.Roles, "from_roles": c.FromRoles}})
		if err != nil {
			return err
		}
		c.Status, c.ProposedBy, c.ProposedAt = emi.StaffChangePending, r.ProposedBy, r.ProposedAt
		return s.store.InsertStaffChange(ctx, c)
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
// administrator, and the change takes effect. The approver needs the
// change's Approve permission (emi.PermManageStaff) and must be a person
// distinct (Controls) from the proposer and, for a change to an existing
// user, from that user: otherwise emi.ErrForbidden or emi.ErrFourEyes, and
// nothing changes. The outcome's Secret is the second half of the
// temporary password, when the change issues one. Returns
// emi.ErrStaffChangeNotFound, emi.ErrStaffChangeDecided when it is no
// longer pending, emi.ErrStaffChangeStale when it lapsed (StaffChangeTTL)
// or the user's roles changed since it was proposed (it is then closed),
// and emi.ErrDuplicateStaff when the e-mail address of a new user was
// taken meanwhile.
func (s *Staff) ApproveChange(ctx context.Context, changeID string) (emi.StaffOutcome, error) {
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.change_approve", changeID); err != nil {
		return emi.StaffOutcome{}, err
	}
	peek, err := s.store.StaffChange(ctx, changeID, false)
	if err != nil {
		return emi.StaffOutcome{}, err
	}
	var others []string
	if peek.Kind != emi.StaffChangeCreate {
		others = []string{peek.StaffID}
	}
	var c StoredStaffChange
	var u StoredStaff
	var out emi.StaffOutcome
	_, err = s.controls.ApproveRequest(ctx, changeFlow(peek.StaffChange), changeSubject(peek.StaffChange), Approval{ID: peek.ID, Others: others,
		// The change with its secrets (the decision clears them), then the
		// user, locked. The change's row is read, not locked: the request's
		// lock serialises its decisions, and the lapse job and the secrets
		// trigger take the request first.
		Lock: func(ctx context.Context, _ Request) (string, error) {
			var err error
			if c, err = s.store.StaffChange(ctx, changeID, false); err != nil {
				return "", err
			}
			if c.Kind == emi.StaffChangeCreate {
				return "", nil
			}
			if u, err = s.store.StaffForUpdate(ctx, c.StaffID); err != nil {
				return "", err
			}
			return rolesRevision(u.Roles), nil
		},
		Apply: func(ctx context.Context, r Request) (map[string]any, error) {
			now := s.now().UTC()
			link := map[string]any{"proposed_by": r.ProposedBy, "change": c.ID}
			var err error
			switch c.Kind {
			case emi.StaffChangeCreate:
				nu := emi.StaffUser{ID: c.StaffID, Email: c.Email, Name: c.Name, Roles: c.Roles, CreatedAt: now, PasswordSetAt: now,
					PasswordTemporary: true}
				if err := s.insert(ctx, StoredStaff{StaffUser: nu, PasswordHash: c.PasswordHash}, link); err != nil {
					return nil, err
				}
				out = emi.StaffOutcome{User: nu}
			case emi.StaffChangeRoles, emi.StaffChangeReset, emi.StaffChangeDisable:
				switch c.Kind {
				case emi.StaffChangeRoles:
					if out, err = s.applyRoles(ctx, u, c.Roles, link); err != nil {
						return nil, err
					}
					u.Roles = c.Roles
				case emi.StaffChangeDisable:
					if out, err = s.applyDisable(ctx, u, link); err != nil {
						return nil, err
					}
				}
				if c.PasswordHash != "" { // a reset, or a grant that reissues the credentials
					if out, err = s.applyReset(ctx, u, c.PasswordHash, link); err != nil {
						return nil, err
					}
				}
			}
			c.Status, c.DecidedBy, c.DecidedAt = emi.StaffChangeApplied, kernel.StaffOf(ctx).ActorID, &now
			out.Change = c.StaffChange
			if c.SecondHalfEnc != nil {
				// Opened inside the transaction: a half that does not open
				// rolls the change back instead of applying it with the
				// half lost.
				half, err := s.sealer.Open(c.SecondHalfEnc, SecondHalfContext(c.ID))
				if err != nil {
					return nil, emi.Internal(err)
				}
				out.Secret = string(half)
			}
			return map[string]any{"kind": c.Kind, "staff_id": c.StaffID}, nil
		},
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

// RejectChange ends a pending staff change without applying it: rejected
// by another administrator, withdrawn by its proposer; nothing changes for
// the user, who may not end a change to themself (emi.ErrForbidden). Needs
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
	c, err := s.store.StaffChange(ctx, changeID, false)
	if err != nil {
		return err
	}
	if c.Kind != emi.StaffChangeCreate && isSelf(ctx, c.StaffID) {
		// An admin whose own reset or roles are proposed could otherwise
		// keep rejecting it.
		s.deny(ctx, "staff.change_reject", changeID, "a change to one's own account")
		return emi.ErrForbidden.WithDetail("a change to one's own account")
	}
	_, err = s.controls.DeclineRequest(ctx, changeFlow(c.StaffChange), changeSubject(c.StaffChange), Decline{ID: c.ID, Note: reason})
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

// ChangeCapabilities answers, for each pending change of changes (by id),
// what the reader may do with it: the decision engine's answer
// (Controls.RequestCapabilities, the user it changes counting as having
// taken part), and no ending of a change to oneself (RejectChange).
func (s *Staff) ChangeCapabilities(ctx context.Context, changes []emi.StaffChange) map[string]RequestCapability {
	var rs []Request
	subject := map[string]string{}
	for _, c := range changes {
		if c.Status != emi.StaffChangePending {
			continue
		}
		rs = append(rs, Request{ID: c.ID, Control: controlOf(c), Status: RequestPending, ProposedBy: c.ProposedBy})
		if c.Kind != emi.StaffChangeCreate {
			subject[c.ID] = c.StaffID
		}
	}
	out := s.controls.RequestCapabilitiesOf(ctx, rs, func(r Request) []string { return []string{subject[r.ID]} })
	for id, staffID := range subject {
		if isSelf(ctx, staffID) {
			can := out[id]
			can.Reject, can.Withdraw = false, false
			out[id] = can
		}
	}
	return out
}
