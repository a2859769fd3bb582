// Package staffui is the back office's staff screens: sign-in with two
// factors, the signed-in member's own page, staff users and their roles
// (with the two-person changes), and each member's inbox.
package staffui

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/staff"
	"emi/web/portal/frame"
)

// StaffService is what the staff pages need of the staff service.
type StaffService interface {
	SignIn(ctx context.Context, email, password string) (staff.SignInResult, error)
	BeginEnrollment(ctx context.Context, staffID string) (staff.Enrollment, error)
	ConfirmEnrollment(ctx context.Context, staffID, code string) ([]string, error)
	VerifyTOTP(ctx context.Context, staffID, code string) error
	UseRecoveryCode(ctx context.Context, staffID, code string) error
	Current(ctx context.Context, staffID string, signedInAt time.Time) (emi.StaffUser, error)
	ChangePassword(ctx context.Context, staffID, current, next string) error
	RegenerateRecoveryCodes(ctx context.Context, staffID, totpCode string) ([]string, error)
	Create(ctx context.Context, in emi.StaffCreate) (emi.StaffOutcome, error)
	List(ctx context.Context) ([]emi.StaffUser, error)
	Names(ctx context.Context) (map[string]string, error)
	Get(ctx context.Context, id string) (emi.StaffUser, error)
	SetRoles(ctx context.Context, staffID string, roles []emi.Role) (emi.StaffOutcome, error)
	Disable(ctx context.Context, staffID string) (emi.StaffOutcome, error)
	Enable(ctx context.Context, staffID string) error
	Suspend(ctx context.Context, staffID, reason string) error
	ConfirmSuspension(ctx context.Context, staffID string) error
	LiftSuspension(ctx context.Context, staffID string) error
	ResetCredentials(ctx context.Context, staffID string) (emi.StaffOutcome, error)
	Changes(ctx context.Context) ([]emi.StaffChange, error)
	ChangeCapabilities(ctx context.Context, changes []emi.StaffChange) map[string]staff.RequestCapability
	ApproveChange(ctx context.Context, changeID string) (emi.StaffOutcome, error)
	RejectChange(ctx context.Context, changeID, reason string) error
	RevokeSessions(ctx context.Context, staffID string) error
	SignOut(ctx context.Context, staffID string) error
}

// Pages are the staff screens.
type Pages struct {
	frame *frame.Frame
	staff StaffService
	inbox *staff.Inbox
}

// New returns the staff pages.
func New(f *frame.Frame, s StaffService, inbox *staff.Inbox) *Pages {
	return &Pages{frame: f, staff: s, inbox: inbox}
}

// Nav are the staff screens' navigation links, the inbox's with its
// unread count.
func Nav(unread *staff.Inbox) (inbox, staffList frame.NavEntry) {
	inbox = frame.NavEntry{Href: "/backoffice/inbox", Label: "Inbox", Op: staff.ViewDashboard}
	if unread != nil {
		inbox.Count = func(r *http.Request) (int64, error) { return unread.Unread(r.Context()) }
	}
	return inbox, frame.NavEntry{Href: "/backoffice/staff", Label: "Staff", Op: staff.ViewStaff}
}

// SignInRoutes maps sign-in and sign-out, open before sign-in.
func (p *Pages) SignInRoutes(r chi.Router) {
	r.Get("/signin", p.signInPage)
	r.Post("/signin", p.signIn)
	r.Get("/signin/password", p.newPasswordPage)
	r.Post("/signin/password", p.newPassword)
	r.Get("/signin/totp", p.totpPage)
	r.Post("/signin/totp", p.totp)
	r.Post("/signin/recovery", p.recovery)
	r.Get("/signin/enroll", p.enrollPage)
	r.Post("/signin/enroll", p.enroll)
	r.Post("/signout", p.signOut)
}

// Routes maps the signed-in staff screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.Get("/account", p.account)
	r.Post("/account/password", p.changePassword)
	r.Post("/account/recovery-codes", p.regenerateCodes)
	r.Post("/account/signout-everywhere", p.signOutEverywhere)

	r.With(g(staff.ViewStaff)).Get("/staff", p.staffList)
	r.With(g(staff.ManageStaff)).Get("/staff/new", p.staffNew)
	r.With(g(staff.ManageStaff)).Post("/staff", p.staffCreate)
	r.With(g(staff.ViewStaff)).Get("/staff/{id}", p.staffDetail)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/roles", p.staffRoles)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/disable", p.staffDisable)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/enable", p.staffEnable)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/suspend", p.staffSuspend)
	r.With(g(staff.ApproveOp(staff.ControlStaffSuspension))).Post("/staff/{id}/suspension/confirm", p.staffSuspensionConfirm)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/suspension/lift", p.staffSuspensionLift)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/reset", p.staffReset)
	r.With(g(staff.ManageStaff)).Post("/staff/{id}/revoke-sessions", p.staffRevoke)
	r.With(g(staff.ApproveOp(staff.ControlStaffPrivileged))).Post("/staff/changes/{change}/approve", p.staffChangeApprove)
	r.With(g(staff.ManageStaff)).Post("/staff/changes/{change}/reject", p.staffChangeReject)

	r.With(g(staff.ViewDashboard)).Get("/inbox", p.inboxPage)
	r.With(g(staff.ViewDashboard)).Post("/inbox/read", p.inboxRead)
}
