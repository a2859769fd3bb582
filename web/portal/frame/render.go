package frame

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/views/components"
	"emi/views/hosted"
	"emi/views/layout"
	"emi/web/httpx"
)

// CSP allows our own scripts, styles and images only: no inline script or
// style, no eval, no plugins, no framing, forms only to ourselves.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// securityHeaders sets the headers every back-office response carries.
func (f *Frame) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		// Pages carry personal and partner data: never cached.
		h.Set("Cache-Control", "no-store")
		if f.cfg.Secure {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		}
		next.ServeHTTP(w, r)
	})
}

// page builds the frame's view model for the signed-in principal.
func (f *Frame) page(r *http.Request, title string) layout.Page {
	u, _ := r.Context().Value(userKey{}).(emi.StaffUser)
	pg := layout.Page{Title: title, UserName: u.Name, UserMail: u.Email, Search: MaskedQuery(r.URL.Query().Get("q")),
		NoHistory: r.Context().Value(noHistoryKey{}) != nil}
	for _, role := range u.Roles {
		pg.Roles = append(pg.Roles, string(role))
	}
	visible := f.visibleNav(r)
	counts := f.navCounts(r, visible)
	for _, n := range visible {
		pg.Nav = append(pg.Nav, layout.NavItem{Href: n.Href, Label: n.Label, Active: navActive(r.URL.Path, n.Href), Count: counts[n.Href]})
	}
	pg.Flashes = f.popFlashes(r.Context())
	return pg
}

// Render answers with content: only the content for an htmx request that is
// not boosted (the partial replaces part of the page), the full page in the
// frame otherwise. Vary tells caches the two differ.
func (f *Frame) Render(w http.ResponseWriter, r *http.Request, status int, title string, content templ.Component) {
	w.Header().Add("Vary", "HX-Request")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var c templ.Component
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Boosted") != "true" {
		c = content
	} else {
		c = layout.Base(f.page(r, title), content)
	}
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		httpx.Fields(r.Context()).SetError(err)
	}
}

// RenderBare renders a page without navigation (sign-in, errors before
// sign-in).
func (f *Frame) RenderBare(w http.ResponseWriter, r *http.Request, status int, title string, content templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := layout.Bare(title, f.popFlashes(r.Context()), content).Render(r.Context(), w); err != nil {
		httpx.Fields(r.Context()).SetError(err)
	}
}

// Redirect sends the browser to url after a successful POST: HX-Redirect
// for htmx, 303 See Other otherwise.
func Redirect(w http.ResponseWriter, r *http.Request, url string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", url)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, url, http.StatusSeeOther)
}

// Flash stores a message for the next page.
func (f *Frame) Flash(ctx context.Context, kind, text string) {
	f.sessions.Put(ctx, keyFlash, text)
	f.sessions.Put(ctx, keyFlashKind, kind)
}

func (f *Frame) popFlashes(ctx context.Context) []layout.Flash {
	if !f.sessionLoaded(ctx) {
		return nil
	}
	text := f.sessions.PopString(ctx, keyFlash)
	if text == "" {
		return nil
	}
	return []layout.Flash{{Kind: f.sessions.PopString(ctx, keyFlashKind), Text: text}}
}

// sessionLoaded reports whether the scs session is in ctx (it is not for
// errors raised before LoadAndSave ran).
func (f *Frame) sessionLoaded(ctx context.Context) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_ = f.sessions.Exists(ctx, keyStaff)
	return true
}

// FieldErrors turns a validation error into input name -> message, and a
// banner text for everything else the form can show.
func FieldErrors(err error) (map[string]string, string) {
	e := emi.AsError(err)
	errs := map[string]string{}
	for _, f := range e.Fields {
		name := f.Field
		if i := strings.IndexAny(name, "[."); i > 0 {
			name = name[:i] // roles[1] -> roles
		}
		if _, dup := errs[name]; !dup {
			errs[name] = f.Message
		}
	}
	return errs, Message(e)
}

// AmountFormat is the message of an amount that is not one (a decimal comma
// is an amount where it cannot be a thousands separator).
const AmountFormat = "must be an amount with at most two decimals: 12.50 or 12,50"

// KeepErrors puts a service's field errors beside the fields of a kept
// form and returns the banner: a field named with a dot (payer.name) is the
// form's payer_name, one with an index (roles[1]) is roles; a message for
// no field of the form becomes the form's general one. Messages the
// portal set already win. rename, when set, names the form field of a
// service field first (a form whose inputs are not named as the service's
// fields).
func KeepErrors(f *components.Form, err error, rename func(string) string) string {
	e := emi.AsError(err)
	for _, fe := range e.Fields {
		if rename != nil {
			fe.Field = rename(fe.Field)
		}
		name := strings.ReplaceAll(fe.Field, ".", "_")
		if _, ok := f.Values[name]; !ok {
			if i := strings.IndexAny(fe.Field, "[."); i > 0 {
				name = fe.Field[:i]
			}
		}
		if _, ok := f.Values[name]; ok {
			f.Refuse(name, fe.Message)
		} else if f.General == "" {
			f.General = fe.Field + ": " + fe.Message
		}
	}
	return Message(e)
}

// RenderError answers an error from a service for a page (not a form):
// 403, 404 or 500 pages; rule errors go back as a flash on the referring
// page's redirect target.
func (f *Frame) RenderError(w http.ResponseWriter, r *http.Request, err error) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden:
		f.ErrorPage(w, r, http.StatusForbidden, Message(e))
	case emi.KindNotFound:
		f.ErrorPage(w, r, http.StatusNotFound, Message(e))
	case emi.KindInternal:
		f.ServerError(w, r, err)
	default:
		f.ErrorPage(w, r, httpx.Status(e.Kind), Message(e))
	}
}

func (f *Frame) ServerError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.Fields(r.Context()).SetError(err)
	f.ErrorPage(w, r, http.StatusInternalServerError, "Something went wrong on our side. The error was logged.")
}

func (f *Frame) NotFound(w http.ResponseWriter, r *http.Request) {
	f.ErrorPage(w, r, http.StatusNotFound, "There is no such page.")
}

// ErrorPage renders the 403/404/500 page, in the frame when someone is
// signed in.
func (f *Frame) ErrorPage(w http.ResponseWriter, r *http.Request, status int, text string) {
	rid := ""
	if status >= 500 {
		rid = emi.RequestMetaFrom(r.Context()).RequestID
	}
	content := layout.ErrorPage(status, text, rid)
	title := map[int]string{403: "Not allowed", 404: "Not found", 500: "Error"}[status]
	if title == "" {
		title = http.StatusText(status)
	}
	if _, ok := r.Context().Value(userKey{}).(emi.StaffUser); ok {
		f.Render(w, r, status, title, content)
		return
	}
	f.RenderBare(w, r, status, title, content)
}

// Recover is the portal's panic answer.
func (f *Frame) Recover(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/kyc/") {
		httpx.Fields(r.Context()).SetError(errors.New("panic"))
		f.HostedServerError(w, r)
		return
	}
	f.ServerError(w, r, errors.New("panic"))
}

// RenderPrivate renders a page with personal data: htmx keeps no snapshot
// of it in the browser's history storage.
func (f *Frame) RenderPrivate(w http.ResponseWriter, r *http.Request, status int, title string, content templ.Component) {
	r = r.WithContext(withNoHistory(r.Context()))
	f.Render(w, r, status, title, content)
}

type noHistoryKey struct{}

func withNoHistory(ctx context.Context) context.Context {
	return context.WithValue(ctx, noHistoryKey{}, true)
}

func (f *Frame) HostedServerError(w http.ResponseWriter, r *http.Request) {
	f.RenderHosted(w, r, http.StatusInternalServerError, "Error", hosted.Message("Something went wrong on our side",
		"Please try again in a few minutes. If it happens again, tell the service you are signing up with this reference: "+
			emi.RequestMetaFrom(r.Context()).RequestID, "kyc-500"))
}

func (f *Frame) RenderHosted(w http.ResponseWriter, r *http.Request, status int, title string, content templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := hosted.Frame(title, content).Render(r.Context(), w); err != nil {
		httpx.Fields(r.Context()).SetError(err)
	}
}

// TakeNext answers a decision made with "and take the next case": the next
// case's page, or the queue, with what was recorded. A check with hits left
// to decide stays on its page instead (the caller decides that).
func (f *Frame) TakeNext(w http.ResponseWriter, r *http.Request, msg, next, queue, empty string) {
	if next == "" {
		f.Flash(r.Context(), "ok", msg+" "+empty)
		Redirect(w, r, queue)
		return
	}
	f.Flash(r.Context(), "ok", msg+" This is the next case.")
	Redirect(w, r, next)
}
