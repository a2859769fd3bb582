package frame

import (
	"context"
	"errors"
	"net/http"
	"time"

	"emi/internal/emi"
)

// CanDo reports whether the service's operation op allows the signed-in
// staff user (to show or hide a control; the service checks the same op
// again when it is used). The portal names operations, never permissions:
// which permission an operation takes is the service's rule.
func CanDo(r *http.Request, op emi.Op) bool { return op.Allowed(r.Context()) }

type userKey struct{}

// requireStaff lets a request through only with a fully signed-in session
// whose user is still enabled and whose sessions were not revoked; it puts
// the staff principal (and the user) in the context. Anyone else goes to the
// sign-in page (HX-Redirect for htmx).
func (f *Frame) requireStaff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := f.sessions.GetString(ctx, keyStaff)
		if id == "" || f.sessions.GetString(ctx, keyStage) != StageFull {
			f.Restart(w, r)
			return
		}
		at := time.Unix(0, f.sessions.GetInt64(ctx, keySignedInAt))
		u, err := f.staff.Current(ctx, id, at)
		if err != nil {
			if errors.Is(err, emi.ErrSessionExpired) || errors.Is(err, emi.ErrStaffNotFound) {
				_ = f.sessions.Destroy(ctx)
				f.ToSignIn(w, r, Message(emi.ErrSessionExpired))
				return
			}
			f.ServerError(w, r, err)
			return
		}
		if u.PasswordTemporary {
			// Defence in depth: sign-in already stops a temporary password
			// at the new-password page, so a full session on one should
			// not exist; if it does, it reaches nothing but that page.
			f.sessions.Put(ctx, keyStage, StageNewPassword)
			Redirect(w, r, "/backoffice/signin/password")
			return
		}
		roles := make([]string, len(u.Roles))
		for i, role := range u.Roles {
			roles[i] = string(role)
		}
		ctx = emi.WithPrincipal(ctx, emi.Principal{Type: emi.ActorStaff, ActorID: u.ID, StaffRoles: roles})
		ctx = context.WithValue(ctx, userKey{}, u)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Guard answers 403, saying what the operation takes, unless the service's
// operation op allows the signed-in staff member: a page or an action the
// role cannot use does not render at all. The service checks the same op
// when the handler calls it (TestRouteGuardsAreTheServiceRules proves both
// refuse the same people, for the same reason).
func (f *Frame) Guard(op emi.Op) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !f.cfg.Unguarded && !op.Allowed(r.Context()) {
				f.ErrorPage(w, r, http.StatusForbidden, Message(op.Refusal()))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Restart sends a session that is not (yet) where it asked to be back to
// its sign-in step: the new-password page when it signed in with a
// temporary password (it can reach nothing else), else the sign-in page.
func (f *Frame) Restart(w http.ResponseWriter, r *http.Request) {
	if f.sessions.GetString(r.Context(), keyStage) == StageNewPassword {
		Redirect(w, r, "/backoffice/signin/password")
		return
	}
	f.ToSignIn(w, r, "")
}

func (f *Frame) ToSignIn(w http.ResponseWriter, r *http.Request, msg string) {
	if msg != "" {
		f.Flash(r.Context(), "info", msg)
	}
	Redirect(w, r, "/backoffice/signin")
}

func Me(r *http.Request) emi.StaffUser {
	u, _ := r.Context().Value(userKey{}).(emi.StaffUser)
	return u
}

// lagTolerance lets a signed-in staff member's pages read a read replica
// (lists, searches, the audit log, statements and exports, the metrics
// pages, to take their load off the primary), with read-your-writes: a GET
// is marked lag-tolerant (emi.WithLagTolerant: the store reads a replica
// whose lag is within ReadLagBound, else the primary) unless this session
// changed something less than ReadLagBound ago; any other method records
// the time of the change first. A replica within the bound holds every
// commit older than the bound, so after it the staff member's own change is
// there. Another staff member's change may take up to the bound to show in
// a list; every decision re-reads what it decides on inside its
// transaction, on the primary, so no decision is taken on a stale row.
func (f *Frame) lagTolerance(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.cfg.ReadLagBound <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		now := f.Now()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Recorded before the handler runs (the session is saved with
			// the response's headers); readForm puts the previous value
			// back for the POSTs that only read.
			prev := f.sessions.GetInt64(ctx, keyWroteAt)
			f.sessions.Put(ctx, keyWroteAt, now.UnixNano())
			next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, wroteBeforeKey{}, prev)))
			return
		}
		if wrote := f.sessions.GetInt64(ctx, keyWroteAt); wrote == 0 || now.Sub(time.Unix(0, wrote)) >= f.cfg.ReadLagBound {
			r = r.WithContext(emi.WithLagTolerant(ctx))
		}
		next.ServeHTTP(w, r)
	})
}

// wroteBeforeKey carries, on a POST, the session's last change before
// lagTolerance recorded this request as one (unix nanoseconds, 0: none).
type wroteBeforeKey struct{}

// ReadForm marks a POST that changes nothing (a search form, POSTed so
// that what is typed stays out of URLs and logs): the session's last change
// stays what it was, so the pages after it may still read a replica, and
// the search itself may too (lagTolerance's rule for a GET).
func (f *Frame) ReadForm(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if prev, ok := ctx.Value(wroteBeforeKey{}).(int64); ok {
			if prev == 0 {
				f.sessions.Remove(ctx, keyWroteAt)
			} else {
				f.sessions.Put(ctx, keyWroteAt, prev)
			}
			if prev == 0 || f.Now().Sub(time.Unix(0, prev)) >= f.cfg.ReadLagBound {
				r = r.WithContext(emi.WithLagTolerant(ctx))
			}
		}
		next.ServeHTTP(w, r)
	})
}
