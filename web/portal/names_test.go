package portal_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
)

var (
	scriptOrStyle = regexp.MustCompile(`(?is)<(script|style)\b.*?</(script|style)>`)
	anyTag        = regexp.MustCompile(`(?s)<[^>]*>`)
)

// visibleText is what a page shows: the markup without tags, scripts and
// styles, entities decoded. Attributes (title, data-copy-text, href) are
// not shown, which is where an id may stay beside a name.
func visibleText(body string) string {
	return html.UnescapeString(anyTag.ReplaceAllString(scriptOrStyle.ReplaceAllString(body, " "), " "))
}

// TestNoPartnerOrStaffIDWhereANameExists: every back-office page, as each
// role sees it, shows partners and staff members by name; their ids appear
// only on hover (title) or behind a copy button, never as text, whole or
// shortened ("01a217a1…"). The partner's and staff member's own page may
// show their own id (it is what the page is about). On the old code
// customer service saw partners as "01a217a1…" on the people, account, card
// and transfer pages and the audit log named actors by id, so this test
// failed there.
func TestNoPartnerOrStaffIDWhereANameExists(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var ids []string
	if err := f.env.App.DB.Select(&ids, `SELECT id::text FROM partners UNION ALL SELECT id::text FROM staff_users`); err != nil {
		t.Fatal(err)
	}
	if len(ids) < 6 {
		t.Fatalf("only %d partners and staff members", len(ids))
	}
	var gets []string
	for _, rt := range routes(t, f.env) {
		if method, route, _ := strings.Cut(rt, " "); method == http.MethodGet {
			gets = append(gets, route)
		}
	}
	scanned := 0
	for _, email := range []string{apptest.AdminEmail, apptest.UnderwriterEmail, apptest.ComplianceEmail, apptest.CSEmail, apptest.AuditorEmail} {
		b := f.env.NewBrowser()
		b.SignIn(t, email)
		for _, route := range gets {
			path := f.path(route)
			p := b.Get(t, path)
			if p.Status != http.StatusOK || !strings.Contains(p.Header.Get("Content-Type"), "text/html") {
				continue
			}
			scanned++
			text := visibleText(p.Body)
			for _, id := range ids {
				if (route == "/partners/{id}" || route == "/staff/{id}") && strings.Contains(path, id) {
					continue
				}
				// Whole ids only: a shortened one ("01a217a1…") cannot be
				// told from any other token made in the same minute (ids
				// are UUIDv7, time first), so the positive check below
				// covers it.
				if at := strings.Index(text, id); at >= 0 {
					i := max(at-60, 0)
					t.Errorf("%s as %s shows the id %s as text: …%s…", path, email, id, strings.Join(strings.Fields(text[i:min(i+160, len(text))]), " "))
				}
			}
		}
	}
	if scanned < 100 {
		t.Fatalf("only %d pages scanned", scanned)
	}
	// Customer service, who may not open partners' pages, reads the
	// partner's name (with the id on hover) on the person, account, card
	// and transfer pages; it used to be "01a217a1…".
	cs := f.env.NewBrowser()
	cs.SignIn(t, apptest.CSEmail)
	for _, path := range []string{"/backoffice/users/" + f.people.user, "/backoffice/accounts/" + f.account,
		"/backoffice/cards/" + f.card, "/backoffice/transfers/" + f.transfer, "/backoffice/users?q=Sandqvist"} {
		if p := cs.Get(t, path); !strings.Contains(p.Body, `title="`+f.partner.ID+`">Fixture Partner<`) {
			t.Errorf("%s: HTTP %d, the partner is not named Fixture Partner with its id on hover", path, p.Status)
		}
	}
}

// TestPartnerNamesAreUniqueIgnoringCase: "Demo Partner" twice made filters
// list it twice. The back-office form answers a taken name beside the name
// field and creates nothing; the old code created a second "Fixture
// Partner".
func TestPartnerNamesAreUniqueIgnoringCase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	before := rowCounts(t, f.env)
	p := admin.Post(t, "/backoffice/partners", url.Values{"name": {"  fixture PARTNER "}})
	if p.Status != http.StatusUnprocessableEntity || !regexp.MustCompile(`id="name-error"[^>]*>is already the name of another partner`).MatchString(p.Body) {
		t.Fatalf("a taken name: HTTP %d, no message beside the name", p.Status)
	}
	if !strings.Contains(p.Body, `value="fixture PARTNER"`) {
		t.Error("the refused form lost the name typed")
	}
	if after := rowCounts(t, f.env); !sameCounts(before, after) {
		t.Fatalf("a refused name changed rows: %v -> %v", before, after)
	}
	if _, err := f.env.App.DB.Exec(`INSERT INTO partners (id, name, master_merchant) VALUES (gen_random_uuid(), 'FIXTURE partner', gen_random_uuid())`); err == nil {
		t.Fatal("the database accepts a second FIXTURE partner")
	}
}

// TestAuditLogNamesActorsAndFiltersByNameOrEmail: the audit log shows who
// acted by name, with the id on hover; the actor filter finds a staff
// member by name or e-mail (it matched ids only); a malformed or reversed
// date range is refused with a message beside the field (it was ignored,
// listing everything); the IP and the request id are two columns.
func TestAuditLogNamesActorsAndFiltersByNameOrEmail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	cs := f.env.NewBrowser()
	cs.SignIn(t, apptest.CSEmail) // an audited sign-in by "Sandbox Customer Service"
	var csID, csName string
	if err := f.env.App.DB.QueryRow(`SELECT id::text, name FROM staff_users WHERE email = $1`, apptest.CSEmail).Scan(&csID, &csName); err != nil {
		t.Fatal(err)
	}
	actorCell := regexp.MustCompile(`<td title="([0-9a-f-]{36})" data-label="Actor">(?:<a [^>]*>)?([^<]+)<`)
	actors := func(p apptest.Page) map[string]string {
		out := map[string]string{}
		for _, m := range actorCell.FindAllStringSubmatch(p.Body, -1) {
			out[m[1]] = html.UnescapeString(m[2])
		}
		return out
	}
	for _, q := range []string{csName, strings.ToUpper(apptest.CSEmail), "cs@sandbox", csID} {
		p := admin.Get(t, "/backoffice/audit?actor="+url.QueryEscape(q))
		got := actors(p)
		if p.Status != http.StatusOK || len(got) != 1 || got[csID] != csName {
			t.Errorf("actor %q: HTTP %d, actors %v, want only %s", q, p.Status, got, csName)
		}
	}
	if p := admin.Get(t, "/backoffice/audit?actor="+url.QueryEscape("Fixture Partner")); p.Status != http.StatusOK {
		t.Errorf("actor by partner name: HTTP %d", p.Status)
	}
	all := admin.Get(t, "/backoffice/audit")
	if !strings.Contains(all.Body, `<th scope="col">IP</th><th scope="col">Request id</th>`) {
		t.Error("the IP and the request id are not two columns")
	}
	if !strings.Contains(all.Body, ">system (test)<") {
		t.Error("the system actor is not named")
	}
	for _, c := range []struct{ q, field, msg string }{
		{"from=2026-13-01", "from", "is not a date"},
		{"to=yesterday", "to", "is not a date"},
		{"from=2026-03-02&to=2026-03-01", "to", "is before the start date"},
	} {
		p := admin.Get(t, "/backoffice/audit?"+c.q)
		if p.Status != http.StatusUnprocessableEntity || !regexp.MustCompile(`id="`+c.field+`-error">`+c.msg).MatchString(p.Body) ||
			len(actors(p)) != 0 {
			t.Errorf("%s: HTTP %d, want 422 with %q beside %s and no rows", c.q, p.Status, c.msg, c.field)
		}
		h := admin.Get(t, "/backoffice/audit?"+c.q, "HX-Request", "true")
		if !strings.Contains(h.Body, `data-testid="filter-refused"`) {
			t.Errorf("%s by htmx: the refusal is not in the swapped table", c.q)
		}
	}
	if p := admin.Get(t, "/backoffice/partners/"+f.partner.ID+"/events?from=31.12.2026"); p.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.Body, `id="from-error"`) {
		t.Errorf("delivery log with a bad date: HTTP %d", p.Status)
	}
}

// TestAuditChangesNameTheStaffMembersTheyMention: a note that mentions a
// colleague is audited with the colleague's id ({"mentions":["01a2…"]});
// the audit log and the application's audit trail show the colleague's name
// there, and the changes as recorded, id and all, on hover. The old pages
// printed the id: this test failed there.
func TestAuditChangesNameTheStaffMembersTheyMention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var complianceID, complianceName string
	if err := f.env.App.DB.QueryRow(`SELECT id::text, name FROM staff_users WHERE email = $1`, apptest.ComplianceEmail).Scan(&complianceID, &complianceName); err != nil {
		t.Fatal(err)
	}
	app := f.onboarding.application
	if _, err := f.env.App.Review.AddNote(staffCtx(t, f.env, apptest.UnderwriterEmail), app, 0, "@"+apptest.ComplianceEmail+" please look at the owner"); err != nil {
		t.Fatal(err)
	}
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	named := html.EscapeString(`{"mentions":["` + complianceName + `"],"note":`)
	for _, path := range []string{"/backoffice/audit?action=application.note", "/backoffice/applications/" + app} {
		p := admin.Get(t, path)
		if p.Status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, p.Status)
		}
		if !strings.Contains(p.Body, named) {
			t.Errorf("%s: the note's changes do not name %s", path, complianceName)
		}
		if strings.Contains(visibleText(p.Body), complianceID) {
			t.Errorf("%s shows the id %s as text", path, complianceID)
		}
		if !regexp.MustCompile(`title="[^"]*` + complianceID + `[^"]*" data-label="Changes">` + regexp.QuoteMeta(named)).MatchString(p.Body) {
			t.Errorf("%s: the changes as recorded are not on hover", path)
		}
	}
}
