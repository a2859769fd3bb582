package peopleui

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"emi/web/portal/frame"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/views/hosted"
	"emi/web/httpx"
)

// Limits of the hosted KYC upload: three files of at most 10 MiB plus room
// for the form's other fields and the multipart framing. The body is cut at
// kycBodyLimit before anything is parsed; parts beyond kycFormMemory go to
// temporary files, removed after the request.
const (
	kycFileLimit  = emi.MaxDocumentBytes
	kycBodyLimit  = 3*kycFileLimit + 1<<20
	kycFormMemory = 8 << 20
)

// HostedKYC returns the public identification page that kyc_init links to,
// mounted at /kyc outside the back office: no session and no sign-in (the
// secret in the URL is the capability), the back office's frame.CSP and
// cross-origin protection on the POST. Referrer-Policy no-referrer and
// Cache-Control no-store keep the secret out of other sites' logs and out
// of caches.
func (p *Pages) HostedKYC() http.Handler {
	r := chi.NewRouter()
	r.Use(p.hostedHeaders)
	r.Get("/{secret}", p.kycPage)
	r.Post("/{secret}", p.kycSubmit)
	r.NotFound(p.kycLinkInvalid)
	r.MethodNotAllowed(p.kycLinkInvalid)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.frame.Logger().Warn("cross-origin request refused", "method", r.Method, "path", "/kyc/{secret}",
			"request_id", emi.RequestMetaFrom(r.Context()).RequestID)
		p.frame.RenderHosted(w, r, http.StatusForbidden, "Not allowed",
			hosted.Message("Not allowed", "This request came from another site and was refused.", "kyc-403"))
	}))
	return cop.Handler(r)
}

// hostedHeaders are the back office's security headers, with the camera
// left to the page (the selfie input may open it).
func (p *Pages) hostedHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", frame.CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "microphone=(), geolocation=()")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Robots-Tag", "noindex, nofollow")
		if p.frame.Secure() {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		}
		next.ServeHTTP(w, r)
	})
}

// kycPage (GET /kyc/{secret}) shows the form while the session is pending,
// and what became of it afterwards.
func (p *Pages) kycPage(w http.ResponseWriter, r *http.Request) {
	secret := chi.URLParam(r, "secret")
	s, err := p.kyc.Page(r.Context(), secret)
	if err != nil {
		p.kycError(w, r, err)
		return
	}
	p.frame.RenderHosted(w, r, http.StatusOK, "Confirm your identity", hosted.KYC(kycView(s, secret)))
}

// kycSubmit (POST /kyc/{secret}) takes the multipart form: kind, consent,
// front, back and selfie. A refused upload shows the form again with the
// messages next to the fields; success redirects to the page, which then
// thanks the person.
func (p *Pages) kycSubmit(w http.ResponseWriter, r *http.Request) {
	secret := chi.URLParam(r, "secret")
	r.Body = http.MaxBytesReader(w, r.Body, kycBodyLimit)
	if err := r.ParseMultipartForm(kycFormMemory); err != nil {
		banner, status := "The upload did not arrive completely. Please choose your photos and send them again.", http.StatusBadRequest
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			banner, status = "Your files are too large: each may be at most 10 MiB.", http.StatusRequestEntityTooLarge
		}
		p.kycRefused(w, r, secret, status, banner, nil, "", false)
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	up := emi.KYCUpload{Kind: r.PostFormValue("kind"), Consent: r.PostFormValue("consent") == "yes"}
	var err error
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"front", &up.Front}, {"back", &up.Back}, {"selfie", &up.Selfie}} {
		if *f.dst, err = formFile(r, f.name); err != nil {
			p.kycRefused(w, r, secret, http.StatusBadRequest, "The upload did not arrive completely. Please choose your photos and send them again.", nil, up.Kind, up.Consent)
			return
		}
	}
	s, err := p.kyc.Submit(r.Context(), secret, up)
	switch {
	case err == nil:
		http.Redirect(w, r, "/kyc/"+url.PathEscape(secret), http.StatusSeeOther)
	case errors.Is(err, emi.ErrKYCUploadInvalid):
		errs, _ := frame.FieldErrors(err)
		p.kycRefused(w, r, secret, http.StatusUnprocessableEntity, frame.Message(emi.AsError(err)), errs, up.Kind, up.Consent)
	case errors.Is(err, emi.ErrKYCLinkUsed):
		// Sent twice (a second tab, a double tap): show what became of it.
		p.frame.RenderHosted(w, r, http.StatusConflict, "Confirm your identity", hosted.KYC(kycView(s, secret)))
	default:
		p.kycError(w, r, err)
	}
}

// formFile reads an uploaded file, at most kycFileLimit+1 bytes (the
// service refuses anything over the limit). A missing file is nil.
func formFile(r *http.Request, name string) ([]byte, error) {
	f, _, err := r.FormFile(name)
	if errors.Is(err, http.ErrMissingFile) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, kycFileLimit+1))
}

// kycRefused shows the form again with a banner and field messages; the
// choices made are kept (files cannot be: browsers never prefill them).
func (p *Pages) kycRefused(w http.ResponseWriter, r *http.Request, secret string, status int, banner string, errs map[string]string, kind string, consent bool) {
	s, err := p.kyc.Page(r.Context(), secret)
	if err != nil {
		p.kycError(w, r, err)
		return
	}
	v := kycView(s, secret)
	v.Banner, v.Errors, v.Kind, v.Consent = banner, errs, kind, consent
	p.frame.RenderHosted(w, r, status, "Confirm your identity", hosted.KYC(v))
}

func kycView(s emi.KYCSession, secret string) hosted.KYCPage {
	v := hosted.KYCPage{Action: "/kyc/" + url.PathEscape(secret), Name: strings.TrimSpace(s.UserName), Partner: s.PartnerName,
		State: "form", Expires: frame.FmtTime(s.ExpiresAt)}
	switch s.Status {
	case emi.KYCSubmitted, emi.KYCApproved, emi.KYCRejected:
		v.State = string(s.Status)
	}
	return v
}

// kycError answers an unknown or expired link with 404, anything else with
// the 500 page (the cause is logged with the request id).
func (p *Pages) kycError(w http.ResponseWriter, r *http.Request, err error) {
	switch emi.AsError(err).Kind {
	case emi.KindNotFound:
		p.kycLinkInvalid(w, r)
	case emi.KindInternal:
		httpx.Fields(r.Context()).SetError(err)
		p.frame.HostedServerError(w, r)
	default:
		p.frame.RenderHosted(w, r, httpx.Status(emi.AsError(err).Kind), "Confirm your identity",
			hosted.Message("Something is not right", frame.Message(emi.AsError(err)), "kyc-error"))
	}
}

func (p *Pages) kycLinkInvalid(w http.ResponseWriter, r *http.Request) {
	p.frame.RenderHosted(w, r, http.StatusNotFound, "Link not valid",
		hosted.Message("This link is not valid or has expired", frame.Message(emi.ErrKYCLinkInvalid), "kyc-404"))
}
