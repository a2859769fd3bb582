package portal

import (
	"net/http"
	"strings"

	"emi/internal/emi"
	"emi/views/auth"
	"emi/views/pages"
)

// The signed-in staff user's own page: password, recovery codes, signing
// out every session.

// account (GET /account) is the signed-in user's own page.
func (p *Portal) account(w http.ResponseWriter, r *http.Request) {
	p.renderAccount(w, r, http.StatusOK, nil)
}

func (p *Portal) renderAccount(w http.ResponseWriter, r *http.Request, status int, errs map[string]string) {
	u := Me(r)
	roles := make([]string, len(u.Roles))
	for i, role := range u.Roles {
		roles[i] = string(role)
	}
	p.Render(w, r, status, "Your account", pages.Account(u.Name, u.Email, strings.Join(roles, ", "), errs))
}

// changePassword (POST /account/password).
func (p *Portal) changePassword(w http.ResponseWriter, r *http.Request) {
	u := Me(r)
	err := p.d.Staff.ChangePassword(r.Context(), u.ID, r.PostFormValue("current_password"), r.PostFormValue("password"))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.ServerError(w, r, err)
			return
		}
		errs, banner := FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"current_password": banner}
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, errs)
		return
	}
	p.Flash(r.Context(), "ok", "Your password was changed.")
	Redirect(w, r, "/backoffice/account")
}

// regenerateCodes (POST /account/recovery-codes) needs a fresh TOTP code.
func (p *Portal) regenerateCodes(w http.ResponseWriter, r *http.Request) {
	u := Me(r)
	codes, err := p.d.Staff.RegenerateRecoveryCodes(r.Context(), u.ID, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.ServerError(w, r, err)
			return
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, map[string]string{"code": Message(emi.AsError(err))})
		return
	}
	p.Render(w, r, http.StatusOK, "Recovery codes", auth.RecoveryCodes(codes, "/backoffice/account"))
}

// signOutEverywhere (POST /account/signout-everywhere) ends every session
// of the user, this one included.
func (p *Portal) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if err := p.d.Staff.RevokeSessions(r.Context(), Me(r).ID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	_ = p.sessions.Destroy(r.Context())
	Redirect(w, r, "/backoffice/signin")
}
