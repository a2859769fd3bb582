package staffui

import (
	"emi/web/portal/frame"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/views/auth"
)

// signInPage (GET /signin).
func (p *Pages) signInPage(w http.ResponseWriter, r *http.Request) {
	if p.stage(r) == frame.StageFull {
		frame.Redirect(w, r, "/backoffice/")
		return
	}
	p.frame.RenderBare(w, r, http.StatusOK, "Sign in", auth.SignIn("", nil))
}

// signIn (POST /signin) checks the first factor.
func (p *Pages) signIn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	res, err := p.staff.SignIn(ctx, email, r.PostFormValue("password"))
	if err != nil {
		e := emi.AsError(err)
		if e.Kind == emi.KindInternal {
			p.frame.ServerError(w, r, err)
			return
		}
		status := http.StatusUnauthorized
		if errors.Is(err, emi.ErrSignInThrottled) {
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", "900")
		}
		p.renderBareWithFlash(w, r, status, "Sign in", frame.Message(e), auth.SignIn(email, nil))
		return
	}
	// A new token at every privilege change (ASVS 7.2.4): the pre-login
	// session id is never the signed-in one.
	stage := frame.StagePassword
	if res.MustChangePassword {
		stage = frame.StageNewPassword
	}
	if err := p.frame.AdvanceSignIn(ctx, res.Staff.ID, stage, true); err != nil {
		p.frame.ServerError(w, r, err)
		return
	}
	if res.MustChangePassword {
		frame.Redirect(w, r, "/backoffice/signin/password")
		return
	}
	if res.NeedsEnrollment {
		frame.Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	frame.Redirect(w, r, "/backoffice/signin/totp")
}

func (p *Pages) renderBareWithFlash(w http.ResponseWriter, r *http.Request, status int, title, msg string, content templ.Component) {
	p.frame.Flash(r.Context(), "bad", msg)
	p.frame.RenderBare(w, r, status, title, content)
}

// newPasswordStaff returns the staff id of a session signed in with a
// temporary password, or "".
func (p *Pages) newPasswordStaff(r *http.Request) string {
	return p.staffAt(r, frame.StageNewPassword)
}

// newPasswordPage (GET /signin/password): a user on a temporary password
// chooses their own.
func (p *Pages) newPasswordPage(w http.ResponseWriter, r *http.Request) {
	if p.newPasswordStaff(r) == "" {
		frame.Redirect(w, r, "/backoffice/signin")
		return
	}
	p.frame.RenderBare(w, r, http.StatusOK, "Choose your password", auth.NewPassword(nil))
}

// newPassword (POST /signin/password) sets the user's own password, then
// goes on to TOTP enrolment (or the TOTP challenge when enrolled). The
// session still holds only the first factor.
func (p *Pages) newPassword(w http.ResponseWriter, r *http.Request) {
	id := p.newPasswordStaff(r)
	if id == "" {
		frame.Redirect(w, r, "/backoffice/signin")
		return
	}
	// The user acts on their own account only: the principal is theirs,
	// without roles.
	ctx := emi.WithPrincipal(r.Context(), emi.Principal{Type: emi.ActorStaff, ActorID: id})
	err := p.staff.ChangePassword(ctx, id, r.PostFormValue("current_password"), r.PostFormValue("password"))
	if err != nil {
		e := emi.AsError(err)
		switch {
		case e.Kind == emi.KindInternal:
			p.frame.ServerError(w, r, err)
		case errors.Is(err, emi.ErrSignInThrottled), errors.Is(err, emi.ErrSignInFailed):
			_ = p.frame.EndSession(r.Context())
			p.renderBareWithFlash(w, r, http.StatusTooManyRequests, "Sign in", frame.Message(e), auth.SignIn("", nil))
		default:
			errs, banner := frame.FieldErrors(err)
			if len(errs) == 0 {
				errs = map[string]string{"password": banner}
			}
			p.frame.RenderBare(w, r, http.StatusUnprocessableEntity, "Choose your password", auth.NewPassword(errs))
		}
		return
	}
	u, err := p.staff.Current(r.Context(), id, p.frame.SignedInAt(r.Context()))
	if err != nil {
		_ = p.frame.EndSession(r.Context())
		p.frame.ToSignIn(w, r, frame.Message(emi.ErrSessionExpired))
		return
	}
	if err := p.frame.AdvanceSignIn(r.Context(), id, frame.StagePassword, false); err != nil {
		p.frame.ServerError(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Your password is set.")
	if !u.TOTPEnrolled {
		frame.Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	frame.Redirect(w, r, "/backoffice/signin/totp")
}

// pendingStaff returns the staff id of a session that passed the password
// and waits for the second factor, or "".
func (p *Pages) pendingStaff(r *http.Request) string {
	return p.staffAt(r, frame.StagePassword)
}

// totpPage (GET /signin/totp).
func (p *Pages) totpPage(w http.ResponseWriter, r *http.Request) {
	if p.pendingStaff(r) == "" {
		p.frame.Restart(w, r)
		return
	}
	p.frame.RenderBare(w, r, http.StatusOK, "Two-factor authentication", auth.Challenge(nil))
}

// totp (POST /signin/totp) checks the second factor.
func (p *Pages) totp(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.frame.Restart(w, r)
		return
	}
	if err := p.staff.VerifyTOTP(r.Context(), id, strings.TrimSpace(r.PostFormValue("code"))); err != nil {
		p.secondFactorFailed(w, r, err)
		return
	}
	p.completeSignIn(w, r, id, "/backoffice/")
}

// recovery (POST /signin/recovery) accepts a recovery code as second factor.
func (p *Pages) recovery(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.frame.Restart(w, r)
		return
	}
	if err := p.staff.UseRecoveryCode(r.Context(), id, strings.TrimSpace(r.PostFormValue("recovery_code"))); err != nil {
		p.secondFactorFailed(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "info", "You signed in with a recovery code. Generate new codes on your account page if few are left.")
	p.completeSignIn(w, r, id, "/backoffice/account")
}

func (p *Pages) secondFactorFailed(w http.ResponseWriter, r *http.Request, err error) {
	e := emi.AsError(err)
	switch {
	case e.Kind == emi.KindInternal:
		p.frame.ServerError(w, r, err)
	case errors.Is(err, emi.ErrSignInThrottled), errors.Is(err, emi.ErrSignInFailed):
		// Locked or throttled: start over.
		_ = p.frame.EndSession(r.Context())
		p.frame.Flash(r.Context(), "bad", frame.Message(e))
		p.frame.RenderBare(w, r, http.StatusTooManyRequests, "Sign in", auth.SignIn("", nil))
	default:
		p.frame.Flash(r.Context(), "bad", frame.Message(e))
		p.frame.RenderBare(w, r, http.StatusUnauthorized, "Two-factor authentication", auth.Challenge(nil))
	}
}

// completeSignIn marks the session fully signed in and goes to next.
func (p *Pages) completeSignIn(w http.ResponseWriter, r *http.Request, staffID, next string) {
	if err := p.frame.AdvanceSignIn(r.Context(), staffID, frame.StageFull, true); err != nil {
		p.frame.ServerError(w, r, err)
		return
	}
	frame.Redirect(w, r, next)
}

// enrollPage (GET /signin/enroll) starts TOTP enrolment.
func (p *Pages) enrollPage(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.frame.Restart(w, r)
		return
	}
	en, err := p.staff.BeginEnrollment(r.Context(), id)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	// The QR code is rendered on the server and inlined, so no other
	// service ever sees the secret and no second request is needed.
	qr := "data:image/png;base64," + base64.StdEncoding.EncodeToString(en.QRPNG)
	p.frame.RenderBare(w, r, http.StatusOK, "Set up two-factor authentication", auth.Enroll(en.Secret, qr, nil))
}

// enroll (POST /signin/enroll) confirms enrolment and shows recovery codes.
func (p *Pages) enroll(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.frame.Restart(w, r)
		return
	}
	codes, err := p.staff.ConfirmEnrollment(r.Context(), id, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.frame.ServerError(w, r, err)
			return
		}
		errs := map[string]string{"code": frame.Message(emi.AsError(err))}
		p.frame.Flash(r.Context(), "bad", errs["code"]+" Start again with the new code below.")
		frame.Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	if err := p.frame.AdvanceSignIn(r.Context(), id, frame.StageFull, true); err != nil {
		p.frame.ServerError(w, r, err)
		return
	}
	p.frame.RenderBare(w, r, http.StatusOK, "Recovery codes", auth.RecoveryCodes(codes, "/backoffice/"))
}

// signOut (POST /signout) ends the session on the server.
func (p *Pages) signOut(w http.ResponseWriter, r *http.Request) {
	if id, _ := p.frame.SignInState(r.Context()); id != "" {
		if err := p.staff.SignOut(r.Context(), id); err != nil {
			p.frame.ServerError(w, r, err)
			return
		}
	}
	if err := p.frame.EndSession(r.Context()); err != nil {
		p.frame.ServerError(w, r, err)
		return
	}
	frame.Redirect(w, r, "/backoffice/signin")
}

// stage is the session's sign-in stage.
func (p *Pages) stage(r *http.Request) string {
	_, stage := p.frame.SignInState(r.Context())
	return stage
}

// staffAt returns the session's staff member when the session is at
// stage, or "".
func (p *Pages) staffAt(r *http.Request, stage string) string {
	id, at := p.frame.SignInState(r.Context())
	if at != stage {
		return ""
	}
	return id
}
