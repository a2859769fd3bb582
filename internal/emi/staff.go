package emi

import (
	"slices"
	"time"
)

// Role is a staff role. A staff user may hold several.
type Role string

// Staff roles.
const (
	RoleAdmin           Role = "admin"            // staff, partners, settings
	RoleUnderwriter     Role = "underwriter"      // decides applications
	RoleCompliance      Role = "compliance"       // AML and KYC reviews
	RoleCustomerService Role = "customer_service" // accounts and cards
	RoleAuditor         Role = "auditor"          // read-only, everything but secrets
)

// Roles lists every role, in display order.
func Roles() []Role {
	return []Role{RoleAdmin, RoleUnderwriter, RoleCompliance, RoleCustomerService, RoleAuditor}
}

// ValidRole reports whether r is a known role.
func ValidRole(r Role) bool { return slices.Contains(Roles(), r) }

// Permission is something a staff user may do. Services check permissions,
// never roles, so the role-to-permission table below is the one place that
// says who may do what.
type Permission string

// Permissions.
const (
	PermViewDashboard  Permission = "dashboard.view"
	PermManageStaff    Permission = "staff.manage"
	PermViewStaff      Permission = "staff.view"
	PermManagePartners Permission = "partners.manage"
	PermViewPartners   Permission = "partners.view"
	PermViewAudit      Permission = "audit.view"
	PermDecideApps     Permission = "applications.decide"
	PermViewApps       Permission = "applications.view"
	PermReviewAML      Permission = "aml.review"
	PermReviewKYC      Permission = "kyc.review"
	PermViewPeople     Permission = "people.view"
	PermManageAccounts Permission = "accounts.manage"
	PermManageCards    Permission = "cards.manage"
	PermViewAccounts   Permission = "accounts.view"
	PermRevealCardData Permission = "cards.reveal"
	PermViewJobs       Permission = "jobs.view"
	PermManageWebhooks Permission = "webhooks.manage"
	PermViewWebhooks   Permission = "webhooks.view"
	// PermManageSanctions: download the sanctions lists now.
	PermManageSanctions Permission = "sanctions.manage"
	// PermManagePrograms: create and edit programs (operator
	// configuration of accounts and cards).
	PermManagePrograms Permission = "programs.manage"
	// PermViewMoney: see the suspense queue and manual adjustment requests.
	PermViewMoney Permission = "money.view"
	// PermManageMoney: assign or return suspense items, request, approve
	// or reject manual adjustments (never one's own: four-eyes), and
	// simulate incoming payments in the sandbox. Held by customer service
	// and compliance, so that either can be the second pair of eyes of the
	// other; not by administrators, who manage staff and could otherwise
	// make themselves the second approver.
	PermManageMoney Permission = "money.manage"
	// PermFileReports: approve a suspicious transaction report another
	// compliance officer drafted, and so file it with the FIU (the
	// reporting role: a second officer of compliance).
	PermFileReports Permission = "reports.file"
)

// rolePermissions is the authorization table.
var rolePermissions = map[Role][]Permission{
	RoleAdmin: {PermViewDashboard, PermManageStaff, PermViewStaff, PermManagePartners, PermViewPartners,
		PermViewAudit, PermViewJobs, PermManageWebhooks, PermViewWebhooks, PermViewApps, PermViewPeople, PermViewAccounts,
		PermManageSanctions, PermManagePrograms, PermViewMoney},
	RoleUnderwriter: {PermViewDashboard, PermViewApps, PermDecideApps, PermViewPeople, PermViewPartners},
	RoleCompliance: {PermViewDashboard, PermViewApps, PermReviewAML, PermReviewKYC, PermViewPeople, PermViewAudit,
		PermViewMoney, PermManageMoney, PermFileReports},
	RoleCustomerService: {PermViewDashboard, PermViewPeople, PermViewAccounts, PermManageAccounts,
		PermManageCards, PermRevealCardData, PermViewMoney, PermManageMoney},
	RoleAuditor: {PermViewDashboard, PermViewStaff, PermViewPartners, PermViewAudit, PermViewApps,
		PermViewPeople, PermViewAccounts, PermViewJobs, PermViewWebhooks, PermViewMoney},
}

// Can reports whether any of roles grants perm.
func Can(roles []Role, perm Permission) bool {
	for _, r := range roles {
		if slices.Contains(rolePermissions[r], perm) {
			return true
		}
	}
	return false
}

// StaffUser is a back-office user, without secrets.
type StaffUser struct {
	ID            string     `db:"id"`
	Email         string     `db:"email"`
	Name          string     `db:"name"`
	Roles         []Role     `db:"-"`
	TOTPEnrolled  bool       `db:"totp_enrolled"`
	Disabled      bool       `db:"disabled"`
	LockedUntil   *time.Time `db:"locked_until"`
	CreatedAt     time.Time  `db:"created_at"`
	LastSignInAt  *time.Time `db:"last_sign_in_at"`
	PasswordSetAt time.Time  `db:"password_set_at"`
	// PasswordTemporary is set when an administrator's action issued the
	// password (a new user, a credential reset): it expires after
	// TemporaryPasswordTTL and signs in only as far as choosing a new one.
	PasswordTemporary bool `db:"password_temporary"`
	// RecoveryCodesLeft is how many unused recovery codes the user has.
	RecoveryCodesLeft int `db:"recovery_codes_left"`
	// PrivilegeEndedAt is when the user last lost a privileged role; for
	// 30 days after it they count as privileged (disabling or resetting
	// them takes two administrators).
	PrivilegeEndedAt *time.Time `db:"privilege_ended_at"`
	// The suspension, as stored: SuspendedAt and SuspendedBy are set while
	// one is recorded; it is in force (Suspended, set by the staff
	// service) until lifted, or for SuspensionTTL unless a second
	// administrator confirmed it (SuspensionConfirmedBy).
	SuspendedAt           *time.Time `db:"suspended_at"`
	SuspendedBy           string     `db:"suspended_by"`
	SuspensionReason      string     `db:"suspension_reason"`
	SuspensionConfirmedBy string     `db:"suspension_confirmed_by"`
	// Suspended reports a suspension in force when the service read the
	// user, and SuspensionLapsesAt when it ends unless confirmed (nil when
	// confirmed or none is in force): both are the service's answer.
	Suspended          bool       `db:"-"`
	SuspensionLapsesAt *time.Time `db:"-"`
}

// SuspensionTTL is how long one administrator's suspension of a colleague
// lasts unless a second administrator confirms it.
const SuspensionTTL = 24 * time.Hour

// Has reports whether the user holds role r.
func (s StaffUser) Has(r Role) bool { return slices.Contains(s.Roles, r) }

// StaffCreate is the input of creating a staff user (admin screen and CLI).
// Password is chosen only by the command line (the system principal, which
// bootstraps the first administrator); an administrator never chooses a
// colleague's password: the service issues a temporary one.
type StaffCreate struct {
	Email    string `json:"email" validate:"required,email,max=254"`
	Name     string `json:"name" validate:"required,max=200"`
	Roles    []Role `json:"roles" validate:"required,min=1,max=5,dive,oneof=admin underwriter compliance customer_service auditor"`
	Password string `json:"password"`
}

// TemporaryPasswordTTL is how long a temporary password (a new user's, or
// one issued by a credential reset) signs in; after it, another reset is
// needed.
const TemporaryPasswordTTL = 72 * time.Hour

// privilegedPermissions are the permissions that make a role privileged
// (its changes need a second administrator): moving money (money, accounts
// and cards, which hold blocking, PIN resets and payouts), deciding
// (applications, AML hits, KYC), revealing card data, and managing staff,
// because an administrator approves the privileged staff changes of other
// administrators. Of today's roles only the auditor, who reads and changes
// nothing, holds none.
var privilegedPermissions = []Permission{
	PermManageMoney, PermManageAccounts, PermManageCards,
	PermDecideApps, PermReviewAML, PermReviewKYC, PermFileReports,
	PermRevealCardData,
	PermManageStaff,
}

// PrivilegedPermissions returns the permissions that make a role
// privileged.
func PrivilegedPermissions() []Permission { return slices.Clone(privilegedPermissions) }

// PrivilegedRole reports whether r holds a privileged permission: creating
// a user with it, granting it, and resetting the credentials of a user who
// holds it need a second administrator.
func PrivilegedRole(r Role) bool {
	for _, p := range privilegedPermissions {
		if slices.Contains(rolePermissions[r], p) {
			return true
		}
	}
	return false
}

// AnyPrivileged reports whether any of roles is privileged.
func AnyPrivileged(roles []Role) bool { return slices.ContainsFunc(roles, PrivilegedRole) }

// StaffChangeKind is the kind of a change to a staff user's access.
type StaffChangeKind string

// Kinds of staff changes.
const (
	StaffChangeCreate StaffChangeKind = "create"
	StaffChangeRoles  StaffChangeKind = "set_roles"
	StaffChangeReset  StaffChangeKind = "reset_credentials"
	// StaffChangeDisable: disabling a user who holds, or held in the last
	// 30 days, a privileged role.
	StaffChangeDisable StaffChangeKind = "disable"
)

// StaffChangeStatus is where a staff change stands.
type StaffChangeStatus string

// Statuses of staff changes.
const (
	// StaffChangePending: proposed by one administrator, waiting for a
	// second.
	StaffChangePending StaffChangeStatus = "pending"
	// StaffChangeApplied: in effect (approved, or one-step).
	StaffChangeApplied StaffChangeStatus = "applied"
	// StaffChangeRejected: rejected by an administrator or withdrawn by
	// its proposer; nothing changed.
	StaffChangeRejected StaffChangeStatus = "rejected"
	// StaffChangeWithdrawn: ended by its proposer; StaffChangeLapsed:
	// nobody decided it in time; StaffChangeVoid: the user's roles changed
	// after it was proposed.
	StaffChangeWithdrawn StaffChangeStatus = "withdrawn"
	StaffChangeLapsed    StaffChangeStatus = "lapsed"
	StaffChangeVoid      StaffChangeStatus = "void"
)

// StaffChange is a change to staff access: a new user, new roles or a
// credential reset. A privileged one is proposed by one administrator and
// takes effect when a second, distinct one approves it.
type StaffChange struct {
	ID      string          `db:"id"`
	Kind    StaffChangeKind `db:"kind"`
	StaffID string          `db:"staff_id"` // for a create, the id the new user will have
	Email   string          `db:"email"`
	Name    string          `db:"name"`
	// Roles are the new user's or the new roles; FromRoles the user's
	// roles when proposed (a change to them voids the proposal).
	Roles      []Role            `db:"-"`
	FromRoles  []Role            `db:"-"`
	Status     StaffChangeStatus `db:"status"`
	ProposedBy string            `db:"proposed_by"`
	ProposedAt time.Time         `db:"proposed_at"`
	DecidedBy  string            `db:"decided_by"`
	DecidedAt  *time.Time        `db:"decided_at"`
	Reason     string            `db:"reason"`
}

// StaffOutcome is what a staff change gives back.
type StaffOutcome struct {
	Change StaffChange
	// User is the user as it is after the change (zero while a create is
	// pending).
	User StaffUser
	// Secret is shown once and never stored in clear: the whole temporary
	// password when the change took effect in one step, or this
	// administrator's half of it when two administrators took part (the
	// proposer's half, then the approver's; the user types the proposer's
	// half first). Empty when no password was issued.
	Secret string
}

// StaffRoles returns the staff roles of a principal.
func (p Principal) Roles() []Role {
	out := make([]Role, 0, len(p.StaffRoles))
	for _, r := range p.StaffRoles {
		out = append(out, Role(r))
	}
	return out
}

// Can reports whether the principal may do perm. System principals may do
// everything; partners nothing in the back office.
func (p Principal) Can(perm Permission) bool {
	switch p.Type {
	case ActorSystem:
		return true
	case ActorStaff:
		return Can(p.Roles(), perm)
	}
	return false
}
