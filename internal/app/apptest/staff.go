package apptest

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

// Sandbox staff e-mails, one per role (service.SandboxStaff).
const (
	AdminEmail       = "admin@sandbox.emi"
	UnderwriterEmail = "underwriter@sandbox.emi"
	ComplianceEmail  = "compliance@sandbox.emi"
	CSEmail          = "cs@sandbox.emi"
	AuditorEmail     = "auditor@sandbox.emi"
)

// SeedStaff creates the sandbox staff users (password
// service.SandboxStaffPassword, TOTP enrolled).
func (e *Env) SeedStaff(t testing.TB) {
	t.Helper()
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, err := e.App.Staff.SeedSandbox(ctx); err != nil {
		t.Fatalf("apptest: seed staff: %v", err)
	}
}

// TOTP returns a valid, unused TOTP code of a sandbox staff user.
func (e *Env) TOTP(t testing.TB, email string) string {
	t.Helper()
	code, err := e.App.Staff.SandboxTOTPCode(context.Background(), email)
	if err != nil {
		t.Fatalf("apptest: TOTP code of %s: %v", email, err)
	}
	return code
}

// Browser is an HTTP client with a cookie jar that does not follow
// redirects, so tests see each answer.
type Browser struct {
	env    *Env
	Client *http.Client
}

// NewBrowser returns a client with an empty cookie jar.
func (e *Env) NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{env: e, Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// Page is one answer of the back office.
type Page struct {
	Status   int
	Header   http.Header
	Body     string
	Location string
}

// Get requests path (relative to the server).
func (b *Browser) Get(t testing.TB, path string, headers ...string) Page {
	t.Helper()
	return b.do(t, http.MethodGet, path, nil, headers...)
}

// Post submits a form to path. headers are pairs of name, value.
func (b *Browser) Post(t testing.TB, path string, form url.Values, headers ...string) Page {
	t.Helper()
	return b.do(t, http.MethodPost, path, form, headers...)
}

func (b *Browser) do(t testing.TB, method, path string, form url.Values, headers ...string) Page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.env.Server.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return Page{Status: res.StatusCode, Header: res.Header, Body: string(raw), Location: res.Header.Get("Location")}
}

// SignIn signs b in as a sandbox staff user with password and TOTP code and
// fails the test unless both factors pass.
func (b *Browser) SignIn(t testing.TB, email string) {
	t.Helper()
	p := b.Post(t, "/backoffice/signin", url.Values{"email": {email}, "password": {staff.SandboxStaffPassword}})
	if p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin/totp" {
		t.Fatalf("sign-in of %s: HTTP %d to %q", email, p.Status, p.Location)
	}
	p = b.Post(t, "/backoffice/signin/totp", url.Values{"code": {b.env.TOTP(t, email)}})
	if p.Status != http.StatusSeeOther || p.Location != "/backoffice/" {
		t.Fatalf("second factor of %s: HTTP %d to %q", email, p.Status, p.Location)
	}
}

// SessionCookie returns the back-office session cookie of b, or nil.
func (b *Browser) SessionCookie() *http.Cookie {
	u, _ := url.Parse(b.env.Server.URL)
	for _, c := range b.Client.Jar.Cookies(u) {
		if strings.HasSuffix(c.Name, "emi_session") {
			return c
		}
	}
	return nil
}
