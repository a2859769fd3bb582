package emi

import (
	"slices"
	"time"
)

// Role is a staff role. A staff user may hold several.
type Role string

// Staff roles (issue 3).
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
)

// rolePermissions is the authorization table.
var rolePermissions = map[Role][]Permission{
	RoleAdmin: {PermViewDashboard, PermManageStaff, PermViewStaff, PermManagePartners, PermViewPartners,
		PermViewAudit, PermViewJobs, PermManageWebhooks, PermViewWebhooks, PermViewApps, PermViewPeople, PermViewAccounts,
		PermManageSanctions, PermManagePrograms, PermViewMoney},
	RoleUnderwriter: {PermViewDashboard, PermViewApps, PermDecideApps, PermViewPeople, PermViewPartners},
	RoleCompliance: {PermViewDashboard, PermViewApps, PermReviewAML, PermReviewKYC, PermViewPeople, PermViewAudit,
		PermViewMoney, PermManageMoney},
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
	// PasswordTemporary is set by a credential reset: the password was
	// generated and shown to an administrator, so the user should choose a
	// new one after signing in.
	PasswordTemporary bool `db:"password_temporary"`
	// RecoveryCodesLeft is how many unused recovery codes the user has.
	RecoveryCodesLeft int `db:"recovery_codes_left"`
}

// Has reports whether the user holds role r.
func (s StaffUser) Has(r Role) bool { return slices.Contains(s.Roles, r) }

// StaffCreate is the input of creating a staff user (admin screen and CLI).
type StaffCreate struct {
	Email    string `json:"email" validate:"required,email,max=254"`
	Name     string `json:"name" validate:"required,max=200"`
	Roles    []Role `json:"roles" validate:"required,min=1,max=5,dive,oneof=admin underwriter compliance customer_service auditor"`
	Password string `json:"password" validate:"required"`
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
