package portal

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/views/auth"
)

// signInPage (GET /signin).
func (p *Portal) signInPage(w http.ResponseWriter, r *http.Request) {
	if p.sessions.GetString(r.Context(), keyStage) == stageFull {
		Redirect(w, r, "/backoffice/")
		return
	}
	p.RenderBare(w, r, http.StatusOK, "Sign in", auth.SignIn("", nil))
}

// signIn (POST /signin) checks the first factor.
func (p *Portal) signIn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	res, err := p.d.Staff.SignIn(ctx, email, r.PostFormValue("password"))
	if err != nil {
		e := emi.AsError(err)
		if e.Kind == emi.KindInternal {
			p.ServerError(w, r, err)
			return
		}
		status := http.StatusUnauthorized
		if errors.Is(err, emi.ErrSignInThrottled) {
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", "900")
		}
		p.renderBareWithFlash(w, r, status, "Sign in", Message(e), auth.SignIn(email, nil))
		return
	}
	// A new token at every privilege change (ASVS 7.2.4): the pre-login
	// session id is never the signed-in one.
	if err := p.sessions.RenewToken(ctx); err != nil {
		p.ServerError(w, r, err)
		return
	}
	p.sessions.Put(ctx, keyStaff, res.Staff.ID)
	p.sessions.Put(ctx, keySignedInAt, p.d.Now().UnixNano())
	if res.MustChangePassword {
		p.sessions.Put(ctx, keyStage, stageNewPassword)
		Redirect(w, r, "/backoffice/signin/password")
		return
	}
	p.sessions.Put(ctx, keyStage, stagePassword)
	if res.NeedsEnrollment {
		Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	Redirect(w, r, "/backoffice/signin/totp")
}

func (p *Portal) renderBareWithFlash(w http.ResponseWriter, r *http.Request, status int, title, msg string, content templ.Component) {
	p.Flash(r.Context(), "bad", msg)
	p.RenderBare(w, r, status, title, content)
}

// newPasswordStaff returns the staff id of a session signed in with a
// temporary password, or "".
func (p *Portal) newPasswordStaff(r *http.Request) string {
	if p.sessions.GetString(r.Context(), keyStage) != stageNewPassword {
		return ""
	}
	return p.sessions.GetString(r.Context(), keyStaff)
}

// newPasswordPage (GET /signin/password): a user on a temporary password
// chooses their own.
func (p *Portal) newPasswordPage(w http.ResponseWriter, r *http.Request) {
	if p.newPasswordStaff(r) == "" {
		Redirect(w, r, "/backoffice/signin")
		return
	}
	p.RenderBare(w, r, http.StatusOK, "Choose your password", auth.NewPassword(nil))
}

// newPassword (POST /signin/password) sets the user's own password, then
// goes on to TOTP enrolment (or the TOTP challenge when enrolled). The
// session still holds only the first factor.
func (p *Portal) newPassword(w http.ResponseWriter, r *http.Request) {
	id := p.newPasswordStaff(r)
	if id == "" {
		Redirect(w, r, "/backoffice/signin")
		return
	}
	// The user acts on their own account only: the principal is theirs,
	// without roles.
	ctx := emi.WithPrincipal(r.Context(), emi.Principal{Type: emi.ActorStaff, ActorID: id})
	err := p.d.Staff.ChangePassword(ctx, id, r.PostFormValue("current_password"), r.PostFormValue("password"))
	if err != nil {
		e := emi.AsError(err)
		switch {
		case e.Kind == emi.KindInternal:
			p.ServerError(w, r, err)
		case errors.Is(err, emi.ErrSignInThrottled), errors.Is(err, emi.ErrSignInFailed):
			_ = p.sessions.Destroy(r.Context())
			p.renderBareWithFlash(w, r, http.StatusTooManyRequests, "Sign in", Message(e), auth.SignIn("", nil))
		default:
			errs, banner := FieldErrors(err)
			if len(errs) == 0 {
				errs = map[string]string{"password": banner}
			}
			p.RenderBare(w, r, http.StatusUnprocessableEntity, "Choose your password", auth.NewPassword(errs))
		}
		return
	}
	u, err := p.d.Staff.Current(r.Context(), id, time.Unix(0, p.sessions.GetInt64(r.Context(), keySignedInAt)))
	if err != nil {
		_ = p.sessions.Destroy(r.Context())
		p.ToSignIn(w, r, Message(emi.ErrSessionExpired))
		return
	}
	if err := p.sessions.RenewToken(r.Context()); err != nil {
		p.ServerError(w, r, err)
		return
	}
	p.sessions.Put(r.Context(), keyStage, stagePassword)
	p.Flash(r.Context(), "ok", "Your password is set.")
	if !u.TOTPEnrolled {
		Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	Redirect(w, r, "/backoffice/signin/totp")
}

// pendingStaff returns the staff id of a session that passed the password
// and waits for the second factor, or "".
func (p *Portal) pendingStaff(r *http.Request) string {
	if p.sessions.GetString(r.Context(), keyStage) != stagePassword {
		return ""
	}
	return p.sessions.GetString(r.Context(), keyStaff)
}

// totpPage (GET /signin/totp).
func (p *Portal) totpPage(w http.ResponseWriter, r *http.Request) {
	if p.pendingStaff(r) == "" {
		p.Restart(w, r)
		return
	}
	p.RenderBare(w, r, http.StatusOK, "Two-factor authentication", auth.Challenge(nil))
}

// totp (POST /signin/totp) checks the second factor.
func (p *Portal) totp(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.Restart(w, r)
		return
	}
	if err := p.d.Staff.VerifyTOTP(r.Context(), id, strings.TrimSpace(r.PostFormValue("code"))); err != nil {
		p.secondFactorFailed(w, r, err)
		return
	}
	p.completeSignIn(w, r, id, "/backoffice/")
}

// recovery (POST /signin/recovery) accepts a recovery code as second factor.
func (p *Portal) recovery(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.Restart(w, r)
		return
	}
	if err := p.d.Staff.UseRecoveryCode(r.Context(), id, strings.TrimSpace(r.PostFormValue("recovery_code"))); err != nil {
		p.secondFactorFailed(w, r, err)
		return
	}
	p.Flash(r.Context(), "info", "You signed in with a recovery code. Generate new codes on your account page if few are left.")
	p.completeSignIn(w, r, id, "/backoffice/account")
}

func (p *Portal) secondFactorFailed(w http.ResponseWriter, r *http.Request, err error) {
	e := emi.AsError(err)
	switch {
	case e.Kind == emi.KindInternal:
		p.ServerError(w, r, err)
	case errors.Is(err, emi.ErrSignInThrottled), errors.Is(err, emi.ErrSignInFailed):
		// Locked or throttled: start over.
		_ = p.sessions.Destroy(r.Context())
		p.Flash(r.Context(), "bad", Message(e))
		p.RenderBare(w, r, http.StatusTooManyRequests, "Sign in", auth.SignIn("", nil))
	default:
		p.Flash(r.Context(), "bad", Message(e))
		p.RenderBare(w, r, http.StatusUnauthorized, "Two-factor authentication", auth.Challenge(nil))
	}
}

// completeSignIn marks the session fully signed in and goes to next.
func (p *Portal) completeSignIn(w http.ResponseWriter, r *http.Request, staffID, next string) {
	if err := p.markSignedIn(r.Context(), staffID); err != nil {
		p.ServerError(w, r, err)
		return
	}
	Redirect(w, r, next)
}

// markSignedIn gives the session a new token (ASVS 7.2.4) and marks it
// fully signed in as of now, tied to the staff user so that revoking their
// sessions reaches it.
func (p *Portal) markSignedIn(ctx context.Context, staffID string) error {
	if err := p.sessions.RenewToken(ctx); err != nil {
		return err
	}
	p.sessions.Put(ctx, keyStage, stageFull)
	p.sessions.Put(ctx, keySignedInAt, p.d.Now().UnixNano())
	if p.d.TagSession == nil {
		return nil
	}
	token, _, err := p.sessions.Commit(ctx)
	if err != nil {
		return err
	}
	return p.d.TagSession(ctx, token, staffID)
}

// enrollPage (GET /signin/enroll) starts TOTP enrolment.
func (p *Portal) enrollPage(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.Restart(w, r)
		return
	}
	en, err := p.d.Staff.BeginEnrollment(r.Context(), id)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	// The QR code is rendered on the server and inlined, so no other
	// service ever sees the secret and no second request is needed.
	qr := "data:image/png;base64," + base64.StdEncoding.EncodeToString(en.QRPNG)
	p.RenderBare(w, r, http.StatusOK, "Set up two-factor authentication", auth.Enroll(en.Secret, qr, nil))
}

// enroll (POST /signin/enroll) confirms enrolment and shows recovery codes.
func (p *Portal) enroll(w http.ResponseWriter, r *http.Request) {
	id := p.pendingStaff(r)
	if id == "" {
		p.Restart(w, r)
		return
	}
	codes, err := p.d.Staff.ConfirmEnrollment(r.Context(), id, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.ServerError(w, r, err)
			return
		}
		errs := map[string]string{"code": Message(emi.AsError(err))}
		p.Flash(r.Context(), "bad", errs["code"]+" Start again with the new code below.")
		Redirect(w, r, "/backoffice/signin/enroll")
		return
	}
	if err := p.markSignedIn(r.Context(), id); err != nil {
		p.ServerError(w, r, err)
		return
	}
	p.RenderBare(w, r, http.StatusOK, "Recovery codes", auth.RecoveryCodes(codes, "/backoffice/"))
}

// signOut (POST /signout) ends the session on the server.
func (p *Portal) signOut(w http.ResponseWriter, r *http.Request) {
	if id := p.sessions.GetString(r.Context(), keyStaff); id != "" {
		if err := p.d.Staff.SignOut(r.Context(), id); err != nil {
			p.ServerError(w, r, err)
			return
		}
	}
	if err := p.sessions.Destroy(r.Context()); err != nil {
		p.ServerError(w, r, err)
		return
	}
	Redirect(w, r, "/backoffice/signin")
}
