// Package browser_test drives the back office in headless chromium
// (chromedp): sign-in with TOTP, throttling, roles, cross-origin forms, the
// partner secret shown once, session expiry, HTMX pages with and without
// JavaScript, CSP in a real browser and a stored-XSS probe. Each test runs
// the whole app on a fresh database (apptest) and its own browser context.
// Without chromium the tests are skipped, except in CI (CI set).
package browser_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
	"emi/web/portal"
	"emi/web/portal/frame"
)

// newEnv starts the app with the sandbox staff users.
func newEnv(t *testing.T) *apptest.Env {
	t.Helper()
	sharedBrowser(t) // skip (or fail in CI) before starting anything
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	return env
}

func systemCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.SystemPrincipal("browsertest"))
}

// flashText returns the text of the flash messages of the page.
func flashText(b *tab) string {
	return strings.Join(b.texts(`#flashes .flash`), " | ")
}

func TestSignInWithPasswordAndTOTPOpensTheDashboard(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)

	b.open("/backoffice/")
	if p := b.path(); p != "/backoffice/signin" {
		t.Fatalf("/backoffice/ without a session ends at %s, want /backoffice/signin", p)
	}
	b.waitVisible(`[data-testid="signin-form"]`)

	b.typeInto(`[data-testid="signin-form"] input[name="email"]`, apptest.AdminEmail)
	b.typeInto(`[data-testid="signin-form"] input[name="password"]`, staff.SandboxStaffPassword)
	if st := b.clickNav(`[data-testid="signin-form"] button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("after the password: HTTP %d", st)
	}
	if p := b.path(); p != "/backoffice/signin/totp" {
		t.Fatalf("after the password the browser is at %s, want /backoffice/signin/totp", p)
	}
	b.waitVisible(`[data-testid="totp-form"]`)
	// Not signed in yet: the dashboard still sends us back.
	if c := b.count(`nav[aria-label="Main"]`); c != 0 {
		t.Fatalf("the TOTP page shows the navigation")
	}

	b.typeInto(`[data-testid="totp-form"] input[name="code"]`, env.TOTP(t, apptest.AdminEmail))
	if st := b.clickNav(`[data-testid="totp-form"] button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("after the TOTP code: HTTP %d", st)
	}
	if p := b.path(); p != "/backoffice/" {
		t.Fatalf("after the TOTP code the browser is at %s, want /backoffice/", p)
	}
	if h := b.text("main h1"); h != "Dashboard" {
		t.Fatalf("heading %q, want Dashboard", h)
	}
	nav := b.navLinks()
	for _, want := range []string{"Partners", "Staff", "Audit log"} {
		if !slices.Contains(nav, want) {
			t.Errorf("navigation %q has no %q link", nav, want)
		}
	}
}

func TestWrongPasswordShowsTheGenericErrorAndRepeatedFailuresAreThrottled(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	failed := frame.Message(emi.ErrSignInFailed)
	throttled := frame.Message(emi.ErrSignInThrottled)
	if !strings.HasPrefix(throttled, "Too many attempts") {
		t.Fatalf("throttled message %q does not start with %q", throttled, "Too many attempts")
	}

	b.open("/backoffice/signin")
	signIn := func(password string) int64 {
		t.Helper()
		b.typeInto(`[data-testid="signin-form"] input[name="email"]`, apptest.UnderwriterEmail)
		b.typeInto(`[data-testid="signin-form"] input[name="password"]`, password)
		return b.clickNav(`[data-testid="signin-form"] button[type="submit"]`)
	}
	for i := 1; i <= staff.MaxAccountFailures; i++ {
		st := signIn(fmt.Sprintf("wrong-password-%d", i))
		if st != http.StatusUnauthorized {
			t.Fatalf("failure %d: HTTP %d, want 401", i, st)
		}
		if p := b.path(); p != "/backoffice/signin" {
			t.Fatalf("failure %d: the browser is at %s, want /backoffice/signin", i, p)
		}
		if f := flashText(b); f != failed {
			t.Fatalf("failure %d: message %q, want %q", i, f, failed)
		}
		if b.count(`[data-testid="signin-form"]`) != 1 || b.count(`[data-testid="totp-form"]`) != 0 {
			t.Fatalf("failure %d: the page is not the sign-in form", i)
		}
	}
	// Now even the right password is refused, and the page says why
	// without saying whether the address exists.
	st := signIn(staff.SandboxStaffPassword)
	if st != http.StatusTooManyRequests {
		t.Fatalf("after %d failures: HTTP %d, want 429", staff.MaxAccountFailures, st)
	}
	if p := b.path(); p != "/backoffice/signin" {
		t.Fatalf("throttled: the browser is at %s, want /backoffice/signin", p)
	}
	if f := flashText(b); f != throttled {
		t.Fatalf("throttled: message %q, want %q", f, throttled)
	}
	if html := b.html(); strings.Contains(html, failed) {
		t.Fatalf("throttled page still shows the failure message")
	}
}

func TestCustomerServiceGetsForbiddenOnTheStaffPageByURL(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)

	nav := b.navLinks()
	if !slices.Contains(nav, "Dashboard") {
		t.Fatalf("customer service navigation %q has no Dashboard: not the signed-in frame", nav)
	}
	if slices.Contains(nav, "Staff") {
		t.Fatalf("customer service navigation %q has a Staff link", nav)
	}

	if st := b.open("/backoffice/staff"); st != http.StatusForbidden {
		t.Fatalf("GET /backoffice/staff as customer service: HTTP %d, want 403", st)
	}
	b.waitVisible(`[data-testid="error-403"]`)
	if b.count(`[data-testid="staff-table"]`) != 0 {
		t.Fatalf("the 403 page shows the staff table")
	}
	if nav := b.navLinks(); slices.Contains(nav, "Staff") {
		t.Fatalf("navigation of the 403 page %q has a Staff link", nav)
	}
}

func TestCrossOriginFormPostIsRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t)

	// The attacker's page, on a second loopback origin.
	attacker := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><body>
<form id="f" method="POST" action="%s/backoffice/partners">
<input name="name" value="evil"><input name="processing" value="automatic">
</form>
<script>document.getElementById("f").submit()</script>
</body></html>`, env.Server.URL)
	}))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Logf("127.0.0.2 unavailable (%v): attacker on another port of 127.0.0.1", err)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	attacker.Listener.Close()
	attacker.Listener = ln
	attacker.Start()
	t.Cleanup(attacker.Close)

	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	statuses := b.documentStatuses()

	b.open(attacker.URL + "/")
	b.waitVisible(`[data-testid="error-403"]`)
	if loc := b.location(); loc != env.Server.URL+"/backoffice/partners" {
		t.Fatalf("after the attacker's form the browser is at %s, want %s/backoffice/partners", loc, env.Server.URL)
	}
	if st := statuses()[env.Server.URL+"/backoffice/partners"]; st != http.StatusForbidden {
		t.Fatalf("the cross-origin POST got HTTP %d, want 403 (documents: %v)", st, statuses())
	}
	var n int
	if err := env.App.DB.GetContext(context.Background(), &n, `SELECT count(*) FROM partners WHERE name = 'evil'`); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the cross-origin POST created %d partner(s) named evil", n)
	}
	if !strings.Contains(env.Logs.String(), "cross-origin request refused") {
		t.Fatalf("the server did not log the refused cross-origin request")
	}

	// The same browser, same-origin, still works: the refusal was about
	// the origin, not the session.
	if st := b.open("/backoffice/partners"); st != http.StatusOK {
		t.Fatalf("same-origin GET /backoffice/partners after the attack: HTTP %d", st)
	}
}

// secretHits returns the text, JSON and bytea columns of the tables that
// hold secret anywhere (bytea read with encode(…, 'escape')).
func secretHits(t *testing.T, env *apptest.Env, secret string, tables ...string) []string {
	t.Helper()
	ctx := context.Background()
	var cols []struct {
		Table string `db:"table_name"`
		Col   string `db:"column_name"`
		Type  string `db:"data_type"`
	}
	err := env.App.DB.SelectContext(ctx, &cols, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = ANY($1)
		  AND data_type IN ('text', 'character varying', 'bytea', 'jsonb', 'json')`, tablesArray(tables))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var hits []string
	for _, c := range cols {
		seen[c.Table] = true
		expr := `"` + c.Col + `"::text`
		if c.Type == "bytea" {
			expr = `encode("` + c.Col + `", 'escape')`
		}
		var n int
		q := `SELECT count(*) FROM "` + c.Table + `" WHERE strpos(` + expr + `, $1) > 0`
		if err := env.App.DB.GetContext(ctx, &n, q, secret); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			hits = append(hits, fmt.Sprintf("%s.%s (%d rows)", c.Table, c.Col, n))
		}
	}
	for _, tb := range tables {
		if !seen[tb] {
			t.Fatalf("table %s has no text or bytea column: the check would prove nothing", tb)
		}
	}
	return hits
}

func tablesArray(tables []string) string {
	return "{" + strings.Join(tables, ",") + "}"
}

func TestPartnerSecretIsShownOnceAndNeverAgain(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)

	b.clickNav(`nav[aria-label="Main"] a[href="/backoffice/partners"]`)
	b.clickNav(`a[href="/backoffice/partners/new"]`)
	b.typeInto(`[data-testid="partner-form"] input[name="name"]`, "Shown Once Ltd")
	b.do("choose semi-automatic", chromedp.SetValue(chromedp.CSS(`[data-testid="partner-form"] select[name="processing"]`), "semi-automatic"))
	if st := b.clickNav(`[data-testid="partner-form"] button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("create partner: HTTP %d", st)
	}
	b.waitVisible(`[data-testid="credentials-once"]`)
	secret := b.text(`[data-testid="api-secret"]`)
	if secret == "" || !strings.HasPrefix(secret, "as_") || len(secret) < 20 {
		t.Fatalf("api-secret %q: want a long value starting with as_", secret)
	}
	if !strings.Contains(b.html(), secret) {
		t.Fatalf("the secret is not in the page's HTML: the checks below would prove nothing")
	}
	apiKey := b.text(`[data-testid="api-key"]`)
	// "Done" goes to the partner page.
	b.clickNav(`[data-testid="credentials-once"] ~ p a.button`)
	partnerURL := b.location()
	if !strings.Contains(partnerURL, "/backoffice/partners/") {
		t.Fatalf("Done leads to %s, want the partner page", partnerURL)
	}
	assertNoSecret := func(where string) {
		t.Helper()
		if strings.Contains(b.html(), secret) {
			t.Fatalf("%s (%s) shows the secret again", where, b.location())
		}
	}
	assertNoSecret("the partner page")
	if apiKey != "" && !strings.Contains(b.html(), apiKey) {
		t.Fatalf("the partner page does not list the API key %s", apiKey)
	}
	b.do("reload the partner page", chromedp.Reload())
	assertNoSecret("the reloaded partner page")

	// Back to the answer of the POST: the page was no-store, so the
	// browser cannot show it from its cache.
	ctx, cancel := b.step()
	backErr := chromedp.Do(ctx, chromedp.NavigateBack())
	cancel()
	t.Logf("Back to the POST answer: %v", backErr)
	assertNoSecret("the page after Back")
	// Reloading it sends the form again (a person confirms a dialog first;
	// DevTools does not ask): that is a new partner with its own secret,
	// never the first one.
	ctx, cancel = b.step()
	reloadErr := chromedp.Do(ctx, chromedp.Reload())
	cancel()
	t.Logf("Reload of the POST answer: %v, now at %s", reloadErr, b.location())
	assertNoSecret("the page after Back and Reload")

	b.open("/backoffice/partners")
	assertNoSecret("the partners list")
	b.open(strings.TrimPrefix(partnerURL, env.Server.URL))
	assertNoSecret("the partner page, opened again")
	b.open("/backoffice/audit")
	assertNoSecret("the audit log")

	if hits := secretHits(t, env, secret, "sessions", "audit_log"); len(hits) > 0 {
		t.Fatalf("the secret is stored in clear in %v", hits)
	}
}

func TestSessionExpiryAfterIdleTimeoutSendsTheUserBackToSignIn(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)

	env.Clock.Advance(portal.IdleTimeout - time.Minute)
	if st := b.open("/backoffice/partners"); st != http.StatusOK {
		t.Fatalf("after %v idle: HTTP %d", portal.IdleTimeout-time.Minute, st)
	}
	if p := b.path(); p != "/backoffice/partners" {
		t.Fatalf("after %v idle the browser is at %s, want the partners page", portal.IdleTimeout-time.Minute, p)
	}

	env.Clock.Advance(portal.IdleTimeout + time.Minute)
	b.open("/backoffice/partners")
	if p := b.path(); p != "/backoffice/signin" {
		t.Fatalf("after %v idle the browser is at %s, want /backoffice/signin", portal.IdleTimeout+time.Minute, p)
	}
	b.waitVisible(`[data-testid="signin-form"]`)
	if b.count(`[data-testid="partners-table"]`) != 0 || b.count(`nav[aria-label="Main"]`) != 0 {
		t.Fatalf("the expired session still sees the back office")
	}
}

// auditRows returns the text of each row of the audit table.
func auditRows(b *tab) []string { return b.texts(`[data-testid="audit-table"] tbody tr`) }

// auditActions returns the action column of the audit table.
func auditActions(b *tab) []string {
	return b.texts(`[data-testid="audit-table"] tbody tr td:nth-child(3)`)
}

func TestAuditTablePagesAndFiltersWithHTMXAndWithoutJavaScript(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := systemCtx()
	const partners = 60 // one partner.create row each: more than a page of 50
	for i := range partners {
		if _, err := env.App.Partners.Create(ctx, emi.PartnerCreate{Name: fmt.Sprintf("Audit Partner %02d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	js := newTab(t, env)
	js.signIn(env, apptest.AdminEmail)
	js.open("/backoffice/audit")
	first := auditRows(js)
	if len(first) != 50 {
		t.Fatalf("first audit page has %d rows, want 50", len(first))
	}
	if acts := auditActions(js); slices.Equal(slices.Compact(slices.Clone(acts)), []string{"partner.create"}) {
		t.Fatalf("the first page has only partner.create rows: the filter check would prove nothing")
	}

	// With JavaScript: htmx swaps the table in place.
	js.script("set marker", `window.__marker = 1`)
	if !eval[bool](js, `typeof htmx === "object"`) {
		t.Fatalf("htmx did not load")
	}
	js.do("click Older", chromedp.Click(chromedp.CSS(`nav.pager a[href*="before="]`)))
	js.do("wait for the older rows", pollTrue(
		`(() => { const r = document.querySelector('[data-testid="audit-table"] tbody tr'); return !!r && r.textContent.replace(/\s+/g, " ").trim() !== `+jsString(first[0])+` })()`))
	if !eval[bool](js, `window.__marker === 1`) {
		t.Fatalf("clicking Older reloaded the whole page (window marker lost)")
	}
	if p := js.path(); !strings.Contains(p, "before=") {
		t.Fatalf("after Older the URL is %s, want before= in it (hx-push-url)", p)
	}
	olderJS := auditRows(js)
	if len(olderJS) == 0 || olderJS[0] == first[0] {
		t.Fatalf("older page (htmx) starts with the same row")
	}

	// Without JavaScript: the same link is a normal navigation.
	nojs := js.sibling("nojs")
	nojs.disableScript()
	nojs.open("/backoffice/audit")
	if eval[bool](nojs, `typeof htmx === "object"`) {
		t.Fatalf("htmx loaded with JavaScript off: the no-JS check would prove nothing")
	}
	if rows := auditRows(nojs); len(rows) != 50 || rows[0] != first[0] {
		t.Fatalf("no-JS first page: %d rows, first %q; want 50 rows starting like the JS page", len(rows), firstOf(rows))
	}
	if st := nojs.clickNav(`nav.pager a[href*="before="]`); st != http.StatusOK {
		t.Fatalf("no-JS Older: HTTP %d", st)
	}
	if p := nojs.path(); !strings.Contains(p, "before=") {
		t.Fatalf("no-JS Older leads to %s, want before= in it", p)
	}
	if rows := auditRows(nojs); !slices.Equal(rows, olderJS) {
		t.Fatalf("no-JS older page differs from the htmx one:\nno-JS %q\nhtmx  %q", firstOf(rows), firstOf(olderJS))
	}

	// The filter form, without JavaScript.
	nojs.open("/backoffice/audit")
	nojs.typeInto(`form.filters input[name="action"]`, "partner.create")
	if st := nojs.clickNav(`form.filters button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("no-JS filter: HTTP %d", st)
	}
	if p := nojs.path(); !strings.Contains(p, "action=partner.create") {
		t.Fatalf("no-JS filter leads to %s, want action=partner.create", p)
	}
	assertOnly(t, "no-JS filter", auditActions(nojs), "partner.create")

	// And with JavaScript: htmx replaces the table, the page stays.
	js.open("/backoffice/audit")
	js.script("set marker", `window.__marker = 2`)
	js.typeInto(`form.filters input[name="action"]`, "partner.create")
	js.do("submit the filter", chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)))
	js.do("wait for filtered rows", pollTrue(
		`(() => { const c = Array.from(document.querySelectorAll('[data-testid="audit-table"] tbody tr td:nth-child(3)')); return c.length > 0 && c.every(e => e.textContent.trim() === "partner.create") })()`))
	if !eval[bool](js, `window.__marker === 2`) {
		t.Fatalf("the htmx filter reloaded the whole page (window marker lost)")
	}
	if p := js.path(); !strings.Contains(p, "action=partner.create") {
		t.Fatalf("after the htmx filter the URL is %s, want action=partner.create", p)
	}
	assertOnly(t, "htmx filter", auditActions(js), "partner.create")
}

func firstOf(rows []string) string {
	if len(rows) == 0 {
		return "(no rows)"
	}
	return rows[0]
}

func assertOnly(t *testing.T, what string, actions []string, want string) {
	t.Helper()
	if len(actions) == 0 {
		t.Fatalf("%s: no rows", what)
	}
	for i, a := range actions {
		if a != want {
			t.Fatalf("%s: row %d has action %q, want only %q", what, i, a, want)
		}
	}
}

// isCSPMessage reports whether a console line is about the
// Content-Security-Policy.
func isCSPMessage(c consoleLine) bool {
	return strings.Contains(c.Text, "Content Security Policy") || strings.Contains(c.Text, "Refused to")
}

func TestPagesLoadWithoutCSPViolationsAndWithHTMX(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "CSP Partner"})
	var staffID string
	if err := env.App.DB.GetContext(context.Background(), &staffID, `SELECT id FROM staff_users WHERE email = $1`, apptest.CSEmail); err != nil {
		t.Fatal(err)
	}
	b := newTab(t, env)

	type visit struct{ path, heading string }
	check := func(v visit) {
		t.Helper()
		resp := b.openResponse(v.path)
		if resp.Status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", v.path, resp.Status)
		}
		csp := header(resp, "Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: the browser got CSP %q, without %q", v.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("GET %s: CSP %q allows unsafe-*", v.path, csp)
		}
		if got := b.path(); got != v.path {
			t.Fatalf("GET %s ended at %s", v.path, got)
		}
		if h := b.text("main h1"); v.heading != "" && h != v.heading {
			t.Fatalf("GET %s: heading %q, want %q", v.path, h, v.heading)
		}
		if !eval[bool](b, `typeof htmx === "object" && htmx.config.allowEval === false`) {
			t.Errorf("GET %s: htmx is not loaded (or not configured without eval)", v.path)
		}
	}
	check(visit{"/backoffice/signin", "Sign in"})
	b.signIn(env, apptest.AdminEmail)
	for _, v := range []visit{
		{"/backoffice/", "Dashboard"},
		{"/backoffice/partners", "Partners"},
		{"/backoffice/partners/new", "New partner"},
		{"/backoffice/partners/" + p.ID, "CSP Partner"},
		{"/backoffice/staff", ""},
		{"/backoffice/staff/new", ""},
		{"/backoffice/staff/" + staffID, ""},
		{"/backoffice/audit", "Audit log"},
		{"/backoffice/account", ""},
		{"/backoffice/search?q=CSP", "Search"},
	} {
		check(v)
	}
	// Let the renderer report what it still has queued.
	b.settle()

	var bad []consoleLine
	for _, c := range b.consoleLines() {
		if isCSPMessage(c) || c.Kind == "exception" {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d CSP violation or exception message(s), want 0:\n%s", len(bad), strings.Join(uniqueLines(bad), "\n"))
	}
}

func TestStoredXSSInAPartnerNameIsShownAsText(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const name = `<img src=x onerror=alert(1)>`
	p := env.NewPartner(t, emi.PartnerCreate{Name: name})
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)

	imgs := `document.querySelectorAll('img[src="x"], img[onerror]').length`

	b.open("/backoffice/partners")
	if links := b.texts(`[data-testid="partners-table"] a`); !slices.Contains(links, name) {
		t.Fatalf("partners list links %q: the name is not shown as text", links)
	}
	if n := eval[int](b, imgs); n != 0 {
		t.Fatalf("partners list has %d injected img element(s)", n)
	}

	b.open("/backoffice/partners/" + p.ID)
	if h := b.text("main h1"); h != name {
		t.Fatalf("partner page heading %q, want the name as text", h)
	}
	if n := eval[int](b, imgs); n != 0 {
		t.Fatalf("partner page has %d injected img element(s)", n)
	}

	b.open("/backoffice/search?q=" + strings.ReplaceAll(name, " ", "+"))
	if n := eval[int](b, imgs); n != 0 {
		t.Fatalf("search page has %d injected img element(s)", n)
	}
	b.open("/backoffice/audit")
	if n := eval[int](b, imgs); n != 0 {
		t.Fatalf("audit page has %d injected img element(s)", n)
	}

	b.settle()
	if d := b.dialogsOpened(); len(d) > 0 {
		t.Fatalf("JavaScript dialog(s) opened: %q", d)
	}
	for _, c := range b.consoleLines() {
		if isCSPMessage(c) && strings.Contains(c.Text, "inline event handler") {
			t.Fatalf("the page tried to run an injected event handler: %s", c)
		}
	}
}
