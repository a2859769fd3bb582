package portal_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// formFieldNames lists every form field name the back office reads or
// renders: the names its handlers read (FormValue and friends) and the
// name attributes of its templates. Every one of them gets the hostile
// values, on every POST route.
func formFieldNames(t *testing.T) []string {
	t.Helper()
	names := map[string]bool{}
	read := regexp.MustCompile(`(?:FormValue|Form\.Get|PostForm\.Get|Form\[|PostForm\[)\(?"([a-z_0-9]+)"`)
	attr := regexp.MustCompile(`name="([a-z_0-9]+)"`)
	for _, glob := range []string{"*.go", "../../views/*/*.templ"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, re := range []*regexp.Regexp{read, attr} {
				for _, m := range re.FindAllStringSubmatch(string(b), -1) {
					names[m[1]] = true
				}
			}
		}
	}
	var out []string
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) < 40 {
		t.Fatalf("only %d form field names found: the scan is broken", len(out))
	}
	return out
}

// portalDigest is an md5 of every row of every table but sessions (the
// session store saves every request's session, by design) and the rows
// of audit_log and signin_attempts, which record refused attempts on
// purpose (their successful rows are counted instead), leaving out the
// columns of portalVolatile.
func portalDigest(t *testing.T, env *apptest.Env) map[string]string {
	return env.TableDigest(t, apptest.DigestOptions{
		Skip: map[string]string{
			"sessions":        "the session store saves every request's session",
			"audit_log":       "refused attempts are audited on purpose",
			"signin_attempts": "refused sign-ins are recorded on purpose",
			"rate_events":     "atomic limits count refused attempts on purpose (sign-in, reveals)",
		},
		Volatile: portalVolatile,
		Extra: []string{
			`SELECT 'audit_log successes', count(*)::text FROM audit_log WHERE outcome = 'success'`,
			`SELECT 'signin_attempts successes', count(*)::text FROM signin_attempts WHERE success`,
		},
	})
}

// portalVolatile are columns that a refused back-office request changes on
// purpose.
var portalVolatile = map[string][]string{
	// A wrong password at a step-up (card reveal, password change) counts
	// toward the account lockout (S3).
	"staff_users": {"failed_attempts", "locked_until"},
	// Any request of the assignee keeps their claim on an application
	// alive (ClaimTTL), a refused decision too.
	"applications": {"last_activity_at"},
}

// TestHostileBackOfficeForms posts hostile form values (100 kB each, so
// a body of several MB; invalid UTF-8; NUL; hostile numbers) in every
// field the back office knows to every POST route found by walking the
// router, as a signed-in staff member allowed to use the route (same
// origin, so cross-origin protection lets it through). The answer is
// never a 5xx, and a refused request changes nothing.
func TestHostileBackOfficeForms(t *testing.T) {
	t.Parallel()
	start := time.Now()
	f := newFixture(t)
	fields := formFieldNames(t)
	// Every POST route is allowed to one of these (TestRoleRouteMatrix);
	// the auditor, whom the staff actions target, is left out.
	roles := []string{apptest.AdminEmail, apptest.CSEmail, apptest.ComplianceEmail, apptest.UnderwriterEmail}
	browsers := map[string]*apptest.Browser{}
	signIn := func(role string) {
		b := f.env.NewBrowser()
		b.SignIn(t, role)
		browsers[role] = b
	}
	for _, r := range roles {
		signIn(r)
	}
	anonymous := f.env.NewBrowser()
	// only > 0 puts the value in that many fields (the first ones) only.
	type hostileValue struct {
		what, v string
		only    int
	}
	values := []hostileValue{
		{"100 kB values", strings.Repeat("A", 100<<10), 0},
		{"invalid UTF-8", "\xff\xfe\xc3\x28", 0},
		{"NUL", "a\x00b", 0},
		{"huge number", "1e309", 0},
		{"2^63", "9223372036854775808", 0},
		{"negative", "-1", 0},
		{"SQL", `' OR '1'='1`, 0},
	}
	if os.Getenv("EMI_SOAK") == "1" {
		values = append(values,
			// 9 MB, under the 10 MB Go parses of a form.
			hostileValue{"1 MB values", strings.Repeat("B", 1<<20), 9},
			// Over it: the form cannot be read, 400.
			hostileValue{"11 MB value", strings.Repeat("C", 11<<20), 1},
			hostileValue{"tiny number", "1e-400", 0},
			hostileValue{"overlong UTF-8 NUL", "\xc0\x80", 0},
			hostileValue{"markup", `<script>alert(1)</script>`, 0})
	}
	same := []string{"Sec-Fetch-Site", "same-origin", "Origin", f.env.Server.URL}
	sent, routesSwept := 0, 0
	allowedRole := map[string]string{}
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if method != http.MethodPost {
			continue
		}
		switch route {
		case "/signout", "/account/signout-everywhere":
			continue // take no input; they end the sweep's own sessions
		}
		routesSwept++
		for _, val := range values {
			form := url.Values{}
			for i, n := range fields {
				if val.only > 0 && i >= val.only {
					break
				}
				form.Set(n, val.v)
			}
			// The first role the route does not refuse with 403; the
			// sign-in routes as an anonymous visitor.
			var p apptest.Page
			who := "anonymous"
			before := portalDigest(t, f.env)
			if strings.HasPrefix(route, "/signin") {
				p = anonymous.Post(t, f.path(route), form, same...)
				sent++
			} else if role, ok := allowedRole[route]; ok {
				p = browsers[role].Post(t, f.path(route), form, same...)
				sent++
				who = role
			} else {
				for _, role := range roles {
					p = browsers[role].Post(t, f.path(route), form, same...)
					sent++
					who = role
					if p.Status != http.StatusForbidden {
						allowedRole[route] = role
						break
					}
				}
			}
			after := portalDigest(t, f.env)
			if p.Status >= 500 {
				t.Errorf("POST %s with %s as %s: HTTP %d: %.300s", route, val.what, who, p.Status, p.Body)
			}
			if p.Status >= 400 {
				if changed := apptest.ChangedTables(before, after); len(changed) > 0 {
					t.Errorf("POST %s with %s as %s: refused (HTTP %d) but changed %v", route, val.what, who, p.Status, changed)
				}
			}
		}
		// An accepted hostile request may have ended a sweep's session:
		// sign in again if it did, so the rest is not swept as anonymous.
		for _, role := range roles {
			if g := browsers[role].Get(t, "/backoffice/account"); g.Status != http.StatusOK {
				signIn(role)
			}
		}
	}
	if routesSwept < 40 {
		t.Fatalf("only %d POST routes swept: the walk is broken", routesSwept)
	}
	t.Logf("back-office hostile sweep: %d POST routes, %d fields, %d requests, %s", routesSwept, len(fields), sent, time.Since(start).Round(time.Millisecond))
}

// TestHostileBackOfficeRefusesNULAndInvalidUTF8 is the regression test of
// the 500s the sweep found: a NUL or invalid UTF-8 in a form or query
// value reached PostgreSQL (sign-in, account block, card and review-view
// forms); now the back office answers 400 and changes nothing.
func TestHostileBackOfficeRefusesNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	env.SeedStaff(t)
	same := []string{"Sec-Fetch-Site", "same-origin"}
	for _, v := range []string{"a\x00b", "\xff\xfe"} {
		p := env.NewBrowser().Post(t, "/backoffice/signin", url.Values{"email": {apptest.AdminEmail + v}, "password": {"x"}}, same...)
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "not allowed") {
			t.Errorf("sign-in with %q: HTTP %d, want 400", v, p.Status)
		}
	}
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	before := portalDigest(t, env)
	for _, path := range []string{"/backoffice/review/views", "/backoffice/cards"} {
		for _, v := range []string{"a\x00b", "\xff\xfe"} {
			p := admin.Post(t, path, url.Values{"name": {v}, "query": {v}, "q": {v}}, same...)
			if p.Status != http.StatusBadRequest {
				t.Errorf("POST %s with %q: HTTP %d, want 400", path, v, p.Status)
			}
		}
	}
	for _, q := range []string{"%00", "%ff%fe"} {
		for _, path := range []string{"/backoffice/search?q=", "/backoffice/users?q=", "/backoffice/cards?q=", "/backoffice/audit?actor="} {
			if p := admin.Get(t, path+q); p.Status != http.StatusBadRequest {
				t.Errorf("GET %s%s: HTTP %d, want 400", path, q, p.Status)
			}
		}
	}
	after := portalDigest(t, env)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("refused requests changed %s", k)
		}
	}
	// Ordinary text still passes.
	if p := admin.Get(t, "/backoffice/search?q=Mara"); p.Status != http.StatusOK {
		t.Errorf("search: HTTP %d", p.Status)
	}
}

// TestHostileHostedKYCPage sends hostile link secrets and multipart
// fields (NUL, invalid UTF-8, 100 kB) to the hosted KYC page, on an open
// link and on unknown ones: never a 5xx, and a refused upload changes
// nothing.
func TestHostileHostedKYCPage(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Hosted"})
	user := createPerson(t, env, p, map[string]any{"first_name": "Mara", "last_name": "Velikova", "mobile_phone": "+359888123456"})
	_, secret := startKYC(t, env, p, user)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, fields map[string]string) (int, string) {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		fw, _ := mw.CreateFormFile("front", "a\x00.png")
		_, _ = fw.Write(pngFile(t))
		_ = mw.Close()
		var rd io.Reader
		if method == http.MethodPost {
			rd = &body
		}
		req, err := http.NewRequest(method, env.Server.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodPost {
			req.Header.Set("Content-Type", mw.FormDataContentType())
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	sent := 0
	for _, s := range []string{secret, "%00", secret + "%00", "%ff%fe", url.PathEscape(`' OR '1'='1`), strings.Repeat("a", 5000)} {
		for _, v := range []string{"a\x00b", "\xff\xfe", strings.Repeat("A", 100<<10), "passport"} {
			fields := map[string]string{"kind": v, "consent": v}
			if v == "passport" {
				fields["consent"] = "a\x00b"
			}
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				before := portalDigest(t, env)
				status, body := send(method, "/kyc/"+s, fields)
				sent++
				if s == secret && method == http.MethodPost && status != http.StatusUnprocessableEntity && status != http.StatusBadRequest {
					t.Errorf("POST to the open link with %.20q: HTTP %d, want the upload refused (400 or 422)", v, status)
				}
				if status >= 500 {
					t.Errorf("%s /kyc/%.40s with %.20q: HTTP %d: %.300s", method, s, v, status, body)
				}
				if status >= 400 {
					after := portalDigest(t, env)
					for k, h := range before {
						if after[k] != h {
							t.Errorf("%s /kyc/%.40s with %.20q: refused (HTTP %d) but changed %s", method, s, v, status, k)
						}
					}
				}
			}
		}
	}
	t.Logf("hosted KYC: %d requests", sent)
}
