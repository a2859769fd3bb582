package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
)

func sysCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
}

func TestPartnersScreens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	for _, n := range []string{"Beta Pay", "alpha Money", "Gamma Cards"} {
		if _, err := f.env.App.Partners.Create(sysCtx(), emi.PartnerCreate{Name: n}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the list sorts by name both ways and by creation", func(t *testing.T) {
		names := regexp.MustCompile(`/backoffice/partners/[0-9a-f-]{36}">([^<]+)<`)
		order := func(q string) string {
			var out []string
			for _, m := range names.FindAllStringSubmatch(admin.Get(t, "/backoffice/partners"+q).Body, -1) {
				out = append(out, m[1])
			}
			return strings.Join(out, ",")
		}
		if got := order("?sort=name&dir=asc"); got != "alpha Money,Beta Pay,Fixture Partner,Gamma Cards" {
			t.Errorf("by name: %s", got)
		}
		if got := order("?sort=name&dir=desc"); got != "Gamma Cards,Fixture Partner,Beta Pay,alpha Money" {
			t.Errorf("by name desc: %s", got)
		}
		if got := order(""); got != "Gamma Cards,alpha Money,Beta Pay,Fixture Partner" {
			t.Errorf("default (newest first): %s", got)
		}
		if got := order("?sort=drop+table&dir=sideways"); got != order("") {
			t.Errorf("unknown sort keys must fall back to the default: %s", got)
		}
	})
	t.Run("a new partner's secret is in the answer to the POST and nowhere after", func(t *testing.T) {
		p := admin.Post(t, "/backoffice/partners", url.Values{"name": {"Once Ltd"}, "processing": {"semi-automatic"}, "webhook_url": {"http://127.0.0.1:9/emi"}})
		m := regexp.MustCompile(`data-testid="api-secret">(as_[A-Za-z0-9_-]+)<`).FindStringSubmatch(p.Body)
		if p.Status != http.StatusOK || m == nil || !strings.Contains(p.Body, "whsec_") {
			t.Fatalf("create: HTTP %d, no secret shown", p.Status)
		}
		secret := m[1]
		var id string
		if err := f.env.App.DB.Get(&id, `SELECT id FROM partners WHERE name = 'Once Ltd' AND processing = 'semi-automatic'`); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/backoffice/partners", "/backoffice/partners/" + id, "/backoffice/audit", "/backoffice/"} {
			if strings.Contains(admin.Get(t, path).Body, secret) {
				t.Errorf("%s shows the secret again", path)
			}
		}
		var n int
		_ = f.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE changes::text LIKE '%' || $1 || '%'`, secret)
		var m2 int
		_ = f.env.App.DB.Get(&m2, `SELECT count(*) FROM sessions WHERE encode(data, 'escape') LIKE '%' || $1 || '%'`, secret)
		if n+m2 != 0 {
			t.Fatalf("the secret is stored in clear: audit %d, sessions %d", n, m2)
		}
	})
	t.Run("invalid input re-renders the form with field errors and creates nothing", func(t *testing.T) {
		before := rowCounts(t, f.env)["partners"]
		p := admin.Post(t, "/backoffice/partners", url.Values{"name": {""}, "webhook_url": {"http://plain.example.com"}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="name-error"`) {
			t.Fatalf("empty name: HTTP %d", p.Status)
		}
		if rowCounts(t, f.env)["partners"] != before {
			t.Fatal("an invalid form created a partner")
		}
		// A valid name with a refused webhook URL: the guard's reason on
		// the webhook_url field, and the whole creation rolled back.
		keysBefore := rowCounts(t, f.env)["partner_keys"]
		p = admin.Post(t, "/backoffice/partners", url.Values{"name": {"Guarded Ltd"}, "webhook_url": {"http://10.0.0.8/hooks"}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="webhook_url-error"`) {
			t.Fatalf("internal webhook URL: HTTP %d", p.Status)
		}
		if counts := rowCounts(t, f.env); counts["partners"] != before || counts["partner_keys"] != keysBefore {
			t.Fatal("a refused webhook URL left a partner or key behind")
		}
	})
	t.Run("rotating a secret shows the new one once and marks the key rotating", func(t *testing.T) {
		p := admin.Post(t, "/backoffice/partners/"+f.partner.ID+"/keys/"+f.partner.KeyID+"/rotate", url.Values{})
		if p.Status != http.StatusOK || !strings.Contains(p.Body, `data-testid="api-secret">as_`) {
			t.Fatalf("rotate: HTTP %d", p.Status)
		}
		if d := admin.Get(t, "/backoffice/partners/"+f.partner.ID); !strings.Contains(d.Body, ">rotating<") {
			t.Fatal("the key is not shown as rotating during the overlap")
		}
	})
	t.Run("requiring signature version 2 refuses version 1 at once, audited", func(t *testing.T) {
		base := "/backoffice/partners/" + f.partner.ID
		if d := admin.Get(t, base); !strings.Contains(d.Body, `data-testid="require-signature-v2"`) || !strings.Contains(d.Body, "version 1 or 2") {
			t.Fatal("the partner page offers no way to require signature version 2")
		}
		p := admin.Post(t, base+"/keys/"+f.partner.KeyID+"/signature-version", url.Values{"signature_version": {"2"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("require version 2: HTTP %d", p.Status)
		}
		f.env.Clock.Advance(time.Second)
		v1 := apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details"}
		apptest.Expect(t, "version 1 on a key that requires 2", f.partner.Do(t, v1), 10001, 401)
		v2 := v1
		v2.SignatureVersion = emi.SignatureV2
		apptest.Expect(t, "version 2", f.partner.Do(t, v2), 0, 200)
		if d := admin.Get(t, base); !strings.Contains(d.Body, "version 2 required") || !strings.Contains(d.Body, `data-testid="allow-signature-v1"`) {
			t.Fatal("the key is not shown as requiring version 2")
		}
		var n int
		if err := f.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'partner_key.set_signature_version'
			AND resource_token = $1 AND actor_type = 'staff'`, f.partner.KeyID); err != nil || n != 1 {
			t.Fatalf("audit rows: %d (%v)", n, err)
		}
		// A value that is not a version changes nothing.
		for _, v := range []string{"3", "", "two"} {
			admin.Post(t, base+"/keys/"+f.partner.KeyID+"/signature-version", url.Values{"signature_version": {v}})
		}
		apptest.Expect(t, "still requires version 2", f.partner.Do(t, v1), 10001, 401)
		p = admin.Post(t, base+"/keys/"+f.partner.KeyID+"/signature-version", url.Values{"signature_version": {"1"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("accept version 1 again: HTTP %d", p.Status)
		}
		f.env.Clock.Advance(time.Second)
		apptest.Expect(t, "version 1 accepted again", f.partner.Do(t, v1), 0, 200)
	})
	t.Run("revoking a key stops it at once", func(t *testing.T) {
		p := admin.Post(t, "/backoffice/partners/"+f.partner.ID+"/keys/"+f.partner.KeyID+"/revoke", url.Values{})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("revoke: HTTP %d", p.Status)
		}
		r := f.partner.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details"})
		apptest.Expect(t, "revoked key", r, 10001, 401)
		if d := admin.Get(t, "/backoffice/partners/"+f.partner.ID); !strings.Contains(d.Body, ">revoked<") {
			t.Fatal("the key is not shown as revoked")
		}
	})
	t.Run("an unknown partner is a 404 page", func(t *testing.T) {
		if p := admin.Get(t, "/backoffice/partners/not-a-token"); p.Status != http.StatusNotFound || !strings.Contains(p.Body, `data-testid="error-404"`) {
			t.Fatalf("HTTP %d", p.Status)
		}
	})
}

func TestAuditScreen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := 0; i < 60; i++ {
		if _, err := f.env.App.Partners.Create(sysCtx(), emi.PartnerCreate{Name: fmt.Sprintf("P%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	rows := regexp.MustCompile(`<tr><td class="mono" data-label="Time \(UTC\)">`)

	full := admin.Get(t, "/backoffice/audit")
	if !strings.Contains(full.Body, "<!doctype html>") && !strings.Contains(full.Body, "<!DOCTYPE html>") {
		t.Fatal("a plain GET must get the full page")
	}
	if n := len(rows.FindAllString(full.Body, -1)); n != 50 {
		t.Fatalf("first page has %d rows, want 50", n)
	}
	if !strings.Contains(strings.Join(full.Header.Values("Vary"), ","), "HX-Request") {
		t.Fatal("no Vary: HX-Request")
	}
	next := regexp.MustCompile(`href="(/backoffice/audit\?before=\d+)"`).FindStringSubmatch(full.Body)
	if next == nil {
		t.Fatal("no link to older rows")
	}
	partial := admin.Get(t, strings.ReplaceAll(next[1], "&amp;", "&"), "HX-Request", "true")
	if strings.Contains(partial.Body, "<html") || !strings.Contains(partial.Body, `id="audit-table"`) {
		t.Fatal("an htmx request must get only the partial")
	}
	if n := len(rows.FindAllString(partial.Body, -1)); n == 0 || n > 50 {
		t.Fatalf("second page has %d rows", n)
	}
	filtered := admin.Get(t, "/backoffice/audit?action=partner.create&resource_type=partner")
	if n := len(rows.FindAllString(filtered.Body, -1)); n != 50 || strings.Contains(filtered.Body, "staff.sign_in") {
		t.Fatalf("filtered page: %d rows", n)
	}
	if p := admin.Get(t, "/backoffice/audit?action=no.such.action"); !strings.Contains(p.Body, "No audit entries match") {
		t.Fatal("no empty state for an empty filter")
	}
	if p := admin.Get(t, "/backoffice/audit?from=2000-01-01&to=2000-01-02"); !strings.Contains(p.Body, "No audit entries match") {
		t.Fatal("the date filter is ignored")
	}
}

func TestStaffAndAccountScreens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)

	// A second administrator approves the first one's privileged changes.
	newStaff(t, f.env, "second.admin@emi.example", "Second Admin", emi.RoleAdmin)
	admin2 := f.env.NewBrowser()
	admin2.SignIn(t, "second.admin@emi.example")
	changeOf := func(t *testing.T, email string) string {
		t.Helper()
		var id string
		if err := f.env.App.DB.Get(&id, `SELECT c.id FROM staff_changes c JOIN control_requests r ON r.id = c.id WHERE lower(c.email) = $1 AND r.status = 'pending'`, email); err != nil {
			t.Fatalf("pending change of %s: %v", email, err)
		}
		return id
	}
	half := regexp.MustCompile(`half of the temporary password, shown once:</strong> <span class="mono">([^<]+)<`)

	t.Run("a money user needs a second admin, then chooses a password and enrols two-factor authentication", func(t *testing.T) {
		p := admin.Post(t, "/backoffice/staff", url.Values{"email": {"new.person@emi.example"}, "name": {"New Person"},
			"roles": {"compliance", "auditor"}})
		first := half.FindStringSubmatch(p.Body)
		if p.Status != http.StatusOK || first == nil {
			t.Fatalf("propose: HTTP %d, no first half", p.Status)
		}
		id := changeOf(t, "new.person@emi.example")
		if l := admin.Get(t, "/backoffice/staff"); !strings.Contains(l.Body, `data-testid="staff-change-`+id+`"`) {
			t.Fatal("the staff page does not list the pending change")
		}
		if a := admin.Post(t, "/backoffice/staff/changes/"+id+"/approve", url.Values{}); a.Status != http.StatusSeeOther ||
			changeOf(t, "new.person@emi.example") != id {
			t.Fatalf("the proposer approved their own change: HTTP %d", a.Status)
		}
		a := admin2.Post(t, "/backoffice/staff/changes/"+id+"/approve", url.Values{})
		second := half.FindStringSubmatch(a.Body)
		if a.Status != http.StatusOK || second == nil {
			t.Fatalf("approve: HTTP %d, no second half", a.Status)
		}
		nb := f.env.NewBrowser()
		if s := nb.Post(t, "/backoffice/signin", url.Values{"email": {"new.person@emi.example"}, "password": {first[1]}}); s.Status != http.StatusUnauthorized {
			t.Fatalf("the proposer's half alone: HTTP %d", s.Status)
		}
		s := nb.Post(t, "/backoffice/signin", url.Values{"email": {"new.person@emi.example"}, "password": {first[1] + second[1]}})
		if s.Location != "/backoffice/signin/password" {
			t.Fatalf("first sign-in goes to %q, want the new-password page", s.Location)
		}
		s = nb.Post(t, "/backoffice/signin/password", url.Values{"current_password": {first[1] + second[1]}, "password": {"correct horse 42 battery"}})
		if s.Location != "/backoffice/signin/enroll" {
			t.Fatalf("after the new password: %q, want enrolment", s.Location)
		}
		e := nb.Get(t, "/backoffice/signin/enroll")
		if !strings.Contains(e.Body, `data-testid="totp-qr"`) || !strings.Contains(e.Body, "data:image/png;base64,") {
			t.Fatal("enrolment page without a QR code")
		}
		if nb.Get(t, "/backoffice/").Location != "/backoffice/signin" {
			t.Fatal("a half-signed-in user reached the dashboard")
		}
	})
	t.Run("an admin cannot choose a colleague's password: the form has none and a forged one is ignored", func(t *testing.T) {
		if f := admin.Get(t, "/backoffice/staff/new"); strings.Contains(f.Body, `name="password"`) {
			t.Fatal("the new-user form asks for a password")
		}
		p := admin.Post(t, "/backoffice/staff", url.Values{"email": {"chosen@emi.example"}, "name": {"Chosen"}, "roles": {"auditor"},
			"password": {"Chosen-by-admin-2026"}})
		if p.Status != http.StatusOK || !strings.Contains(p.Body, "Temporary password, shown once:") {
			t.Fatalf("auditor: HTTP %d", p.Status)
		}
		if s := f.env.NewBrowser().Post(t, "/backoffice/signin", url.Values{"email": {"chosen@emi.example"}, "password": {"Chosen-by-admin-2026"}}); s.Status != http.StatusUnauthorized {
			t.Fatalf("the admin's chosen password signs in: HTTP %d", s.Status)
		}
	})
	t.Run("nobody can change their own roles", func(t *testing.T) {
		var adminID string
		_ = f.env.App.DB.Get(&adminID, `SELECT id FROM staff_users WHERE email = $1`, apptest.AdminEmail)
		p := admin.Post(t, "/backoffice/staff/"+adminID+"/roles", url.Values{"roles": {"auditor"}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("own roles: HTTP %d", p.Status)
		}
		var roles []string
		_ = f.env.App.DB.Select(&roles, `SELECT unnest(roles) FROM staff_users WHERE id = $1`, adminID)
		if strings.Join(roles, ",") != "admin" {
			t.Fatalf("admin's roles changed to %v", roles)
		}
		if d := admin.Get(t, "/backoffice/staff/"+adminID); strings.Contains(d.Body, "Save roles") {
			t.Fatal("the own staff page offers the roles form")
		}
	})
	t.Run("changing roles applies at the next sign-in", func(t *testing.T) {
		u := f.env.NewBrowser()
		u.SignIn(t, apptest.UnderwriterEmail)
		var id string
		_ = f.env.App.DB.Get(&id, `SELECT id FROM staff_users WHERE email = $1`, apptest.UnderwriterEmail)
		// A privileged grant is proposed, and reissues the credentials in
		// two halves (the proposer's shown here).
		p := admin.Post(t, "/backoffice/staff/"+id+"/roles", url.Values{"roles": {"underwriter", "compliance"}})
		first := half.FindStringSubmatch(p.Body)
		if p.Status != http.StatusOK || first == nil {
			t.Fatalf("set roles: HTTP %d, no first half", p.Status)
		}
		if p := u.Get(t, "/backoffice/audit"); p.Status != http.StatusForbidden {
			t.Fatalf("a proposed grant took effect before approval: HTTP %d", p.Status)
		}
		a := admin2.Post(t, "/backoffice/staff/changes/"+changeOf(t, apptest.UnderwriterEmail)+"/approve", url.Values{})
		second := half.FindStringSubmatch(a.Body)
		if a.Status != http.StatusOK || second == nil {
			t.Fatalf("approve the grant: HTTP %d, no second half", a.Status)
		}
		if p := u.Get(t, "/backoffice/"); p.Location != "/backoffice/signin" {
			t.Fatal("the user's old session survived a role change")
		}
		nb := f.env.NewBrowser()
		if s := nb.Post(t, "/backoffice/signin", url.Values{"email": {apptest.UnderwriterEmail}, "password": {staff.SandboxStaffPassword}}); s.Status != http.StatusUnauthorized {
			t.Fatalf("the old password after a privileged grant: HTTP %d", s.Status)
		}
		if s := nb.Post(t, "/backoffice/signin", url.Values{"email": {apptest.UnderwriterEmail}, "password": {first[1] + second[1]}}); s.Location != "/backoffice/signin/password" {
			t.Fatalf("the reissued password goes to %q, want the new-password page", s.Location)
		}
		var roles []string
		_ = f.env.App.DB.Select(&roles, `SELECT unnest(roles) FROM staff_users WHERE id = $1`, id)
		if !slices.Contains(roles, "compliance") {
			t.Fatalf("with the grant approved the roles are %v", roles)
		}
	})
	t.Run("a reset issues a temporary password shown once", func(t *testing.T) {
		p := admin.Post(t, "/backoffice/staff/"+f.targetID+"/reset", url.Values{})
		m := regexp.MustCompile(`Temporary password, shown once:</strong> <span class="mono">([^<]+)<`).FindStringSubmatch(p.Body)
		if m == nil {
			t.Fatalf("reset: HTTP %d, no temporary password", p.Status)
		}
		if strings.Contains(admin.Get(t, "/backoffice/staff/"+f.targetID).Body, m[1]) {
			t.Fatal("the temporary password is shown again")
		}
		nb := f.env.NewBrowser()
		if s := nb.Post(t, "/backoffice/signin", url.Values{"email": {apptest.AuditorEmail}, "password": {m[1]}}); s.Location != "/backoffice/signin/password" {
			t.Fatalf("sign-in with the temporary password goes to %q, want the new-password page", s.Location)
		}
	})
	t.Run("the account page changes the password with the current one", func(t *testing.T) {
		cs := f.env.NewBrowser()
		cs.SignIn(t, apptest.CSEmail)
		if p := cs.Post(t, "/backoffice/account/password", url.Values{"current_password": {"wrong one 123"}, "password": {"a brand new 2026 secret"}}); p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("wrong current password: HTTP %d", p.Status)
		}
		if p := cs.Post(t, "/backoffice/account/password", url.Values{"current_password": {"Sandbox-Staff-2026"}, "password": {"a brand new 2026 secret"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("change: HTTP %d", p.Status)
		}
		nb := f.env.NewBrowser()
		if s := nb.Post(t, "/backoffice/signin", url.Values{"email": {apptest.CSEmail}, "password": {"a brand new 2026 secret"}}); s.Location != "/backoffice/signin/totp" {
			t.Fatalf("sign-in with the new password goes to %q", s.Location)
		}
	})
	t.Run("sign-out is audited", func(t *testing.T) {
		c := f.env.NewBrowser()
		c.SignIn(t, apptest.ComplianceEmail)
		c.Post(t, "/backoffice/signout", url.Values{})
		var n int
		_ = f.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'staff.sign_out' AND actor_type = 'staff'`)
		if n == 0 {
			t.Fatal("no audit row for the sign-out")
		}
	})
}

func TestSearch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	if p := admin.Get(t, "/backoffice/search?q=fixture"); !strings.Contains(p.Body, "/backoffice/partners/"+f.partner.ID) {
		t.Fatal("search by partner name finds nothing")
	}
	if p := admin.Get(t, "/backoffice/search?q="+f.partner.APIKey); !strings.Contains(p.Body, "/backoffice/partners/"+f.partner.ID) {
		t.Fatal("search by API key finds nothing")
	}
	if p := admin.Get(t, "/backoffice/search?q=cs%40sandbox"); !strings.Contains(p.Body, "Customer") && !strings.Contains(p.Body, "cs@sandbox.emi") {
		t.Fatal("search by staff e-mail finds nothing")
	}
	if p := admin.Get(t, "/backoffice/search?q=%25"); strings.Contains(p.Body, f.partner.ID) {
		t.Fatal("a % in the query is a wildcard")
	}
	cs := f.env.NewBrowser()
	cs.SignIn(t, apptest.CSEmail)
	if p := cs.Get(t, "/backoffice/search?q=fixture"); strings.Contains(p.Body, f.partner.ID) {
		t.Fatal("customer service sees partners in the search")
	}
}

func TestJobsScreenShowsDeadAndStuckJobsFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.env.App.DB.Exec(`INSERT INTO jobs (kind, payload, state, attempt, max_attempts, run_at, last_error, finished_at)
		VALUES ('webhook.deliver', '{}', 'dead', 25, 25, now(), 'receiver answered 500' || chr(10) || 'stack…', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.env.App.DB.Exec(`INSERT INTO jobs (kind, payload, state, attempt, max_attempts, run_at, locked_until, locked_by)
		VALUES ('maintenance.prune', '{}', 'running', 1, 3, now(), now() - interval '5 minutes', 'gone-worker')`); err != nil {
		t.Fatal(err)
	}
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	p := admin.Get(t, "/backoffice/jobs")
	if p.Status != http.StatusOK {
		t.Fatalf("HTTP %d", p.Status)
	}
	dead := strings.Index(p.Body, ">dead<")
	stuck := strings.Index(p.Body, ">stuck<")
	if dead < 0 || stuck < 0 || dead > stuck {
		t.Fatalf("dead (%d) and stuck (%d) jobs are not listed first", dead, stuck)
	}
	if !strings.Contains(p.Body, "receiver answered 500") || strings.Contains(p.Body, "stack…") {
		t.Fatal("the last error's first line is missing, or the rest of it leaked into the page")
	}
	if q := admin.Get(t, "/backoffice/jobs?state=bogus"); q.Status == http.StatusOK {
		t.Fatal("an unknown state is accepted")
	}
}

// TestSecretRotationDuringOverlapNeedsConfirmation performs the double
// rotation: rotating a key's secret twice (a reload of the credentials page
// re-submits the form) made the fresh secret the previous one and dropped
// the partner's working secret at once, although the page showed "previous
// valid until +24 h". Now the second rotation changes nothing and says why;
// a confirmed one replaces only the secret just shown, and the partner's
// secret keeps its overlap. On the old code the partner's original secret
// was refused (10001) right after the second rotation.
func TestSecretRotationDuringOverlapNeedsConfirmation(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	partner := env.NewPartner(t, emi.PartnerCreate{Name: "Rotating Partner"})
	rotate := "/backoffice/partners/" + partner.ID + "/keys/" + partner.KeyID + "/rotate"
	details := apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details"}
	with := func(secret string) *apptest.Partner { q := *partner; q.APISecret = secret; return &q }
	secretIn := func(p apptest.Page) string {
		m := regexp.MustCompile(`data-testid="api-secret">(as_[^<]+)<`).FindStringSubmatch(p.Body)
		if m == nil {
			t.Fatalf("no secret shown: HTTP %d", p.Status)
		}
		return m[1]
	}
	first := secretIn(admin.Post(t, rotate, url.Values{}))
	// The reload: the same POST again.
	again := admin.Post(t, rotate, url.Values{})
	if again.Status != http.StatusSeeOther || strings.Contains(again.Body, "as_") {
		t.Fatalf("second rotation during the overlap: HTTP %d", again.Status)
	}
	page := admin.Get(t, again.Location)
	if !strings.Contains(page.Body, "was not rotated") || !strings.Contains(page.Body, `data-testid="rotate-secret-confirm"`) {
		t.Fatal("the refusal is not explained, or there is no way to confirm")
	}
	env.Clock.Advance(time.Second)
	apptest.Expect(t, "the partner's secret after a reload", partner.Do(t, details), 0, 200)
	apptest.Expect(t, "the new secret after a reload", with(first).Do(t, details), 0, 200)
	// Confirmed: only the secret just shown is replaced.
	second := secretIn(admin.Post(t, rotate, url.Values{"confirm": {"overlap"}}))
	env.Clock.Advance(time.Second)
	apptest.Expect(t, "the partner's secret, still inside its overlap", partner.Do(t, details), 0, 200)
	apptest.Expect(t, "the replaced secret", with(first).Do(t, details), 10001, 401)
	apptest.Expect(t, "the newest secret", with(second).Do(t, details), 0, 200)
	// The overlap's deadline did not move.
	env.Clock.Advance(24*time.Hour - time.Minute)
	apptest.Expect(t, "the partner's secret just before its deadline", partner.Do(t, details), 0, 200)
	env.Clock.Advance(2 * time.Minute)
	apptest.Expect(t, "the partner's secret after its deadline", partner.Do(t, details), 10001, 401)
}
