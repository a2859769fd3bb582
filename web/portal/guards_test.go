package portal_test

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"emi/internal/app/apptest"
	"emi/web/portal"
)

// takesRe reads what a refusal says the operation takes ("Your roles do
// not allow this: it takes partners.manage.").
var takesRe = regexp.MustCompile(`it takes ([a-z0-9_.]+(?: or [a-z0-9_.]+)*)\.`)

// TestRouteGuardsAreTheServiceRules proves that a route's guard is the
// service's own rule, not one the portal holds: for every route and every
// role its guard refuses, the same request sent to the back office with
// the guards turned off is refused by the service, for the same reason
// (the operation and what it takes). A guard that names another operation
// than the service checks (the partner routes once required
// sanctions.manage where the service checks partners.manage), or a
// service that relies on the guard and checks nothing, fails it.
func TestRouteGuardsAreTheServiceRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	open := chi.NewRouter()
	open.Mount("/backoffice", portal.UnguardedHandler(f.env.App.Portal()))
	unguarded := httptest.NewServer(open)
	t.Cleanup(unguarded.Close)

	roles := []string{apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail}
	browsers := map[string]*apptest.Browser{}
	for _, r := range roles {
		b := f.env.NewBrowser()
		b.SignIn(t, r) // the session is in PostgreSQL: both servers read it
		browsers[r] = b
	}
	// A form that passes the handlers' own checks where it can, so that
	// the request reaches the service: only roles the guard refuses are
	// sent, so a service that refuses nothing would let it through.
	form := url.Values{"roles": {"admin"}, "processing": {"automatic"}, "name": {"x"}, "reason": {"guard test reason"},
		"amount": {"1.00"}, "currency": {"EUR"}, "direction": {"credit"}, "scheme": {"sepa"}, "to": {f.account},
		"decision": {"approved"}, "action": {"reject"}, "reason_code": {"other"}, "text": {"guard test text"},
		"body": {"guard test note"}, "key": {"x"}, "merchant_name": {"Guard Shop"}, "mcc": {"5411"}, "note": {"guard test"}}
	// Pages that only show an empty form read nothing a service guards:
	// the action they lead to is a route of its own, checked here.
	formOnly := map[string]bool{"GET /partners/new": true, "GET /staff/new": true}
	allowed := routeRoles()
	checked, inputOnly := 0, []string(nil)
	for _, rt := range routes(t, f.env) {
		method, route, _ := strings.Cut(rt, " ")
		if strings.HasPrefix(route, "/signin") || route == "/signout" || formOnly[rt] {
			continue
		}
		for _, role := range roles {
			if who := allowed[rt]; len(who) == 0 || who[0] == "*" || slices.Contains(who, role) {
				// The guard lets this role through (TestRoleRouteMatrix
				// proves it); an action is not sent where it would run.
				continue
			}
			if role == apptest.AuditorEmail && strings.HasPrefix(route, "/staff/{id}") {
				continue // {id} is the auditor: the service lets anyone end their own sessions
			}
			b := browsers[role]
			path := unfilled.ReplaceAllString(f.path(route), "00000000-0000-4000-8000-000000000000")
			var guarded apptest.Page
			if method == http.MethodGet {
				guarded = b.Get(t, path)
			} else {
				guarded = b.Post(t, path, form)
			}
			if guarded.Status != http.StatusForbidden {
				continue // the guard lets this role through
			}
			want := takes(guarded.Body)
			if want == "" {
				t.Errorf("%s as %s: the guard's refusal does not say what it takes", rt, role)
				continue
			}
			got, status := sendUnguarded(t, b, unguarded.URL, method, path, form)
			switch {
			case got == "" && status < 400:
				t.Errorf("%s as %s: the guard refuses (it takes %s), but without it the request went through (HTTP %d): "+
					"the rule lives only in the portal", rt, role, want, status)
			case got == "":
				// The input was refused before any rule was asked (an
				// object that does not exist, a form the screen refuses).
				inputOnly = append(inputOnly, rt+" as "+role)
				continue
			case got != want && !strings.HasSuffix(got, ".view"):
				// Not being allowed to see the object comes first; any
				// other refusal must be the guard's own operation.
				t.Errorf("%s as %s: the guard says it takes %s, the service %s", rt, role, want, got)
			}
			checked++
		}
	}
	t.Logf("%d refusals compared; %d requests refused for their input before a rule was asked: %v", checked, len(inputOnly), inputOnly)
	if checked < 100 {
		t.Fatalf("only %d refusals compared: the fixture does not reach the routes", checked)
	}
}

// unfilled matches a route parameter the fixture has no object for: a
// well-formed token of nothing is sent instead.
var unfilled = regexp.MustCompile(`\{[a-z]+\}`)

// sendUnguarded sends the request to the unguarded back office with b's
// session, follows one redirect (a refusal shown as a flash on the page it
// leads to) and returns what the refusal says it takes ("" when nothing
// was refused) and the first answer's status.
func sendUnguarded(t *testing.T, b *apptest.Browser, base, method, path string, form url.Values) (string, int) {
	t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if got := takes(string(raw)); got != "" || res.StatusCode != http.StatusSeeOther {
		return got, res.StatusCode
	}
	next, err := http.NewRequest(http.MethodGet, base+res.Header.Get("Location"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := b.Client.Do(next)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(res2.Body)
	res2.Body.Close()
	return takes(string(raw)), res.StatusCode
}

func takes(body string) string {
	m := takesRe.FindStringSubmatch(html.UnescapeString(body))
	if m == nil {
		return ""
	}
	return m[1]
}
