package portal_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
	"emi/web/portal"
	"emi/web/portal/frame"
)

// fixture is an environment with sandbox staff, one partner with a key, and
// the ids that fill the routes' {id} and {key}.
type fixture struct {
	env      *apptest.Env
	partner  *apptest.Partner
	targetID string // a staff user that actions may be applied to (auditor)
	// endpointID and deliveryID fill {ep} and {delivery}: the fixture
	// partner's webhook endpoint and a delivery of a test event to it.
	endpointID, deliveryID string
	// people fills {user}, {doc}, {check} and {session}: a person with a
	// document, an AML check with hits and a submitted KYC session.
	people peopleFixture
	// onboarding fills {application}, {member} and {entry}: an application
	// with its UBO, and a name on the adverse-media watch list.
	onboarding onboardingFixture
	// view fills {view}: a saved queue view of the underwriter.
	view string
	// account fills {account}: an EUR account of the fixture's person.
	account string
	// card fills {card}: a virtual card on that account.
	card string
	// transfer fills {transfer}: a pending outgoing payment of that
	// account (funded and paid out in full, so its balance is zero).
	transfer string
	// alert fills {alert}: a monitoring alert about the person (a large
	// credit and its payment out, imported a day ago); {code} is a rule.
	alert string
	// caseToken fills {case}: a case of compliance about the person
	// (opened from the alert), with a document ({document}).
	caseToken, document string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	f := &fixture{env: env, partner: env.NewPartner(t, emi.PartnerCreate{Name: "Fixture Partner", WebhookURL: "http://127.0.0.1:9/hooks"})}
	if err := env.App.DB.Get(&f.targetID, `SELECT id FROM staff_users WHERE email = $1`, apptest.AuditorEmail); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.Get(&f.endpointID, `SELECT id FROM webhook_endpoints WHERE partner_id = $1`, f.partner.ID); err != nil {
		t.Fatal(err)
	}
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, err := env.App.Webhooks.SendTest(ctx, f.partner.ID, f.endpointID); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.Get(&f.deliveryID, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1`, f.endpointID); err != nil {
		t.Fatal(err)
	}
	f.people = newPeopleFixture(t, env, f.partner)
	f.onboarding = newOnboardingFixture(t, env, f.partner)
	v, err := env.App.Review.SaveView(staffCtx(t, env, apptest.UnderwriterEmail), "fixture view", "risk=High")
	if err != nil {
		t.Fatal(err)
	}
	f.view = v.ID
	f.account = openAccount(t, env, f.partner, map[string]any{"program": "account_eur", "user": f.people.user})["token"].(string)
	f.card = issueCard(t, env, f.partner, emi.CardCreate{Account: f.account, Type: emi.CardVirtual}).Token
	var bal string
	if err := env.App.DB.Get(&bal, `SELECT token FROM balances WHERE account = $1`, f.account); err != nil {
		t.Fatal(err)
	}
	env.Fund(t, f.account, bal, "EUR", 100)
	f.transfer = payExternal(t, env, f.partner, f.account, "1.00", "Fixture Payee", "fixture")
	at := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	history := `{"ref":"in","at":"` + at + `","kind":"incoming","account":"` + f.account + `","amount":"20000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payer"}}` + "\n" +
		`{"ref":"out","at":"` + at + `","kind":"transfer_out","account":"` + f.account + `","amount":"20000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Payer"}}` + "\n"
	if res, err := env.App.HistoryImport.Import(context.Background(), f.partner.ID, strings.NewReader(history)); err != nil || res.Booked != 2 {
		t.Fatalf("import the fixture's history: %+v %v", res, err)
	}
	if err := env.App.DB.Get(&f.alert, `SELECT token FROM monitoring_alerts WHERE subject_token = $1`, f.people.user); err != nil {
		t.Fatal(err)
	}
	f.caseToken, f.document = newCaseFixture(t, env, f.alert)
	return f
}

// newCaseFixture opens a case from the person's alert (its page stays)
// and attaches a document.
func newCaseFixture(t *testing.T, env *apptest.Env, alert string) (caseToken, document string) {
	t.Helper()
	officer := staffCtx(t, env, apptest.ComplianceEmail)
	c, err := env.App.Cases.OpenCase(officer, []string{alert}, "fixture")
	if err != nil {
		t.Fatalf("open the fixture's case: %v", err)
	}
	d, err := env.App.Cases.AttachDocument(officer, c.Token, "note.txt", []byte("fixture evidence"))
	if err != nil {
		t.Fatalf("attach the fixture's document: %v", err)
	}
	// An approved report's file for GET report.xml (the approval itself
	// is tested in servicetest and the browser).
	var officerID string
	if err := env.App.DB.Get(&officerID, `SELECT id FROM staff_users WHERE email = $1`, apptest.ComplianceEmail); err != nil {
		t.Fatal(err)
	}
	rep := kernel.NewToken()
	enc, err := env.App.Keys.Seal([]byte(`<?xml version="1.0" encoding="UTF-8"?><report/>`), monitoring.ReportContext(rep))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`INSERT INTO monitoring_reports (token, case_token, status, narrative, drafted_by, drafted_at,
		approved_by, approved_at, xml_enc) VALUES ($1, $2, 'approved', 'fixture', $3, now(), $3, now(), $4)`, rep, c.Token, officerID, enc); err != nil {
		t.Fatal(err)
	}
	return c.Token, d.Token
}

// path fills a route pattern with the fixture's ids.
func (f *fixture) path(route string) string {
	r := strings.NewReplacer("{id}", f.idFor(route), "{key}", f.partner.KeyID, "{ep}", f.endpointID, "{delivery}", f.deliveryID,
		"{user}", f.people.user, "{doc}", f.people.doc, "{check}", f.people.check, "{session}", f.people.session,
		"{application}", f.onboarding.application, "{member}", f.onboarding.member, "{entry}", f.onboarding.entry,
		"{view}", f.view, "{account}", f.account, "{card}", f.card, "{program}", "account_eur", "{transfer}", f.transfer,
		"{alert}", f.alert, "{code}", "large_amount", "{case}", f.caseToken, "{document}", f.document)
	return "/backoffice" + r.Replace(route)
}

func (f *fixture) idFor(route string) string {
	if strings.HasPrefix(route, "/partners/") {
		return f.partner.ID
	}
	return f.targetID
}

// routes lists every back-office route as "METHOD /pattern".
func routes(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	var out []string
	if err := env.App.Portal().Walk(func(method, route string) error {
		out = append(out, method+" "+route)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// rowCounts returns the row count of every table.
func rowCounts(t *testing.T, env *apptest.Env) map[string]int {
	t.Helper()
	var tables []string
	if err := env.App.DB.Select(&tables, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, tb := range tables {
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM "`+tb+`"`); err != nil {
			t.Fatal(err)
		}
		counts[tb] = n
	}
	return counts
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// S2: every state-changing route refuses cross-site requests, by Fetch
// Metadata and by Origin, and changes nothing.
func TestEveryStateChangeRefusesCrossOriginRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	posts := 0
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions {
			continue
		}
		posts++
		for _, hdr := range [][]string{
			{"Sec-Fetch-Site", "cross-site"},
			{"Origin", "http://evil.invalid"},
			{"Sec-Fetch-Site", "same-site", "Origin", "http://sub.evil.invalid"},
		} {
			before := rowCounts(t, f.env)
			p := admin.Post(t, f.path(route), url.Values{"name": {"evil"}, "email": {"evil@example.com"}, "processing": {"semi-automatic"}}, hdr...)
			if p.Status != http.StatusForbidden || !strings.Contains(p.Body, "another site") {
				t.Errorf("%s with %v: HTTP %d, want the 403 cross-origin page", rt, hdr, p.Status)
			}
			if after := rowCounts(t, f.env); !sameCounts(before, after) {
				t.Errorf("%s with %v changed row counts: %v -> %v", rt, hdr, before, after)
			}
		}
	}
	if posts < 15 {
		t.Fatalf("only %d state-changing routes found: the walk is broken", posts)
	}
	// The same-origin request is not refused as cross-origin.
	p := admin.Post(t, "/backoffice/partners", url.Values{"name": {"Same Origin Ltd"}}, "Sec-Fetch-Site", "same-origin", "Origin", f.env.Server.URL)
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "data-testid=\"api-secret\"") {
		t.Fatalf("same-origin partner creation: HTTP %d", p.Status)
	}
}

// S2: no GET route changes anything, called by an admin.
func TestGetRoutesChangeNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if method != http.MethodGet {
			continue
		}
		before := rowCounts(t, f.env)
		admin.Get(t, f.path(route))
		after := rowCounts(t, f.env)
		if route == "/documents/{doc}" || route == "/accounts/{account}/statement.csv" {
			// Viewing an identity document, and exporting a statement, is
			// audited on purpose: one audit row, nothing else.
			before["audit_log"]++
		}
		// Sign-in pages may not be reached by a signed-in user; every count
		// must stay the same in any case.
		if !sameCounts(before, after) {
			t.Errorf("GET %s changed row counts: %v -> %v", route, before, after)
		}
	}
}

// access says what a role gets on a route.
type access int

const (
	allow    access = iota
	deny            // 403 page
	toSignIn        // redirect to the sign-in page
	public          // served to anyone
)

// S4: every route × every role. A route missing here fails the test, so a
// new screen must say who may use it.
func TestRoleRouteMatrix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	roles := []string{"anonymous", apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail}
	allowed := routeRoles()
	publicRoutes := map[string]bool{
		"GET /signin": true, "POST /signin": true, "GET /signin/totp": true, "POST /signin/totp": true,
		"POST /signin/recovery": true, "GET /signin/enroll": true, "POST /signin/enroll": true, "POST /signout": true,
		"GET /signin/password": true, "POST /signin/password": true,
	}
	browsers := map[string]*apptest.Browser{}
	for _, r := range roles {
		b := f.env.NewBrowser()
		if r != "anonymous" {
			b.SignIn(t, r)
		}
		browsers[r] = b
	}
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if publicRoutes[rt] {
			continue
		}
		who, ok := allowed[rt]
		if !ok {
			t.Errorf("route %s is not in the role matrix: say who may use it", rt)
			continue
		}
		for _, role := range roles {
			want := deny
			switch {
			case role == "anonymous":
				want = toSignIn
			case who[0] == "*":
				want = allow
			default:
				for _, w := range who {
					if w == role {
						want = allow
					}
				}
			}
			if want == allow && method != http.MethodGet {
				continue // allowed actions are exercised by their own tests
			}
			b := browsers[role]
			var p apptest.Page
			if method == http.MethodGet {
				p = b.Get(t, f.path(route))
			} else {
				p = b.Post(t, f.path(route), url.Values{"roles": {"admin"}, "processing": {"automatic"}, "name": {"x"}})
			}
			switch want {
			case toSignIn:
				if p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin" {
					t.Errorf("%s as anonymous: HTTP %d to %q, want the sign-in page", rt, p.Status, p.Location)
				}
			case deny:
				if p.Status != http.StatusForbidden || !strings.Contains(p.Body, `data-testid="error-403"`) {
					t.Errorf("%s as %s: HTTP %d, want 403", rt, role, p.Status)
				}
			case allow:
				if p.Status != http.StatusOK {
					t.Errorf("%s as %s: HTTP %d, want 200", rt, role, p.Status)
				}
			}
		}
	}
	// Nothing a denied role sent changed anything: the fixture's partner key
	// still works and the auditor still has exactly their role.
	var roles2 []string
	if err := f.env.App.DB.Select(&roles2, `SELECT unnest(roles) FROM staff_users WHERE id = $1`, f.targetID); err != nil || strings.Join(roles2, ",") != "auditor" {
		t.Fatalf("auditor roles after forged requests: %v %v", roles2, err)
	}
	// Nor did it change a program.
	var programChanges int
	if err := f.env.App.DB.Get(&programChanges, `SELECT count(*) FROM audit_log WHERE resource_type = 'program'`); err != nil || programChanges != 0 {
		t.Fatalf("program changes after forged requests: %d %v", programChanges, err)
	}
	// Nor did it change the account: active, with its opening only.
	var changes int
	if err := f.env.App.DB.Get(&changes, `SELECT count(*) FROM account_status_history WHERE account = $1`, f.account); err != nil || changes != 1 {
		t.Fatalf("account history after forged requests: %d rows %v", changes, err)
	}
	var pending int
	if err := f.env.App.DB.Get(&pending, `SELECT count(*) FROM control_requests WHERE subject = 'account:' || $1 AND status = 'pending'`, f.account); err != nil || pending != 0 {
		t.Fatalf("termination requests after forged requests: %d %v", pending, err)
	}
	// Nor the outgoing payment: still pending.
	var transferStatus string
	if err := f.env.App.DB.Get(&transferStatus, `SELECT status FROM transfers WHERE token = $1`, f.transfer); err != nil || transferStatus != "pending" {
		t.Fatalf("outgoing payment after forged requests: %q %v", transferStatus, err)
	}
	// Nor the card: its issue is its only history, nothing was revealed.
	if err := f.env.App.DB.Get(&changes, `SELECT count(*) FROM card_history WHERE card = $1`, f.card); err != nil || changes != 1 {
		t.Fatalf("card history after forged requests: %d rows %v", changes, err)
	}
	var reveals int
	if err := f.env.App.DB.Get(&reveals, `SELECT count(*) FROM audit_log WHERE action = 'card.reveal' AND resource_token = $1 AND outcome = 'success'`,
		f.card); err != nil || reveals != 0 {
		t.Fatalf("successful reveals after forged requests: %d %v", reveals, err)
	}
}

// S5: every page carries the security headers; the CSP has the required
// directives and no unsafe sources for scripts.
func TestSecurityHeadersOnEveryPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	anon := f.env.NewBrowser()
	check := func(what string, p apptest.Page) {
		t.Helper()
		csp := p.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s: CSP %q lacks %q", what, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows unsafe sources: %q", what, csp)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
			"X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
			if got := p.Header.Get(h); got != want {
				t.Errorf("%s: %s = %q, want %q", what, h, got, want)
			}
		}
		if inlineScript.MatchString(p.Body) {
			t.Errorf("%s: inline script or event handler in the page: %q", what, inlineScript.FindString(p.Body))
		}
	}
	check("sign-in", anon.Get(t, "/backoffice/signin"))
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if method == http.MethodGet && route == "/documents/{doc}" {
			checkDocumentHeaders(t, admin.Get(t, f.path(route)))
			continue
		}
		if method == http.MethodGet {
			check(route, admin.Get(t, f.path(route)))
		}
	}
	check("404", admin.Get(t, "/backoffice/no-such-page"))
}

// inlineScript finds a <script> without src or an on* event attribute.
// An inline style attribute is refused by the CSP too (style-src 'self').
var inlineScript = regexp.MustCompile(`<script(\s[^>]*)?>[^<]|<script>|\son[a-z]+="|\sstyle="`)

// S1: session hygiene.
func TestSessionHygiene(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.env.NewBrowser()
	// A failed attempt leaves a pre-sign-in session (with its flash).
	b.Post(t, "/backoffice/signin", url.Values{"email": {apptest.AdminEmail}, "password": {"wrong password 1"}})
	before := b.SessionCookie()
	b.SignIn(t, apptest.AdminEmail)
	after := b.SessionCookie()
	if after == nil {
		t.Fatal("no session cookie after sign-in")
	}
	if before == nil || before.Value == after.Value {
		t.Fatalf("the session token did not change at sign-in (before %v)", before)
	}

	t.Run("the cookie is HttpOnly, SameSite=Lax, Path=/, without Domain and not persistent", func(t *testing.T) {
		// Inspect the Set-Cookie of a fresh sign-in.
		c := f.env.NewBrowser()
		pg := c.Post(t, "/backoffice/signin", url.Values{"email": {apptest.CSEmail}, "password": {"Sandbox-Staff-2026"}})
		raw := strings.Join(pg.Header.Values("Set-Cookie"), "\n")
		for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
			if !strings.Contains(raw, want) {
				t.Errorf("Set-Cookie %q lacks %s", raw, want)
			}
		}
		for _, bad := range []string{"Domain=", "Max-Age=", "Expires="} {
			if strings.Contains(raw, bad) {
				t.Errorf("Set-Cookie %q has %s", raw, bad)
			}
		}
	})
	t.Run("the token has 256 bits and is not stored in the sessions table", func(t *testing.T) {
		if len(after.Value) < 43 {
			t.Fatalf("token %d characters, want >= 43 (256 bits base64url)", len(after.Value))
		}
		var n int
		h := sha256.Sum256([]byte(after.Value))
		_ = f.env.App.DB.Get(&n, `SELECT count(*) FROM sessions WHERE token_hash = $1`, h[:])
		if n != 1 {
			t.Fatalf("no row under the token's hash (%d)", n)
		}
		_ = f.env.App.DB.Get(&n, `SELECT count(*) FROM sessions WHERE encode(token_hash, 'escape') LIKE '%' || $1 || '%'
		                             OR encode(data, 'escape') LIKE '%' || $1 || '%'`, after.Value)
		if n != 0 {
			t.Fatal("the raw token is stored in the sessions table")
		}
	})
	t.Run("after sign-out the old cookie is worthless", func(t *testing.T) {
		c := f.env.NewBrowser()
		c.SignIn(t, apptest.ComplianceEmail)
		old := *c.SessionCookie()
		if p := c.Post(t, "/backoffice/signout", nil); p.Status != http.StatusSeeOther {
			t.Fatalf("sign-out: HTTP %d", p.Status)
		}
		replay := f.env.NewBrowser()
		u, _ := url.Parse(f.env.Server.URL)
		replay.Client.Jar.SetCookies(u, []*http.Cookie{&old})
		if p := replay.Get(t, "/backoffice/"); p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin" {
			t.Fatalf("old cookie after sign-out: HTTP %d to %q", p.Status, p.Location)
		}
	})
	t.Run("disabling a user ends their open session on the next request", func(t *testing.T) {
		victim := f.env.NewBrowser()
		victim.SignIn(t, apptest.AuditorEmail)
		if p := victim.Get(t, "/backoffice/audit"); p.Status != http.StatusOK {
			t.Fatalf("auditor before: HTTP %d", p.Status)
		}
		admin := f.env.NewBrowser()
		admin.SignIn(t, apptest.AdminEmail)
		if p := admin.Post(t, "/backoffice/staff/"+f.targetID+"/disable", url.Values{}); p.Status != http.StatusSeeOther {
			t.Fatalf("disable: HTTP %d", p.Status)
		}
		if p := victim.Get(t, "/backoffice/audit"); p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin" {
			t.Fatalf("disabled auditor: HTTP %d to %q", p.Status, p.Location)
		}
		ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
		_ = f.env.App.Staff.Enable(ctx, f.targetID)
	})
	// Last: it moves the clock, and scs stamps new sessions with the real one.
	t.Run("30 minutes idle end the session", func(t *testing.T) {
		c := f.env.NewBrowser()
		c.SignIn(t, apptest.UnderwriterEmail)
		f.env.Clock.Advance(29 * time.Minute)
		if p := c.Get(t, "/backoffice/"); p.Status != http.StatusOK {
			t.Fatalf("after 29 min: HTTP %d", p.Status)
		}
		f.env.Clock.Advance(31 * time.Minute)
		if p := c.Get(t, "/backoffice/"); p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin" {
			t.Fatalf("after 31 idle minutes: HTTP %d to %q", p.Status, p.Location)
		}
	})
}

// S1/S5 behind HTTPS: with an https public URL the session cookie is
// __Host- prefixed and Secure, and every page sends HSTS.
func TestHTTPSDeploymentHardensCookieAndTransport(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.PublicURL = "https://backoffice.emi.example" }})
	env.SeedStaff(t)
	b := env.NewBrowser()
	p := b.Post(t, "/backoffice/signin", url.Values{"email": {apptest.AdminEmail}, "password": {"Sandbox-Staff-2026"}})
	raw := strings.Join(p.Header.Values("Set-Cookie"), "\n")
	for _, want := range []string{"__Host-emi_session=", "Secure", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(raw, want) {
			t.Errorf("Set-Cookie %q lacks %s", raw, want)
		}
	}
	if strings.Contains(raw, "Domain=") {
		t.Errorf("a __Host- cookie must not carry Domain: %q", raw)
	}
	if got := p.Header.Get("Strict-Transport-Security"); got != "max-age=31536000; includeSubDomains" {
		t.Errorf("HSTS %q", got)
	}
	if portal.IdleTimeout > 30*time.Minute || portal.Lifetime > 12*time.Hour {
		t.Errorf("session timeouts %s idle / %s absolute exceed the policy (30 min / 12 h)", portal.IdleTimeout, portal.Lifetime)
	}
}

// Every back-office error has a text for people (not the generic fallback).
func TestEveryPortalErrorHasAMessage(t *testing.T) {
	for _, e := range append(emi.PortalCatalogue(), emi.WebhookCatalogue()...) {
		if m := frame.Message(e); strings.Contains(m, "could not be completed") {
			t.Errorf("%d %s has no message", e.Code, e.Key)
		}
	}
}

// A failure on our side (here: the database is gone) answers the 500 page
// with a reference for support, and never the error's details.
func TestServerErrorPageHidesDetails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	if _, err := f.env.App.DB.Exec(`ALTER TABLE staff_users RENAME TO staff_users_gone`); err != nil {
		t.Fatal(err)
	}
	p := admin.Get(t, "/backoffice/staff")
	if p.Status != http.StatusInternalServerError || !strings.Contains(p.Body, `data-testid="error-500"`) {
		t.Fatalf("HTTP %d, want the 500 page", p.Status)
	}
	id := p.Header.Get("x-request-id")
	if id == "" || !strings.Contains(p.Body, id) {
		t.Fatal("the 500 page does not show the request id as a reference")
	}
	for _, leak := range []string{"staff_users", "pq:", "relation", "SELECT"} {
		if strings.Contains(p.Body, leak) {
			t.Errorf("the 500 page leaks %q", leak)
		}
	}
	if !strings.Contains(f.env.Logs.String(), id) || !strings.Contains(f.env.Logs.String(), "staff_users") {
		t.Fatal("the cause is not in the server log with the request id")
	}
}

// A session signed in with a temporary password reaches nothing but the
// new-password page: every route of the router, GET or POST, protected or a
// later sign-in step (TOTP, recovery, enrolment), sends it there. Once it
// has chosen its own password, it enrols its own TOTP and only then is
// signed in.
func TestTemporaryPasswordReachesOnlyTheNewPasswordPage(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	admin := staffCtx(t, env, apptest.AdminEmail)
	out, err := env.App.Staff.Create(admin, emi.StaffCreate{Email: "temp@x.test", Name: "Temp", Roles: []emi.Role{emi.RoleAuditor}})
	if err != nil || out.Secret == "" {
		t.Fatalf("create: %+v %v", out, err)
	}
	b := env.NewBrowser()
	p := b.Post(t, "/backoffice/signin", url.Values{"email": {"temp@x.test"}, "password": {out.Secret}})
	if p.Status != http.StatusSeeOther || p.Location != "/backoffice/signin/password" {
		t.Fatalf("sign-in with a temporary password: HTTP %d to %q", p.Status, p.Location)
	}
	steps := map[string]bool{"GET /signin": true, "POST /signin": true, "GET /signin/password": true, "POST /signin/password": true,
		"POST /signout": true}
	for _, rt := range routes(t, env) {
		method, route, _ := strings.Cut(rt, " ")
		if steps[rt] {
			continue
		}
		path := "/backoffice" + regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(route, "00000000-0000-0000-0000-000000000000")
		var pg apptest.Page
		if method == http.MethodGet {
			pg = b.Get(t, path)
		} else {
			pg = b.Post(t, path, url.Values{"code": {"000000"}, "roles": {"admin"}, "name": {"x"}})
		}
		const want = "/backoffice/signin/password"
		if pg.Status != http.StatusSeeOther || pg.Location != want {
			t.Errorf("%s on a temporary password: HTTP %d to %q, want a redirect to %s", rt, pg.Status, pg.Location, want)
		}
	}
	// The session is still on the new-password step.
	if pg := b.Get(t, "/backoffice/signin/password"); pg.Status != http.StatusOK || !strings.Contains(pg.Body, `data-testid="new-password-form"`) {
		t.Fatalf("new-password page: HTTP %d", pg.Status)
	}
	pg := b.Post(t, "/backoffice/signin/password", url.Values{"current_password": {out.Secret}, "password": {out.Secret}})
	if pg.Status != http.StatusUnprocessableEntity {
		t.Fatalf("keeping the temporary password: HTTP %d", pg.Status)
	}
	pg = b.Post(t, "/backoffice/signin/password", url.Values{"current_password": {out.Secret}, "password": {"My-Own-Choice-2026"}})
	if pg.Status != http.StatusSeeOther || pg.Location != "/backoffice/signin/enroll" {
		t.Fatalf("choosing a password: HTTP %d to %q, want enrolment", pg.Status, pg.Location)
	}
	if pg := b.Get(t, "/backoffice/"); pg.Status != http.StatusSeeOther || pg.Location != "/backoffice/signin" {
		t.Fatalf("the dashboard before enrolment: HTTP %d to %q", pg.Status, pg.Location)
	}
	if pg := b.Get(t, "/backoffice/signin/enroll"); pg.Status != http.StatusOK || !strings.Contains(pg.Body, `data-testid="totp-secret"`) {
		t.Fatalf("enrolment page: HTTP %d", pg.Status)
	}
	// The old temporary password no longer signs in.
	if pg := env.NewBrowser().Post(t, "/backoffice/signin", url.Values{"email": {"temp@x.test"}, "password": {out.Secret}}); pg.Status != http.StatusUnauthorized {
		t.Fatalf("the temporary password after the change: HTTP %d", pg.Status)
	}
}

// routeRoles lists the roles (by e-mail) that may use a protected route;
// "*" means every signed-in user. TestRoleRouteMatrix checks the router
// against it, and TestDecisionRoutesFollowTheTable checks it against the
// decision table.
func routeRoles() map[string][]string {
	return map[string][]string{
		"GET /":                                             {"*"},
		"GET /search":                                       {"*"},
		"POST /search":                                      {"*"},
		"GET /account":                                      {"*"},
		"POST /account/password":                            {"*"},
		"POST /account/recovery-codes":                      {"*"},
		"POST /account/signout-everywhere":                  {"*"},
		"GET /staff":                                        {apptest.AdminEmail, apptest.AuditorEmail},
		"GET /staff/{id}":                                   {apptest.AdminEmail, apptest.AuditorEmail},
		"GET /staff/new":                                    {apptest.AdminEmail},
		"POST /staff":                                       {apptest.AdminEmail},
		"POST /staff/{id}/roles":                            {apptest.AdminEmail},
		"POST /staff/{id}/disable":                          {apptest.AdminEmail},
		"POST /staff/{id}/enable":                           {apptest.AdminEmail},
		"POST /staff/{id}/suspend":                          {apptest.AdminEmail},
		"POST /staff/{id}/suspension/confirm":               {apptest.AdminEmail},
		"POST /staff/{id}/suspension/lift":                  {apptest.AdminEmail},
		"POST /staff/{id}/reset":                            {apptest.AdminEmail},
		"POST /staff/{id}/revoke-sessions":                  {apptest.AdminEmail},
		"POST /staff/changes/{change}/approve":              {apptest.AdminEmail},
		"POST /staff/changes/{change}/reject":               {apptest.AdminEmail},
		"GET /partners":                                     {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.AuditorEmail},
		"GET /partners/{id}":                                {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.AuditorEmail},
		"GET /partners/new":                                 {apptest.AdminEmail},
		"POST /partners":                                    {apptest.AdminEmail},
		"POST /partners/{id}/processing":                    {apptest.AdminEmail},
		"POST /partners/{id}/keys":                          {apptest.AdminEmail},
		"POST /partners/{id}/keys/{key}/rotate":             {apptest.AdminEmail},
		"POST /partners/{id}/keys/{key}/revoke":             {apptest.AdminEmail},
		"POST /partners/{id}/keys/{key}/signature-version":  {apptest.AdminEmail},
		"GET /audit":                                        {apptest.AdminEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /jobs":                                         {apptest.AdminEmail, apptest.AuditorEmail},
		"POST /partners/{id}/webhooks":                      {apptest.AdminEmail},
		"POST /partners/{id}/webhooks/{ep}/test":            {apptest.AdminEmail},
		"POST /partners/{id}/webhooks/{ep}/rotate":          {apptest.AdminEmail},
		"POST /partners/{id}/webhooks/{ep}/enable":          {apptest.AdminEmail},
		"POST /partners/{id}/webhooks/{ep}/disable":         {apptest.AdminEmail},
		"GET /partners/{id}/events":                         {apptest.AdminEmail, apptest.AuditorEmail},
		"POST /partners/{id}/deliveries/{delivery}/replay":  {apptest.AdminEmail},
		"POST /partners/{id}/deliveries/replay-failed":      {apptest.AdminEmail},
		"GET /users":                                        {"*"},
		"GET /users/{user}":                                 {"*"},
		"GET /documents/{doc}":                              {"*"},
		"GET /aml":                                          {"*"},
		"GET /alerts":                                       {"*"},
		"POST /alerts/claim":                                {apptest.ComplianceEmail},
		"POST /alerts/release":                              {apptest.AdminEmail, apptest.ComplianceEmail},
		"GET /monitoring/rules":                             {apptest.ComplianceEmail},
		"GET /monitoring/{alert}":                           {apptest.ComplianceEmail},
		"POST /monitoring/rules/{code}/propose":             {apptest.ComplianceEmail},
		"POST /monitoring/rules/{code}/approve":             {apptest.ComplianceEmail},
		"POST /monitoring/rules/{code}/reject":              {apptest.ComplianceEmail},
		"POST /alerts/assign":                               {apptest.ComplianceEmail},
		"GET /monitoring/cases":                             {apptest.ComplianceEmail},
		"GET /monitoring/cases/{case}":                      {apptest.ComplianceEmail},
		"GET /monitoring/cases/{case}/documents/{document}": {apptest.ComplianceEmail},
		"GET /monitoring/cases/{case}/report.xml":           {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/note":                {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/assign":              {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/investigate":         {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/close":               {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/request":             {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/hold":                {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/lift":                {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/documents":           {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/report":              {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/report/approve":      {apptest.ComplianceEmail},
		"POST /monitoring/cases/{case}/report/reject":       {apptest.ComplianceEmail},
		"POST /monitoring/{alert}/case":                     {apptest.ComplianceEmail},
		"POST /transfers/{transfer}/held":                   {apptest.ComplianceEmail},
		"GET /inbox":                                        {"*"},
		"POST /inbox/read":                                  {"*"},
		"GET /aml/{check}":                                  {"*"},
		"POST /aml/{check}/decide":                          {apptest.ComplianceEmail},
		"GET /kyc":                                          {"*"},
		"GET /kyc/{session}":                                {"*"},
		"POST /kyc/{session}/decide":                        {apptest.ComplianceEmail},
		"GET /sanctions":                                    {"*"},
		"POST /sanctions/update":                            {apptest.AdminEmail},
		"GET /applications":                                 {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /applications/{application}":                   {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /applications/{application}/members/{member}":  {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /companies":                                    {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /companies/{application}":                      {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"POST /partners/{id}/validator-config":              {apptest.AdminEmail},
		"POST /partners/{id}/validator-config/remove":       {apptest.AdminEmail},
		"GET /review":                                       {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /review.csv":                                   {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /review/metrics":                               {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"GET /review/decisions.csv":                         {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"POST /review/next":                                 {apptest.UnderwriterEmail},
		"POST /review/views":                                {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"POST /review/views/{view}/delete":                  {apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.AuditorEmail},
		"POST /review/bulk":                                 {apptest.AdminEmail},
		"POST /review/{application}/claim":                  {apptest.UnderwriterEmail},
		"POST /review/{application}/release":                {apptest.AdminEmail, apptest.UnderwriterEmail},
		"POST /review/{application}/assign":                 {apptest.AdminEmail, apptest.UnderwriterEmail},
		"POST /review/{application}/decide":                 {apptest.UnderwriterEmail},
		"POST /review/{application}/notes":                  {apptest.UnderwriterEmail, apptest.ComplianceEmail},
		"POST /review/{application}/hits":                   {apptest.UnderwriterEmail, apptest.ComplianceEmail},
		"POST /review/{application}/company":                {apptest.ComplianceEmail},
		"POST /review/{application}/members/{member}":       {apptest.ComplianceEmail},
		"GET /watchlist":                                    {"*"},
		"POST /watchlist":                                   {apptest.ComplianceEmail},
		"POST /watchlist/{entry}/remove":                    {apptest.ComplianceEmail},
		"GET /accounts":                                     {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"GET /accounts/{account}":                           {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /accounts/{account}/block":                    {apptest.CSEmail},
		"POST /accounts/{account}/unblock":                  {apptest.CSEmail},
		"POST /accounts/{account}/terminate":                {apptest.CSEmail},
		"POST /accounts/{account}/terminate/approve":        {apptest.CSEmail},
		"POST /accounts/{account}/terminate/withdraw":       {apptest.CSEmail},
		"GET /programs":                                     {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"GET /cards":                                        {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /cards":                                       {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"GET /cards/{card}":                                 {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /cards/{card}/activate":                       {apptest.CSEmail},
		"POST /cards/{card}/status":                         {apptest.CSEmail},
		"POST /cards/{card}/block":                          {apptest.CSEmail},
		"POST /cards/{card}/terminate":                      {apptest.CSEmail},
		"POST /cards/{card}/replace":                        {apptest.CSEmail},
		"POST /cards/{card}/convert":                        {apptest.CSEmail},
		"POST /cards/{card}/assign":                         {apptest.CSEmail},
		"POST /cards/{card}/groups":                         {apptest.CSEmail},
		"POST /cards/{card}/3ds/enrol":                      {apptest.CSEmail},
		"POST /cards/{card}/3ds/update":                     {apptest.CSEmail},
		"POST /cards/{card}/3ds/remove":                     {apptest.CSEmail},
		"POST /cards/{card}/pin/reset":                      {apptest.CSEmail},
		"POST /cards/{card}/pin/send":                       {apptest.CSEmail},
		"POST /cards/{card}/reveal":                         {apptest.CSEmail},
		"GET /sms":                                          {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"GET /accounts/{account}/statement.csv":             {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"GET /transfers/{transfer}":                         {apptest.AdminEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /transfers/{transfer}/reversal":               {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /transfers/{transfer}/reversal/approve":       {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /transfers/{transfer}/reversal/reject":        {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /transfers/{transfer}/complete":               {apptest.CSEmail},
		"POST /transfers/{transfer}/return":                 {apptest.CSEmail},
		"GET /suspense":                                     {apptest.AdminEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /suspense/simulate":                           {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /suspense/{item}/assign":                      {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /suspense/{item}/return":                      {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /suspense/assignments/{assignment}/approve":   {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /suspense/assignments/{assignment}/reject":    {apptest.ComplianceEmail, apptest.CSEmail},
		"GET /adjustments":                                  {apptest.AdminEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail},
		"POST /adjustments/{adjustment}/approve":            {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /adjustments/{adjustment}/reject":             {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /accounts/{account}/adjustments":              {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /accounts/{account}/incoming":                 {apptest.ComplianceEmail, apptest.CSEmail},
		"POST /programs":                                    {apptest.AdminEmail},
		"POST /programs/{program}":                          {apptest.AdminEmail},
		"POST /programs/{program}/change/approve":           {apptest.AdminEmail},
		"POST /programs/{program}/change/reject":            {apptest.AdminEmail},

		// The card payment simulator (sandbox).
		"POST /cards/{card}/authorizations":                         {apptest.CSEmail},
		"POST /cards/{card}/authorizations/{authorization}/clear":   {apptest.CSEmail},
		"POST /cards/{card}/authorizations/{authorization}/reverse": {apptest.CSEmail},
	}
}

// The routes of sensitive decisions allow exactly the roles that hold the
// permission the decision table (service.Policies) gives that step, and
// every control of the table that has a back-office step is reached by one
// (the portal's route checks and the service's permission checks derive
// from one table, so they cannot disagree).
func TestDecisionRoutesFollowTheTable(t *testing.T) {
	t.Parallel()
	steps := map[string]struct {
		control staff.Control
		approve bool
	}{
		"POST /review/{application}/decide":               {staff.ControlApplicationApproval, true},
		"POST /adjustments/{adjustment}/approve":          {staff.ControlAdjustment, true},
		"POST /accounts/{account}/adjustments":            {staff.ControlAdjustment, false},
		"POST /transfers/{transfer}/reversal":             {staff.ControlTransferReversal, false},
		"POST /transfers/{transfer}/reversal/approve":     {staff.ControlTransferReversal, true},
		"POST /accounts/{account}/terminate":              {staff.ControlAccountTermination, false},
		"POST /accounts/{account}/terminate/approve":      {staff.ControlAccountTermination, true},
		"POST /aml/{check}/decide":                        {staff.ControlAMLHitFalsePositive, true},
		"POST /staff/changes/{change}/approve":            {staff.ControlStaffPrivileged, true},
		"POST /suspense/{item}/assign":                    {staff.ControlSuspenseAssign, false},
		"POST /suspense/assignments/{assignment}/approve": {staff.ControlSuspenseAssign, true},
		"POST /programs/{program}":                        {staff.ControlProgramRisk, false},
		"POST /programs/{program}/change/approve":         {staff.ControlProgramRisk, true},
		"POST /kyc/{session}/decide":                      {staff.ControlKYCDecision, true},
		"POST /monitoring/rules/{code}/propose":           {staff.ControlMonitoringRule, false},
		"POST /monitoring/rules/{code}/approve":           {staff.ControlMonitoringRule, true},
		"POST /transfers/{transfer}/held":                 {staff.ControlHeldTransfer, true},
		"POST /monitoring/cases/{case}/report":            {staff.ControlReport, false},
		"POST /monitoring/cases/{case}/report/approve":    {staff.ControlReport, true},
		"POST /staff/{id}/disable":                        {staff.ControlStaffPrivilegeRemoval, false},
		"POST /staff/{id}/suspend":                        {staff.ControlStaffSuspension, false},
		"POST /staff/{id}/suspension/confirm":             {staff.ControlStaffSuspension, true},
	}
	emails := map[emi.Role]string{emi.RoleAdmin: apptest.AdminEmail, emi.RoleUnderwriter: apptest.UnderwriterEmail,
		emi.RoleCompliance: apptest.ComplianceEmail, emi.RoleCustomerService: apptest.CSEmail, emi.RoleAuditor: apptest.AuditorEmail}
	roles := routeRoles()
	reached := map[staff.Control]bool{}
	for route, st := range steps {
		pol := staff.PolicyOf(st.control)
		perm := pol.Propose
		if st.approve {
			perm = pol.Approve
			reached[st.control] = true
		}
		var want []string
		for _, r := range emi.Roles() {
			if emi.Can([]emi.Role{r}, perm) {
				want = append(want, emails[r])
			}
		}
		got, ok := roles[route]
		if !ok {
			t.Errorf("%s is not in the route matrix", route)
			continue
		}
		slices.Sort(want)
		got = slices.Clone(got)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s (%s, approve %v) allows %v; the decision table's %s gives %v", route, st.control, st.approve, got, perm, want)
		}
	}
	// The hit decision route takes both steps of the application hit
	// control: anyone who may propose or confirm.
	hit := staff.PolicyOf(staff.ControlHitFalsePositive)
	var want []string
	for _, r := range emi.Roles() {
		if emi.Can([]emi.Role{r}, hit.Propose) || emi.Can([]emi.Role{r}, hit.Approve) {
			want = append(want, emails[r])
		}
	}
	got := slices.Clone(roles["POST /review/{application}/hits"])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("POST /review/{application}/hits allows %v; the decision table gives %v", got, want)
	}
	reached[staff.ControlHitFalsePositive] = true
	// A privilege removal is approved on the staff changes' one approval
	// route, with the same permission as the other staff changes.
	if staff.PolicyOf(staff.ControlStaffPrivilegeRemoval).Approve != staff.PolicyOf(staff.ControlStaffPrivileged).Approve {
		t.Error("the two staff-change controls share POST /staff/changes/{change}/approve but not its permission")
	}
	reached[staff.ControlStaffPrivilegeRemoval] = true
	for _, pol := range staff.Policies {
		if !reached[pol.Control] {
			t.Errorf("control %s has no back-office route in this test: add its approval route", pol.Control)
		}
	}
}
