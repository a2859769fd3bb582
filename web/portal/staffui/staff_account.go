package staffui

import (
	"emi/web/portal/frame"
	"net/http"
	"strings"

	"emi/internal/emi"
	"emi/views/auth"
	"emi/views/staffview"
)

// The signed-in staff user's own page: password, recovery codes, signing
// out every session.

// account (GET /account) is the signed-in user's own page.
func (p *Pages) account(w http.ResponseWriter, r *http.Request) {
	p.renderAccount(w, r, http.StatusOK, nil)
}

func (p *Pages) renderAccount(w http.ResponseWriter, r *http.Request, status int, errs map[string]string) {
	u := frame.Me(r)
	roles := make([]string, len(u.Roles))
	for i, role := range u.Roles {
		roles[i] = string(role)
	}
	p.frame.Render(w, r, status, "Your account", staffview.Account(u.Name, u.Email, strings.Join(roles, ", "), errs))
}

// changePassword (POST /account/password).
func (p *Pages) changePassword(w http.ResponseWriter, r *http.Request) {
	u := frame.Me(r)
	err := p.staff.ChangePassword(r.Context(), u.ID, r.PostFormValue("current_password"), r.PostFormValue("password"))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.frame.ServerError(w, r, err)
			return
		}
		errs, banner := frame.FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"current_password": banner}
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, errs)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Your password was changed.")
	frame.Redirect(w, r, "/backoffice/account")
}

// regenerateCodes (POST /account/recovery-codes) needs a fresh TOTP code.
func (p *Pages) regenerateCodes(w http.ResponseWriter, r *http.Request) {
	u := frame.Me(r)
	codes, err := p.staff.RegenerateRecoveryCodes(r.Context(), u.ID, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.frame.ServerError(w, r, err)
			return
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, map[string]string{"code": frame.Message(emi.AsError(err))})
		return
	}
	p.frame.Render(w, r, http.StatusOK, "Recovery codes", auth.RecoveryCodes(codes, "/backoffice/account"))
}

// signOutEverywhere (POST /account/signout-everywhere) ends every session
// of the user, this one included.
func (p *Pages) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if err := p.staff.RevokeSessions(r.Context(), frame.Me(r).ID); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	_ = p.frame.EndSession(r.Context())
	frame.Redirect(w, r, "/backoffice/signin")
}
