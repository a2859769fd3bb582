package staffui

import (
	"context"
	"emi/web/portal/frame"
	"time"

	"net/http"
	"slices"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/staff"
	"emi/views/staffview"
)

// The staff screens: staff users with their roles, a new user, role
// changes, disabling and enabling, credential resets, session revocation,
// and the pending two-person changes to approve or reject. Sign-in is
// staff_auth.go, the signed-in user's own page staff_account.go. Rules live
// in service staff.

func staffRow(u emi.StaffUser) staffview.StaffRow {
	roles := make([]string, len(u.Roles))
	for i, role := range u.Roles {
		roles[i] = string(role)
	}
	row := staffview.StaffRow{ID: u.ID, Name: u.Name, Email: u.Email, Roles: strings.Join(roles, ", "),
		Status: "active", StatusTone: "ok", LastSignIn: fmtTimePtr(u.LastSignInAt)}
	switch {
	case u.Disabled:
		row.Status, row.StatusTone = "disabled", "bad"
	case u.SuspensionLapsesAt != nil:
		row.Status, row.StatusTone = "suspended (lapses "+frame.FmtTime(*u.SuspensionLapsesAt)+" unless confirmed)", "bad"
	case u.Suspended:
		row.Status, row.StatusTone = "suspended", "bad"
	case !u.TOTPEnrolled:
		row.Status, row.StatusTone = "2FA not enrolled", "warn"
	}
	return row
}

func roleOptions(checked []emi.Role) []staffview.RoleOption {
	var out []staffview.RoleOption
	for _, r := range emi.Roles() {
		c := false
		for _, x := range checked {
			c = c || x == r
		}
		out = append(out, staffview.RoleOption{Value: string(r), Checked: c})
	}
	return out
}

// staffChangeRow is the view of a staff change; names maps staff ids to
// names for the proposer and decider columns.
func staffChangeRow(c emi.StaffChange, names map[string]string, can staff.RequestCapability) staffview.StaffChangeRow {
	join := func(rs []emi.Role) string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = string(r)
		}
		return strings.Join(out, ", ")
	}
	name := func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		return id
	}
	row := staffview.StaffChangeRow{ID: c.ID, Kind: strings.ReplaceAll(string(c.Kind), "_", " "), StaffID: c.StaffID, Email: c.Email,
		Roles: join(c.Roles), FromRoles: join(c.FromRoles), Status: string(c.Status), ProposedBy: name(c.ProposedBy),
		ProposedAt: frame.FmtTime(c.ProposedAt), Pending: c.Status == emi.StaffChangePending,
		CanApprove: can.Approve, CanReject: can.Reject || can.Withdraw, Mine: can.Withdraw, WhyNot: can.WhyNotApprove}
	if c.DecidedBy != "" {
		row.DecidedBy = name(c.DecidedBy)
	}
	switch c.Status {
	case emi.StaffChangePending:
		row.Status, row.StatusTone = "waiting for a second administrator", "warn"
	case emi.StaffChangeApplied:
		row.StatusTone = "ok"
	default:
		row.StatusTone = "bad"
	}
	return row
}

// staffChanges returns the staff changes as rows, with the names of users.
func (p *Pages) staffChanges(r *http.Request, users []emi.StaffUser) ([]staffview.StaffChangeRow, error) {
	changes, err := p.staff.Changes(r.Context())
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, u := range users {
		names[u.ID] = u.Name
	}
	can := p.staff.ChangeCapabilities(r.Context(), changes)
	rows := make([]staffview.StaffChangeRow, len(changes))
	for i, c := range changes {
		rows[i] = staffChangeRow(c, names, can[c.ID])
	}
	return rows, nil
}

// staffList (GET /staff): the users, and the staff changes (pending first).
func (p *Pages) staffList(w http.ResponseWriter, r *http.Request) {
	list, err := p.staff.List(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	changes, err := p.staffChanges(r, list)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	sort := frame.ReadSort(r, "name", "asc", "name", "email", "last_sign_in")
	slices.SortStableFunc(list, func(a, b emi.StaffUser) int {
		var c int
		switch sort.Key {
		case "email":
			c = strings.Compare(a.Email, b.Email)
		case "last_sign_in":
			c = frame.TimeOrZero(a.LastSignInAt).Compare(frame.TimeOrZero(b.LastSignInAt))
		default:
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		}
		return sort.Apply(c, strings.Compare(a.ID, b.ID))
	})
	rows := make([]staffview.StaffRow, len(list))
	for i, u := range list {
		rows[i] = staffRow(u)
	}
	p.frame.Render(w, r, sort.Status(), "Staff", staffview.StaffList(rows, changes, frame.CanDo(r, staff.ManageStaff), sort.View(r)))
}

// staffNew (GET /staff/new).
func (p *Pages) staffNew(w http.ResponseWriter, r *http.Request) {
	p.frame.Render(w, r, http.StatusOK, "New staff user", staffview.StaffNew("", "", roleOptions(nil), nil))
}

// staffCreate (POST /staff). An auditor-only user exists at once and the
// temporary password is shown once; any other role waits for a second
// administrator, and this administrator sees the first half.
func (p *Pages) staffCreate(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.frame.RenderError(w, r, emi.ErrStaffValidation)
		return
	}
	in := emi.StaffCreate{
		Email: strings.TrimSpace(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name")),
		Roles: rolesFrom(r.PostForm["roles"]),
	}
	out, err := p.staff.Create(r.Context(), in)
	if err != nil {
		if k := emi.AsError(err).Kind; k == emi.KindForbidden || k == emi.KindInternal {
			p.frame.RenderError(w, r, err)
			return
		}
		errs, banner := frame.FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"email": banner}
		}
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "New staff user", staffview.StaffNew(in.Email, in.Name, roleOptions(in.Roles), errs))
		return
	}
	if out.Change.Status == emi.StaffChangePending {
		p.frame.Flash(r.Context(), "ok", "Proposed. The user is created when a second administrator approves on the staff page.")
		p.frame.Render(w, r, http.StatusOK, "Staff change proposed", staffview.TempSecret(out.Secret, "first"))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Staff user created. They choose their own password and enrol two-factor authentication at their first sign-in.")
	p.renderStaff(w, r, http.StatusOK, out.User.ID, out.Secret, "")
}

// staffDetail (GET /staff/{id}).
func (p *Pages) staffDetail(w http.ResponseWriter, r *http.Request) {
	p.renderStaff(w, r, http.StatusOK, frame.Param(r, "id"), "", "")
}

// renderStaff renders a staff user's page, with a secret just issued
// (half: "first", "second" or "" for the whole) and their pending change.
func (p *Pages) renderStaff(w http.ResponseWriter, r *http.Request, status int, id, secret, half string) {
	p.renderStaffPage(w, r, status, id, secret, half, nil)
}

// staffKept is a refused roles change: the roles as ticked and the messages
// by field, shown again so nothing ticked is lost.
type staffKept struct {
	roles []emi.Role
	errs  map[string]string
}

// renderStaffPage renders a staff user's page; kept, when set, shows a
// refused roles change as it was ticked, with its reason beside it.
func (p *Pages) renderStaffPage(w http.ResponseWriter, r *http.Request, status int, id, secret, half string, kept *staffKept) {
	u, err := p.staff.Get(r.Context(), id)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	roles := u.Roles
	var errs map[string]string
	if kept != nil {
		roles, errs = kept.roles, kept.errs
	}
	v := staffview.StaffDetailView{Row: staffRow(u), Roles: roleOptions(roles), CanManage: frame.CanDo(r, staff.ManageStaff),
		IsSelf: u.ID == frame.Me(r).ID, Disabled: u.Disabled, TempSecret: secret, SecretHalf: half,
		Suspended: u.Suspended, SuspensionConfirmed: u.SuspensionConfirmedBy != "", SuspensionReason: u.SuspensionReason,
		SuspensionRecorded: u.SuspendedAt != nil}
	if u.SuspendedAt != nil {
		v.SuspendedBy = p.frame.StaffNames(r)[u.SuspendedBy]
		v.SuspendedAt = frame.FmtTime(*u.SuspendedAt)
	}
	if u.SuspensionLapsesAt != nil {
		v.SuspensionLapsesAt = frame.FmtTime(*u.SuspensionLapsesAt)
	}
	if frame.CanDo(r, staff.ViewStaff) {
		users, err := p.staff.List(r.Context())
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		changes, err := p.staffChanges(r, users)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		for i, c := range changes {
			if c.StaffID == id && c.Pending {
				v.Pending = &changes[i]
			}
		}
	}
	p.frame.Render(w, r, status, u.Name, staffview.StaffDetail(v, errs))
}

// staffRoles (POST /staff/{id}/roles).
func (p *Pages) staffRoles(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := r.ParseForm(); err != nil {
		p.frame.RenderError(w, r, emi.ErrStaffValidation)
		return
	}
	roles := rolesFrom(r.PostForm["roles"])
	out, err := p.staff.SetRoles(r.Context(), id, roles)
	if err != nil {
		switch emi.AsError(err).Kind {
		case emi.KindInvalid, emi.KindConflict:
			// The page again (422) with the roles as ticked and the reason
			// beside them, instead of the user's current roles.
			errs, banner := frame.FieldErrors(err)
			if errs["roles"] == "" {
				errs["roles"] = banner
			}
			p.frame.Flash(r.Context(), "bad", "The roles were not changed: "+banner)
			p.renderStaffPage(w, r, http.StatusUnprocessableEntity, id, "", "", &staffKept{roles: roles, errs: errs})
		default:
			p.frame.FlashError(w, r, err, "/backoffice/staff/"+id)
		}
		return
	}
	if out.Change.Status == emi.StaffChangePending && out.Secret == "" {
		// Removing a privileged role: no new credentials.
		p.frame.Flash(r.Context(), "ok", "Proposed. The roles change when a second administrator approves on the staff page; until then the user keeps their roles. To stop them now, suspend them.")
		p.renderStaff(w, r, http.StatusOK, id, "", "")
		return
	}
	if out.Change.Status == emi.StaffChangePending {
		// A privileged grant reissues the credentials in two halves: this
		// administrator's half is shown once, here.
		p.frame.Flash(r.Context(), "ok", "Proposed. The new roles apply when a second administrator approves; the user then signs in with a new temporary password made of two halves, this one and the approver's.")
		p.renderStaff(w, r, http.StatusOK, id, out.Secret, "first")
		return
	}
	p.frame.Flash(r.Context(), "ok", "Roles saved. They apply at the user's next sign-in; their sessions were ended.")
	frame.Redirect(w, r, "/backoffice/staff/"+id)
}

// staffDisable (POST /staff/{id}/disable). Disabling a user who holds, or
// recently held, a privileged role waits for a second administrator.
func (p *Pages) staffDisable(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	out, err := p.staff.Disable(r.Context(), id)
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	if out.Change.Status == emi.StaffChangePending {
		p.frame.Flash(r.Context(), "ok", "Proposed. The user is disabled when a second administrator approves on the staff page; until then they keep their access. To stop them now, suspend them.")
	} else {
		p.frame.Flash(r.Context(), "ok", "The user was disabled and signed out everywhere.")
	}
	frame.Redirect(w, r, "/backoffice/staff/"+id)
}

// staffSuspend (POST /staff/{id}/suspend): the one-step stop for an
// incident, with its reason.
func (p *Pages) staffSuspend(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := p.staff.Suspend(r.Context(), id, r.PostFormValue("reason")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Suspended: the user's sessions ended and they cannot sign in. The other administrators were told; the suspension lapses in 24 hours unless a second administrator confirms it.")
	frame.Redirect(w, r, "/backoffice/staff/"+id)
}

// staffSuspensionConfirm (POST /staff/{id}/suspension/confirm).
func (p *Pages) staffSuspensionConfirm(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.staff.ConfirmSuspension, "Confirmed: the suspension lasts until an administrator lifts it.")
}

// staffSuspensionLift (POST /staff/{id}/suspension/lift).
func (p *Pages) staffSuspensionLift(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.staff.LiftSuspension, "The suspension was lifted: the user can sign in again.")
}

// staffEnable (POST /staff/{id}/enable).
func (p *Pages) staffEnable(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.staff.Enable, "The user was enabled.")
}

// staffRevoke (POST /staff/{id}/revoke-sessions).
func (p *Pages) staffRevoke(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.staff.RevokeSessions, "All sessions of the user were ended.")
}

// staffAction runs one action on the staff user of the path and returns to
// their page with a flash. Disable, enable and sign out everywhere are
// buttons with nothing typed, so a refusal is a flash too.
func (p *Pages) staffAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, id string) error, done string) {
	id := frame.Param(r, "id")
	if err := act(r.Context(), id); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", done)
	frame.Redirect(w, r, "/backoffice/staff/"+id)
}

// staffReset (POST /staff/{id}/reset) issues a temporary password (or, for
// a privileged user, proposes the reset and shows the first half), shown
// once in this answer. A button, nothing typed: a refusal is a flash.
func (p *Pages) staffReset(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	out, err := p.staff.ResetCredentials(r.Context(), id)
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	half := ""
	if out.Change.Status == emi.StaffChangePending {
		half = "first"
		p.frame.Flash(r.Context(), "ok", "Proposed. The reset takes effect when a second administrator approves; until then the user keeps their credentials.")
	}
	p.renderStaff(w, r, http.StatusOK, id, out.Secret, half)
}

// staffChangeApprove (POST /staff/changes/{change}/approve): the second
// administrator approves; the change takes effect and the second half of a
// temporary password is shown once.
func (p *Pages) staffChangeApprove(w http.ResponseWriter, r *http.Request) {
	out, err := p.staff.ApproveChange(r.Context(), frame.Param(r, "change"))
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff")
		return
	}
	p.frame.Flash(r.Context(), "ok", "Approved: the change is in effect.")
	half := ""
	if out.Secret != "" {
		half = "second"
	}
	p.renderStaff(w, r, http.StatusOK, out.User.ID, out.Secret, half)
}

// staffChangeReject (POST /staff/changes/{change}/reject). The approve
// and reject forms are confirmed buttons, nothing typed: a refusal is a
// flash.
func (p *Pages) staffChangeReject(w http.ResponseWriter, r *http.Request) {
	if err := p.staff.RejectChange(r.Context(), frame.Param(r, "change"), r.PostFormValue("reason")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/staff")
		return
	}
	p.frame.Flash(r.Context(), "ok", "Rejected: nothing changed.")
	frame.Redirect(w, r, "/backoffice/staff")
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return frame.FmtTime(*t)
}

// rolesFrom keeps the known roles among the submitted values.
func rolesFrom(values []string) []emi.Role {
	var out []emi.Role
	for _, v := range values {
		if r := emi.Role(v); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
