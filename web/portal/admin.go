package portal

import (
	"context"
	"strconv"

	"github.com/a-h/templ"
	"net/http"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/views/pages"
)

// --- partners ---

func partnerRow(p emi.Partner) pages.PartnerRow {
	return pages.PartnerRow{ID: p.ID, Name: p.Name, Merchant: p.MasterMerchant, Processing: string(p.Processing), Created: fmtTime(p.CreatedAt)}
}

func canDo(r *http.Request, perm emi.Permission) bool {
	pr, _ := emi.PrincipalFrom(r.Context())
	return pr.Can(perm)
}

// partnerList (GET /partners).
func (p *Portal) partnerList(w http.ResponseWriter, r *http.Request) {
	list, err := p.d.Partners.List(r.Context())
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	sort := readSort(r, "created", "desc", "name", "processing", "created")
	slices.SortStableFunc(list, func(a, b emi.Partner) int {
		var c int
		switch sort.Key {
		case "name":
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		case "processing":
			c = strings.Compare(string(a.Processing), string(b.Processing))
		default:
			c = a.CreatedAt.Compare(b.CreatedAt)
		}
		return sort.apply(c, strings.Compare(a.ID, b.ID))
	})
	rows := make([]pages.PartnerRow, len(list))
	for i, pt := range list {
		rows[i] = partnerRow(pt)
	}
	p.render(w, r, sort.status(), "Partners", pages.Partners(rows, canDo(r, emi.PermManagePartners), sort.view(r)))
}

// partnerNew (GET /partners/new).
func (p *Portal) partnerNew(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, "New partner", pages.PartnerNew("", "automatic", "", nil))
}

// partnerCreate (POST /partners) creates the partner and shows its
// credentials once (through a session slot that is read exactly once).
func (p *Portal) partnerCreate(w http.ResponseWriter, r *http.Request) {
	in := emi.PartnerCreate{
		Name:       strings.TrimSpace(r.PostFormValue("name")),
		Processing: emi.Processing(r.PostFormValue("processing")),
		WebhookURL: strings.TrimSpace(r.PostFormValue("webhook_url")),
	}
	creds, err := p.d.Partners.Create(r.Context(), in)
	if err != nil {
		if k := emi.AsError(err).Kind; k != emi.KindInvalid {
			p.renderError(w, r, err)
			return
		}
		errs, _ := fieldErrors(err)
		p.render(w, r, http.StatusUnprocessableEntity, "New partner", pages.PartnerNew(in.Name, string(in.Processing), in.WebhookURL, errs))
		return
	}
	p.showCredentialsOnce(w, r, pages.Credentials{APIKey: creds.APIKey, APISecret: creds.APISecret,
		WebhookSecret: creds.WebhookSecret, Merchant: creds.Merchant}, "/backoffice/partners/"+creds.Partner.ID)
}

// showCredentialsOnce renders the secrets in the answer to the POST itself:
// they are never stored anywhere in clear, so a reload or the back button
// cannot show them again (the response is no-store).
func (p *Portal) showCredentialsOnce(w http.ResponseWriter, r *http.Request, c pages.Credentials, back string) {
	p.render(w, r, http.StatusOK, "Credentials", pages.CredentialsOnce(c, back))
}

// partnerDetail (GET /partners/{id}).
func (p *Portal) partnerDetail(w http.ResponseWriter, r *http.Request) {
	p.renderPartner(w, r, http.StatusOK, param(r, "id"), "", nil)
}

// renderPartner renders a partner's page: details, keys and, for roles that
// may see them, its validator configuration and webhook endpoints (with the
// endpoint form's state).
func (p *Portal) renderPartner(w http.ResponseWriter, r *http.Request, status int, id, newURL string, errs map[string]string) {
	p.renderPartnerPage(w, r, status, id, newURL, errs, nil)
}

// renderPartnerPage is renderPartner with the validator form's state of a
// refused save (nil: the stored configuration).
func (p *Portal) renderPartnerPage(w http.ResponseWriter, r *http.Request, status int, id, newURL string, errs map[string]string, vc *validatorState) {
	pt, keys, err := p.d.Partners.Get(r.Context(), id)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	rows := make([]pages.KeyRow, len(keys))
	for i, k := range keys {
		row := pages.KeyRow{ID: k.ID, APIKey: k.APIKey, Created: fmtTime(k.CreatedAt), Status: "active", StatusTone: "ok",
			MinSignatureVersion: k.MinSignatureVersion}
		if k.RevokedAt != nil {
			row.Status, row.StatusTone, row.Revoked = "revoked", "bad", true
		}
		if k.PreviousValidUntil != nil && p.d.Now().Before(*k.PreviousValidUntil) && !row.Revoked {
			row.Overlap = fmtTime(*k.PreviousValidUntil)
			row.Status, row.StatusTone = "rotating", "warn"
		}
		rows[i] = row
	}
	content := []templ.Component{pages.PartnerDetail(partnerRow(pt), rows, canDo(r, emi.PermManagePartners))}
	onboarding, err := p.validatorSection(r, id, vc)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	if onboarding != nil {
		content = append(content, onboarding)
	}
	hooks, err := p.webhooksSection(r, id, newURL, errs)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	if hooks != nil {
		content = append(content, hooks)
	}
	p.render(w, r, status, pt.Name, templ.Join(content...))
}

// partnerProcessing (POST /partners/{id}/processing).
func (p *Portal) partnerProcessing(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	if err := p.d.Partners.SetProcessing(r.Context(), id, emi.Processing(r.PostFormValue("processing"))); err != nil {
		p.flashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.flash(r.Context(), "ok", "Processing mode saved.")
	redirect(w, r, "/backoffice/partners/"+id)
}

// partnerKeyCreate (POST /partners/{id}/keys).
func (p *Portal) partnerKeyCreate(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	creds, err := p.d.Partners.CreateKey(r.Context(), id)
	if err != nil {
		p.flashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.showCredentialsOnce(w, r, pages.Credentials{APIKey: creds.APIKey, APISecret: creds.APISecret}, "/backoffice/partners/"+id)
}

// partnerKeyRotate (POST /partners/{id}/keys/{key}/rotate).
func (p *Portal) partnerKeyRotate(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	secret, err := p.d.Partners.RotateSecret(r.Context(), param(r, "key"), r.PostFormValue("confirm") == "overlap")
	if err != nil {
		p.flashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.showCredentialsOnce(w, r, pages.Credentials{APISecret: secret}, "/backoffice/partners/"+id)
}

// partnerKeyRevoke (POST /partners/{id}/keys/{key}/revoke).
func (p *Portal) partnerKeyRevoke(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	if err := p.d.Partners.RevokeKey(r.Context(), param(r, "key")); err != nil {
		p.flashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.flash(r.Context(), "ok", "The API key was revoked.")
	redirect(w, r, "/backoffice/partners/"+id)
}

// partnerKeySignatureVersion (POST /partners/{id}/keys/{key}/signature-version):
// sets the lowest signature version the key accepts (contract §2).
func (p *Portal) partnerKeySignatureVersion(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	v, err := strconv.Atoi(r.PostFormValue("signature_version"))
	if err != nil {
		v = 0 // refused by the service as a validation error
	}
	if err := p.d.Partners.SetKeySignatureVersion(r.Context(), param(r, "key"), v); err != nil {
		p.flashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	msg := "The API key accepts signature versions 1 and 2."
	if v == emi.SignatureV2 {
		msg = "The API key now requires signature version 2: version 1 requests are refused with 10001."
	}
	p.flash(r.Context(), "ok", msg)
	redirect(w, r, "/backoffice/partners/"+id)
}

// flashError answers a failed action: 403/404/500 pages for those kinds, a
// flash on the page the action came from for rule errors.
func (p *Portal) flashError(w http.ResponseWriter, r *http.Request, err error, back string) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
		p.renderError(w, r, err)
		return
	}
	msg := Message(e)
	if _, banner := fieldErrors(err); len(e.Fields) > 0 {
		parts := []string{banner}
		for _, f := range e.Fields {
			parts = append(parts, f.Field+": "+f.Message)
		}
		msg = strings.Join(parts, " ")
	}
	p.flash(r.Context(), "bad", msg)
	redirect(w, r, back)
}

// --- staff ---

func staffRow(u emi.StaffUser) pages.StaffRow {
	roles := make([]string, len(u.Roles))
	for i, role := range u.Roles {
		roles[i] = string(role)
	}
	row := pages.StaffRow{ID: u.ID, Name: u.Name, Email: u.Email, Roles: strings.Join(roles, ", "),
		Status: "active", StatusTone: "ok", LastSignIn: fmtTimePtr(u.LastSignInAt)}
	switch {
	case u.Disabled:
		row.Status, row.StatusTone = "disabled", "bad"
	case !u.TOTPEnrolled:
		row.Status, row.StatusTone = "2FA not enrolled", "warn"
	}
	return row
}

func roleOptions(checked []emi.Role) []pages.RoleOption {
	var out []pages.RoleOption
	for _, r := range emi.Roles() {
		c := false
		for _, x := range checked {
			c = c || x == r
		}
		out = append(out, pages.RoleOption{Value: string(r), Checked: c})
	}
	return out
}

// staffChangeRow is the view of a staff change; names maps staff ids to
// names for the proposer and decider columns.
func staffChangeRow(c emi.StaffChange, names map[string]string) pages.StaffChangeRow {
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
	row := pages.StaffChangeRow{ID: c.ID, Kind: strings.ReplaceAll(string(c.Kind), "_", " "), StaffID: c.StaffID, Email: c.Email,
		Roles: join(c.Roles), FromRoles: join(c.FromRoles), Status: string(c.Status), ProposedBy: name(c.ProposedBy),
		ProposedAt: fmtTime(c.ProposedAt), Pending: c.Status == emi.StaffChangePending}
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
func (p *Portal) staffChanges(r *http.Request, users []emi.StaffUser) ([]pages.StaffChangeRow, error) {
	changes, err := p.d.Staff.Changes(r.Context())
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, u := range users {
		names[u.ID] = u.Name
	}
	rows := make([]pages.StaffChangeRow, len(changes))
	for i, c := range changes {
		rows[i] = staffChangeRow(c, names)
	}
	return rows, nil
}

// staffList (GET /staff): the users, and the staff changes (pending first).
func (p *Portal) staffList(w http.ResponseWriter, r *http.Request) {
	list, err := p.d.Staff.List(r.Context())
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	changes, err := p.staffChanges(r, list)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	sort := readSort(r, "name", "asc", "name", "email", "last_sign_in")
	slices.SortStableFunc(list, func(a, b emi.StaffUser) int {
		var c int
		switch sort.Key {
		case "email":
			c = strings.Compare(a.Email, b.Email)
		case "last_sign_in":
			c = timeOrZero(a.LastSignInAt).Compare(timeOrZero(b.LastSignInAt))
		default:
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		}
		return sort.apply(c, strings.Compare(a.ID, b.ID))
	})
	rows := make([]pages.StaffRow, len(list))
	for i, u := range list {
		rows[i] = staffRow(u)
	}
	p.render(w, r, sort.status(), "Staff", pages.StaffList(rows, changes, canDo(r, emi.PermManageStaff), sort.view(r)))
}

// staffNew (GET /staff/new).
func (p *Portal) staffNew(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, "New staff user", pages.StaffNew("", "", roleOptions(nil), nil))
}

// staffCreate (POST /staff). An auditor-only user exists at once and the
// temporary password is shown once; any other role waits for a second
// administrator, and this administrator sees the first half.
func (p *Portal) staffCreate(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.renderError(w, r, emi.ErrStaffValidation)
		return
	}
	in := emi.StaffCreate{
		Email: strings.TrimSpace(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name")),
		Roles: rolesFrom(r.PostForm["roles"]),
	}
	out, err := p.d.Staff.Create(r.Context(), in)
	if err != nil {
		if k := emi.AsError(err).Kind; k == emi.KindForbidden || k == emi.KindInternal {
			p.renderError(w, r, err)
			return
		}
		errs, banner := fieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"email": banner}
		}
		p.render(w, r, http.StatusUnprocessableEntity, "New staff user", pages.StaffNew(in.Email, in.Name, roleOptions(in.Roles), errs))
		return
	}
	if out.Change.Status == emi.StaffChangePending {
		p.flash(r.Context(), "ok", "Proposed. The user is created when a second administrator approves on the staff page.")
		p.render(w, r, http.StatusOK, "Staff change proposed", pages.TempSecret(out.Secret, "first"))
		return
	}
	p.flash(r.Context(), "ok", "Staff user created. They choose their own password and enrol two-factor authentication at their first sign-in.")
	p.renderStaff(w, r, http.StatusOK, out.User.ID, out.Secret, "")
}

// staffDetail (GET /staff/{id}).
func (p *Portal) staffDetail(w http.ResponseWriter, r *http.Request) {
	p.renderStaff(w, r, http.StatusOK, param(r, "id"), "", "")
}

// renderStaff renders a staff user's page, with a secret just issued
// (half: "first", "second" or "" for the whole) and their pending change.
func (p *Portal) renderStaff(w http.ResponseWriter, r *http.Request, status int, id, secret, half string) {
	p.renderStaffPage(w, r, status, id, secret, half, nil)
}

// staffKept is a refused roles change: the roles as ticked and the
// messages by field (issue 23, item 5).
type staffKept struct {
	roles []emi.Role
	errs  map[string]string
}

// renderStaffPage renders a staff user's page; kept, when set, shows a
// refused roles change as it was ticked, with its reason beside it.
func (p *Portal) renderStaffPage(w http.ResponseWriter, r *http.Request, status int, id, secret, half string, kept *staffKept) {
	u, err := p.d.Staff.Get(r.Context(), id)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	roles := u.Roles
	var errs map[string]string
	if kept != nil {
		roles, errs = kept.roles, kept.errs
	}
	v := pages.StaffDetailView{Row: staffRow(u), Roles: roleOptions(roles), CanManage: canDo(r, emi.PermManageStaff),
		IsSelf: u.ID == current(r).ID, Disabled: u.Disabled, TempSecret: secret, SecretHalf: half}
	if canDo(r, emi.PermViewStaff) {
		users, err := p.d.Staff.List(r.Context())
		if err != nil {
			p.renderError(w, r, err)
			return
		}
		changes, err := p.staffChanges(r, users)
		if err != nil {
			p.renderError(w, r, err)
			return
		}
		for i, c := range changes {
			if c.StaffID == id && c.Pending {
				v.Pending = &changes[i]
			}
		}
	}
	p.render(w, r, status, u.Name, pages.StaffDetail(v, errs))
}

// staffRoles (POST /staff/{id}/roles).
func (p *Portal) staffRoles(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	if err := r.ParseForm(); err != nil {
		p.renderError(w, r, emi.ErrStaffValidation)
		return
	}
	roles := rolesFrom(r.PostForm["roles"])
	out, err := p.d.Staff.SetRoles(r.Context(), id, roles)
	if err != nil {
		switch emi.AsError(err).Kind {
		case emi.KindInvalid, emi.KindConflict:
			// The page again (422) with the roles as ticked and the reason
			// beside them, instead of the user's current roles (issue 23).
			errs, banner := fieldErrors(err)
			if errs["roles"] == "" {
				errs["roles"] = banner
			}
			p.flash(r.Context(), "bad", "The roles were not changed: "+banner)
			p.renderStaffPage(w, r, http.StatusUnprocessableEntity, id, "", "", &staffKept{roles: roles, errs: errs})
		default:
			p.flashError(w, r, err, "/backoffice/staff/"+id)
		}
		return
	}
	if out.Change.Status == emi.StaffChangePending {
		// A privileged grant reissues the credentials in two halves: this
		// administrator's half is shown once, here.
		p.flash(r.Context(), "ok", "Proposed. The new roles apply when a second administrator approves; the user then signs in with a new temporary password made of two halves, this one and the approver's.")
		p.renderStaff(w, r, http.StatusOK, id, out.Secret, "first")
		return
	}
	p.flash(r.Context(), "ok", "Roles saved. They apply at the user's next sign-in; their sessions were ended.")
	redirect(w, r, "/backoffice/staff/"+id)
}

// staffDisable (POST /staff/{id}/disable).
func (p *Portal) staffDisable(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.d.Staff.Disable, "The user was disabled and signed out everywhere.")
}

// staffEnable (POST /staff/{id}/enable).
func (p *Portal) staffEnable(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.d.Staff.Enable, "The user was enabled.")
}

// staffRevoke (POST /staff/{id}/revoke-sessions).
func (p *Portal) staffRevoke(w http.ResponseWriter, r *http.Request) {
	p.staffAction(w, r, p.d.Staff.RevokeSessions, "All sessions of the user were ended.")
}

// staffAction runs one action on the staff user of the path and returns to
// their page with a flash.
func (p *Portal) staffAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, id string) error, done string) {
	id := param(r, "id")
	if err := act(r.Context(), id); err != nil {
		p.flashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	p.flash(r.Context(), "ok", done)
	redirect(w, r, "/backoffice/staff/"+id)
}

// staffReset (POST /staff/{id}/reset) issues a temporary password (or, for
// a privileged user, proposes the reset and shows the first half), shown
// once in this answer.
func (p *Portal) staffReset(w http.ResponseWriter, r *http.Request) {
	id := param(r, "id")
	out, err := p.d.Staff.ResetCredentials(r.Context(), id)
	if err != nil {
		p.flashError(w, r, err, "/backoffice/staff/"+id)
		return
	}
	half := ""
	if out.Change.Status == emi.StaffChangePending {
		half = "first"
		p.flash(r.Context(), "ok", "Proposed. The reset takes effect when a second administrator approves; until then the user keeps their credentials.")
	}
	p.renderStaff(w, r, http.StatusOK, id, out.Secret, half)
}

// staffChangeApprove (POST /staff/changes/{change}/approve): the second
// administrator approves; the change takes effect and the second half of a
// temporary password is shown once.
func (p *Portal) staffChangeApprove(w http.ResponseWriter, r *http.Request) {
	out, err := p.d.Staff.ApproveChange(r.Context(), param(r, "change"))
	if err != nil {
		p.flashError(w, r, err, "/backoffice/staff")
		return
	}
	p.flash(r.Context(), "ok", "Approved: the change is in effect.")
	half := ""
	if out.Secret != "" {
		half = "second"
	}
	p.renderStaff(w, r, http.StatusOK, out.User.ID, out.Secret, half)
}

// staffChangeReject (POST /staff/changes/{change}/reject).
func (p *Portal) staffChangeReject(w http.ResponseWriter, r *http.Request) {
	if err := p.d.Staff.RejectChange(r.Context(), param(r, "change"), r.PostFormValue("reason")); err != nil {
		p.flashError(w, r, err, "/backoffice/staff")
		return
	}
	p.flash(r.Context(), "ok", "Rejected: nothing changed.")
	redirect(w, r, "/backoffice/staff")
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
