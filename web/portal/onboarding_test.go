package portal_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// pdfFile is a minimal PDF that content sniffing takes for one.
var pdfFile = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")

// sandboxCompany is Sandbox Trading Ltd, which the sandbox register knows.
func sandboxCompany() map[string]any {
	return map[string]any{
		"uic": "100000001", "legal_name": "Sandbox Trading Ltd", "trade_name": "Sandbox Trading",
		"country": "GB", "city": "London", "zip": "EC1A 1BB", "address1": "1 Long Lane",
		"contact_email": "ops@sandbox-trading.example", "phone": "+442079460000",
		"website": "https://sandbox-trading.example", "description_of_activity": "Software consultancy",
		"is_sie": false,
	}
}

// elinUBO is a clean beneficial owner with all of the company.
func elinUBO() map[string]any {
	return map[string]any{
		"first_name": "Elin", "last_name": "Sandqvist", "type": []string{"ubo"},
		"ownership": true, "ownership_percentage": 100, "country": "SE", "country_of_residence": "GB",
		"birthday": "1987-03-02", "nationality": "SE", "place_of_birth": "SE", "unique_identifier": "8703021234",
		"pep_declaration": false, "pep_related_declaration": false, "is_sip": false,
		"contact_email": "elin@sandbox-trading.example",
		"documents":     []map[string]any{{"file": base64.StdEncoding.EncodeToString(pdfFile), "file_type": "pdf", "document_type": "passport"}},
	}
}

// sandboxApplication asks for an account and cards for Sandbox Trading Ltd
// with Elin as its only UBO: the automatic checks approve it.
func sandboxApplication(p *apptest.Partner) map[string]any {
	return map[string]any{
		"merchant": p.Merchant, "products": []string{"account-opening", "card-issuing"}, "due_diligence": "CDD",
		"ip_address": "203.0.113.7", "fingerprint": "fp-1", "company": sandboxCompany(),
		"members": []map[string]any{elinUBO()},
	}
}

// createApplication runs application_create and returns the application's
// token and its first member's.
func createApplication(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) (string, string) {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v3/applications", "application_create", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("application_create: %s", r)
	}
	member := ""
	if ms, _ := r.Data["members"].([]any); len(ms) > 0 {
		member, _ = ms[0].(map[string]any)["token"].(string)
	}
	return r.Data["token"].(string), member
}

// addCompanyPicture adds a PNG to the application's company and returns
// the document's token.
func addCompanyPicture(t *testing.T, env *apptest.Env, p *apptest.Partner, app string) string {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v3/applications/"+app+"/companies/documents", "company_add_document",
		map[string]any{"file": base64.StdEncoding.EncodeToString(pngFile(t)), "file_type": "png", "document_type": "incorporation-documents"})
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("company_add_document: %s", r)
	}
	return r.Data["token"].(string)
}

// onboardingFixture fills {application}, {member} and {entry}: an
// application of the fixture partner made through the partner API (it
// stays checking: the fixture runs no workers), its UBO, their documents,
// and a name on the watch list.
type onboardingFixture struct {
	application, member, companyDoc, memberDoc, entry string
}

func newOnboardingFixture(t *testing.T, env *apptest.Env, p *apptest.Partner) onboardingFixture {
	t.Helper()
	var f onboardingFixture
	f.application, f.member = createApplication(t, env, p, sandboxApplication(p))
	f.companyDoc = addCompanyPicture(t, env, p, f.application)
	if err := env.App.DB.Get(&f.memberDoc, `SELECT token FROM documents WHERE owner_token = $1`, f.member); err != nil {
		t.Fatal(err)
	}
	e, err := env.App.Watchlist.Add(staffCtx(t, env, apptest.ComplianceEmail),
		emi.WatchlistEntry{Name: "Fixture Watch Name", Category: "fraud", Note: "fixture", Source: "https://news.example/fixture"})
	if err != nil {
		t.Fatal(err)
	}
	f.entry = e.ID
	return f
}

// staffCtx acts as a sandbox staff user, as the back office does.
func staffCtx(t *testing.T, env *apptest.Env, email string) context.Context {
	t.Helper()
	var u struct {
		ID    string `db:"id"`
		Roles string `db:"roles"`
	}
	if err := env.App.DB.Get(&u, `SELECT id, array_to_string(roles, ',') AS roles FROM staff_users WHERE email = $1`, email); err != nil {
		t.Fatal(err)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: u.ID, StaffRoles: strings.Split(u.Roles, ",")})
}

// startWorkers runs the background jobs (the automatic checks) until the
// test ends.
func startWorkers(t *testing.T, env *apptest.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = env.App.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitStatus waits until the application has the status.
func waitStatus(t *testing.T, env *apptest.Env, app string, want emi.ApplicationStatus) {
	t.Helper()
	var st string
	if testwait.Try(func() bool {
		if err := env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app); err != nil {
			t.Fatal(err)
		}
		return st == string(want)
	}) {
		return
	}
	var checks []string
	_ = env.App.DB.Select(&checks, `SELECT name || '=' || status || ' ' || details::text FROM application_checks WHERE application = $1`, app)
	t.Fatalf("application %s is %s, want %s (checks %v)", app, st, want, checks)
}

// contains fails the test for each wanted text the page lacks.
func contains(t *testing.T, what string, p apptest.Page, wants ...string) {
	t.Helper()
	if p.Status != http.StatusOK {
		t.Fatalf("%s: HTTP %d", what, p.Status)
	}
	for _, w := range wants {
		if !strings.Contains(p.Body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// lacks fails the test for each text the page has.
func lacks(t *testing.T, what string, p apptest.Page, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(p.Body, u) {
			t.Errorf("%s has %q", what, u)
		}
	}
}

func TestOnboardingScreens(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Onboarding Partner"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Second Partner", Processing: emi.ProcessingSemiAutomatic})

	// A: Sandbox Trading Ltd, approved automatically (its picture is added
	// before the workers start, so the decision cannot come first).
	app, member := createApplication(t, env, p, sandboxApplication(p))
	picture := addCompanyPicture(t, env, p, app)
	startWorkers(t, env)
	waitStatus(t, env, app, emi.AppApproved)
	var merchant string
	if err := env.App.DB.Get(&merchant, `SELECT onboarded_merchant FROM applications WHERE token = $1`, app); err != nil {
		t.Fatal(err)
	}
	var memberDoc string
	if err := env.App.DB.Get(&memberDoc, `SELECT token FROM documents WHERE owner_token = $1`, member); err != nil {
		t.Fatal(err)
	}
	// B: the same person as the UBO of Sandbox Bulgaria EOOD, at another
	// partner that reviews every application.
	bulgaria := sandboxApplication(other)
	bulgaria["company"] = map[string]any{"uic": "100000002", "legal_name": "Sandbox Bulgaria EOOD", "country": "BG", "city": "Sofia"}
	appB, memberB := createApplication(t, env, other, bulgaria)
	waitStatus(t, env, appB, emi.AppInReview)

	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	underwriter := env.NewBrowser()
	underwriter.SignIn(t, apptest.UnderwriterEmail)
	compliance := env.NewBrowser()
	compliance.SignIn(t, apptest.ComplianceEmail)
	appLink := `href="/backoffice/applications/` + app + `"`
	appBLink := `href="/backoffice/applications/` + appB + `"`

	t.Run("the list filters by status, partner and search", func(t *testing.T) {
		all := underwriter.Get(t, "/backoffice/applications")
		contains(t, "all applications", all, appLink, appBLink, "Sandbox Trading Ltd", "Sandbox Bulgaria EOOD",
			"account-opening, card-issuing", ">Low<", ">approved<", ">in_review<", "Onboarding Partner", "Second Partner")
		if !strings.Contains(all.Body, `aria-current="page">All<`) {
			t.Error("the All tab is not the default")
		}
		for _, c := range []struct {
			query     string
			want, not string
		}{
			{"status=approved", appLink, appBLink},
			{"status=in_review", appBLink, appLink},
			{"status=checking", "", appLink},
			{"status=rejected", "No applications are rejected", appLink},
			{"partner=" + other.ID, appBLink, appLink},
			{"partner=" + p.ID + "&status=in_review", "No applications match", appBLink},
			{"q=100000001", appLink, appBLink},
			{"q=" + url.QueryEscape("sandbox trad"), appLink, appBLink},
			{"q=bulgaria", appBLink, appLink},
			{"q=" + app, appLink, appBLink},
			{"q=" + merchant, appLink, appBLink},
			{"q=nothing-like-this", "No applications match", appLink},
		} {
			pg := underwriter.Get(t, "/backoffice/applications?"+c.query)
			contains(t, c.query, pg, c.want)
			lacks(t, c.query, pg, c.not)
		}
		// The tabs keep the other filters.
		pg := underwriter.Get(t, "/backoffice/applications?partner="+other.ID)
		if !strings.Contains(pg.Body, `href="/backoffice/applications?partner=`+other.ID+`&amp;status=in_review"`) {
			t.Error("the status tabs drop the partner filter")
		}
		// A hand-made partner filter is ignored, not a 500.
		contains(t, "malformed partner", underwriter.Get(t, "/backoffice/applications?partner=x"), appLink)
		long := underwriter.Get(t, "/backoffice/applications?q="+strings.Repeat("x", 201))
		if long.Status != http.StatusUnprocessableEntity || !strings.Contains(long.Body, `id="q-error"`) {
			t.Errorf("a too long search: HTTP %d", long.Status)
		}
		// Compliance cannot list partners: no partner select, names still shown.
		cp := compliance.Get(t, "/backoffice/applications")
		contains(t, "compliance's list", cp, appLink, "Onboarding Partner")
		lacks(t, "compliance's list", cp, `name="partner"`)
	})

	t.Run("the dashboard counts applications checking and in review", func(t *testing.T) {
		d := underwriter.Get(t, "/backoffice/")
		if !regexp.MustCompile(`data-testid="tile-Applications in review"><div class="n">1<`).MatchString(d.Body) {
			t.Error("the dashboard does not count the application in review")
		}
		if !regexp.MustCompile(`data-testid="tile-Applications checking"><div class="n">0<`).MatchString(d.Body) {
			t.Error("the dashboard has no tile for applications checking")
		}
		for _, nav := range []string{`href="/backoffice/applications"`, `href="/backoffice/companies"`, `href="/backoffice/watchlist"`} {
			if !strings.Contains(d.Body, nav) {
				t.Errorf("the navigation lacks %s", nav)
			}
		}
		cs := env.NewBrowser()
		cs.SignIn(t, apptest.CSEmail)
		c := cs.Get(t, "/backoffice/")
		lacks(t, "customer service's dashboard", c, "tile-Applications", `href="/backoffice/applications"`, `href="/backoffice/companies"`)
		contains(t, "customer service's dashboard", c, `href="/backoffice/watchlist"`)
	})

	t.Run("the approved application shows its checks, risk, documents, events and merchant", func(t *testing.T) {
		pg := underwriter.Get(t, "/backoffice/applications/"+app)
		contains(t, "the application", pg,
			// header and decision
			`data-testid="application-status"`, ">approved<", ">Low<", merchant, "every check passed",
			"none: no acquiring product",
			// the company as submitted
			"Software consultancy", "ops@sandbox-trading.example", "EC1A 1BB",
			// members
			`href="/backoffice/applications/`+app+`/members/`+member+`"`, "Elin Sandqvist", "100 %",
			// checks, each with its details
			`data-testid="check-risk"`, `data-testid="check-trade_register"`, `data-testid="check-sanctions"`,
			`data-testid="check-adverse_media"`, "Registered name", "Submitted name", "1 Sandbox Street", "2015-03-12",
			"Names screened", "Names searched", "Sandbox Trading Ltd; Sandbox Trading; Elin Sandqvist",
			// risk factors with their points and total
			`data-testid="risk-factors"`, "product account-opening", "incorporation date not given", `data-testid="risk-total"`,
			// history
			`data-testid="check-history"`,
			// documents: the PDF as a link, the picture inline
			`href="/backoffice/documents/`+memberDoc+`"`, `<img src="/backoffice/documents/`+picture+`"`,
			// the underwriter sees what the partner was told
			`data-testid="application-events"`, "application.approved")
		lacks(t, "the application", pg, `<img src="/backoffice/documents/`+memberDoc+`"`,
			// but not the delivery log, which needs the webhook permission
			`/events?resource=`)
		if pg.Header.Get("Cache-Control") != "no-store" || !strings.Contains(pg.Body, `hx-history="false"`) {
			t.Error("the application's page may be kept in htmx history")
		}
		// The risk total is the sum of the factors.
		var points int
		_ = env.App.DB.Get(&points, `SELECT risk_points FROM applications WHERE token = $1`, app)
		if !regexp.MustCompile(`data-testid="risk-total"><strong>` + fmt.Sprint(points) + `<`).MatchString(pg.Body) {
			t.Errorf("the risk total is not %d", points)
		}
		ad := admin.Get(t, "/backoffice/applications/"+app)
		contains(t, "the application for an admin", ad, `data-testid="application-events"`,
			"application.checks_completed", "application.approved",
			`href="/backoffice/partners/`+p.ID+`/events?resource=`+app+`"`)
		// The document itself opens for a staff user.
		if d := underwriter.Get(t, "/backoffice/documents/"+memberDoc); d.Status != http.StatusOK || d.Header.Get("Content-Type") != "application/pdf" {
			t.Errorf("the member's document: HTTP %d %s", d.Status, d.Header.Get("Content-Type"))
		}
	})

	t.Run("the application in review shows the partner's semi-automatic processing", func(t *testing.T) {
		pg := underwriter.Get(t, "/backoffice/applications/"+appB)
		contains(t, "application B", pg, ">in_review<", "processing semi-automatic", "Not decided yet", "Sandbox Bulgaria EOOD")
		lacks(t, "application B", pg, merchant)
	})

	t.Run("an unknown application or member is the 404 page", func(t *testing.T) {
		for _, path := range []string{
			"/backoffice/applications/00000000-0000-4000-8000-000000000000",
			"/backoffice/applications/not-a-token",
			"/backoffice/companies/00000000-0000-4000-8000-000000000000",
			"/backoffice/applications/not-a-token/members/" + member,
			"/backoffice/applications/" + app + "/members/00000000-0000-4000-8000-000000000000",
			"/backoffice/applications/" + app + "/members/" + memberB, // a member of another application
		} {
			if pg := underwriter.Get(t, path); pg.Status != http.StatusNotFound || !strings.Contains(pg.Body, "no such") {
				t.Errorf("%s: HTTP %d", path, pg.Status)
			}
		}
	})

	t.Run("companies are found by company number, name, merchant and partner", func(t *testing.T) {
		link := `href="/backoffice/companies/` + app + `"`
		linkB := `href="/backoffice/companies/` + appB + `"`
		for _, q := range []string{"100000001", "sandbox trad", "SANDBOX TRADING LTD", merchant, "onboarding partner"} {
			pg := compliance.Get(t, "/backoffice/companies?q="+url.QueryEscape(q))
			contains(t, "companies "+q, pg, link)
			lacks(t, "companies "+q, pg, linkB)
		}
		contains(t, "every company", compliance.Get(t, "/backoffice/companies"), link, linkB)
		contains(t, "no match", compliance.Get(t, "/backoffice/companies?q=nothing-like-this"), "No companies match")
		// The global search finds companies too.
		contains(t, "global search", compliance.Get(t, "/backoffice/search?q=100000001"), link, ">company<")
		cs := env.NewBrowser()
		cs.SignIn(t, apptest.CSEmail)
		lacks(t, "customer service's search", cs.Get(t, "/backoffice/search?q=100000001"), link)
	})

	t.Run("the company page shows details, members, documents and the decision", func(t *testing.T) {
		pg := compliance.Get(t, "/backoffice/companies/"+app)
		contains(t, "the company", pg, "Sandbox Trading Ltd", "trading as Sandbox Trading", "100000001", appLink,
			`href="/backoffice/applications/`+app+`/members/`+member+`"`, merchant, `data-testid="decision"`,
			`<img src="/backoffice/documents/`+picture+`"`, `href="/backoffice/documents/`+memberDoc+`"`)
		pgB := compliance.Get(t, "/backoffice/companies/"+appB)
		contains(t, "company B", pgB, "Sandbox Bulgaria EOOD", "Not decided yet")
	})

	t.Run("a member's page lists the same person's roles in both companies", func(t *testing.T) {
		pg := underwriter.Get(t, "/backoffice/applications/"+app+"/members/"+member)
		contains(t, "the member", pg, "Elin Sandqvist", "8703021234", "1987-03-02", "elin@sandbox-trading.example",
			`href="/backoffice/companies/`+app+`"`, `href="/backoffice/companies/`+appB+`"`,
			"Sandbox Bulgaria EOOD", "Second Partner", "same unique identifier",
			`href="/backoffice/applications/`+appB+`/members/`+memberB+`"`, `href="/backoffice/documents/`+memberDoc+`"`)
		if n := strings.Count(pg.Body, `data-testid="member-role"`); n != 2 {
			t.Errorf("%d roles, want 2", n)
		}
		// Same names and birthday without the identifier match too; another
		// person does not.
		third := sandboxApplication(p)
		elin := elinUBO()
		delete(elin, "unique_identifier")
		oskar := elinUBO()
		oskar["first_name"], oskar["last_name"], oskar["unique_identifier"], oskar["type"] = "Oskar", "Berg", "OB1", []string{"ceo"}
		delete(oskar, "ownership")
		delete(oskar, "ownership_percentage")
		third["members"] = []map[string]any{elin, oskar}
		appC, memberC := createApplication(t, env, p, third)
		pgC := underwriter.Get(t, "/backoffice/applications/"+appC+"/members/"+memberC)
		if n := strings.Count(pgC.Body, `data-testid="member-role"`); n != 3 || !strings.Contains(pgC.Body, "same names and birthday") {
			t.Errorf("Elin without an identifier: %d roles, want 3 matched by names and birthday", n)
		}
		lacks(t, "Elin's roles", pgC, "Oskar")
	})

	t.Run("validator configuration: view, edit, refuse, remove", func(t *testing.T) {
		page := "/backoffice/partners/" + other.ID
		pg := admin.Get(t, page)
		contains(t, "the partner", pg, `data-testid="validator-table"`, "legal_name, country", "e-commerce: website",
			`data-testid="validator-form"`, `name="company.always"`, "sandbox default",
			`href="/backoffice/applications?status=all&amp;partner=`+other.ID+`"`)
		uw := underwriter.Get(t, page)
		contains(t, "the partner for an underwriter", uw, `data-testid="validator-table"`)
		lacks(t, "the partner for an underwriter", uw, `data-testid="validator-form"`, `data-testid="validator-remove"`)

		form := url.Values{
			"application.always":        {"products, due_diligence"},
			"company.always":            {"legal_name country, uic"},
			"company.by_product.pos":    {"address_of_shop"},
			"members.individual":        {"first_name last_name birthday"},
			"members.legal_entity":      {"legal_name"},
			"application.by_product.qr": {""},
			"notes":                     {"stricter"},
		}
		if r := admin.Post(t, page+"/validator-config", form); r.Status != http.StatusSeeOther {
			t.Fatalf("save: HTTP %d", r.Status)
		}
		cfg, err := env.App.Onboarding.ValidatorConfig(staffCtx(t, env, apptest.AdminEmail), other.ID)
		if err != nil || cfg == nil || strings.Join(cfg.Company.Always, ",") != "legal_name,country,uic" ||
			strings.Join(cfg.Company.ByProduct["pos"], ",") != "address_of_shop" || cfg.Notes != "stricter" ||
			strings.Join(cfg.Members["individual"], ",") != "first_name,last_name,birthday" {
			t.Fatalf("saved configuration %+v %v", cfg, err)
		}
		contains(t, "the partner after saving", admin.Get(t, page), "legal_name, country, uic", "pos: address_of_shop",
			"Validator configuration saved")

		bad := url.Values{"company.always": {"legal_name, shoe_size"}, "members.individual": {"first_name, favourite_colour"}}
		r := admin.Post(t, page+"/validator-config", bad)
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("an unknown field: HTTP %d", r.Status)
		}
		contains(t, "the refused form", apptest.Page{Status: http.StatusOK, Body: r.Body}, `id="company.always-error"`,
			`id="members.individual-error"`, "names an unknown field", "shoe_size", "favourite_colour",
			`value="legal_name, shoe_size"`, "was not saved")
		if cfg2, _ := env.App.Onboarding.ValidatorConfig(staffCtx(t, env, apptest.AdminEmail), other.ID); strings.Join(cfg2.Company.Always, ",") != "legal_name,country,uic" {
			t.Fatalf("a refused save changed the configuration: %+v", cfg2)
		}

		if r := admin.Post(t, page+"/validator-config/remove", url.Values{}); r.Status != http.StatusSeeOther {
			t.Fatalf("remove: HTTP %d", r.Status)
		}
		contains(t, "the partner without configuration", admin.Get(t, page), `data-testid="validator-none"`, "11008")
		res := api(t, env, other, http.MethodPost, "/v3/applications", "application_create", sandboxApplication(other))
		if res.Code != emi.ErrValidatorConfigMissing.Code {
			t.Fatalf("application_create without a configuration: %s", res)
		}
		var audited int
		_ = env.App.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'partner.validator_config' AND resource_token = $1`, other.ID)
		if audited != 2 {
			t.Errorf("%d audit rows for the configuration, want 2 (save and remove)", audited)
		}
		// A configuration for an unknown partner is refused before the service.
		if r := admin.Post(t, "/backoffice/partners/00000000-0000-4000-8000-000000000000/validator-config", form); r.Status != http.StatusNotFound {
			t.Errorf("unknown partner: HTTP %d", r.Status)
		}
		if r := admin.Post(t, "/backoffice/partners/00000000-0000-4000-8000-000000000000/validator-config/remove", nil); r.Status != http.StatusNotFound {
			t.Errorf("removing the configuration of an unknown partner: HTTP %d", r.Status)
		}
	})

	t.Run("watch list: add, a new application goes to review, remove", func(t *testing.T) {
		empty := compliance.Get(t, "/backoffice/watchlist")
		contains(t, "the empty list", empty, "The watch list is empty", `data-testid="watchlist-form"`)
		r := compliance.Post(t, "/backoffice/watchlist", url.Values{"name": {""}, "category": {"gossip"}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("an invalid entry: HTTP %d", r.Status)
		}
		// The service's messages are shown beside their fields, with the input kept.
		contains(t, "the refused entry", apptest.Page{Status: http.StatusOK, Body: r.Body}, `id="name-error"`, `id="category-error"`,
			"is required", "must be one of", `<option value="fraud">`)
		r = compliance.Post(t, "/backoffice/watchlist", url.Values{"name": {"Someone"}, "category": {"fraud"}, "note": {strings.Repeat("n", 2001)}})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `value="Someone"`) || !strings.Contains(r.Body, "at most 2000") {
			t.Errorf("a too long note: HTTP %d", r.Status)
		}
		r = compliance.Post(t, "/backoffice/watchlist", url.Values{"name": {"Elin Sandqvist"}, "category": {"fraud"},
			"note": {"Reported for invoice fraud"}, "source": {"https://news.example/elin"}})
		if r.Status != http.StatusSeeOther {
			t.Fatalf("add: HTTP %d", r.Status)
		}
		list := compliance.Get(t, "/backoffice/watchlist")
		contains(t, "the list", list, "Elin Sandqvist", ">fraud<", "Reported for invoice fraud",
			`href="https://news.example/elin"`, "is on the watch list")
		uw := underwriter.Get(t, "/backoffice/watchlist")
		contains(t, "the underwriter's list", uw, "Elin Sandqvist")
		lacks(t, "the underwriter's list", uw, `data-testid="watchlist-form"`, `data-testid="watchlist-remove"`)

		appD, _ := createApplication(t, env, p, sandboxApplication(p))
		waitStatus(t, env, appD, emi.AppInReview)
		pg := underwriter.Get(t, "/backoffice/applications/"+appD)
		contains(t, "the application in review", pg, `data-testid="media-hits"`, ">fraud<", "Reported for invoice fraud",
			"adverse-media finding")

		var id string
		if err := env.App.DB.Get(&id, `SELECT id FROM adverse_media_watchlist WHERE name = 'Elin Sandqvist'`); err != nil {
			t.Fatal(err)
		}
		if r := compliance.Post(t, "/backoffice/watchlist/"+id+"/remove", url.Values{}); r.Status != http.StatusSeeOther {
			t.Fatalf("remove: HTTP %d", r.Status)
		}
		contains(t, "the list after removal", compliance.Get(t, "/backoffice/watchlist"), "The watch list is empty", "was removed")
		// Removing twice is a message, not an error page.
		if r := compliance.Post(t, "/backoffice/watchlist/"+id+"/remove", url.Values{}); r.Status != http.StatusSeeOther {
			t.Fatalf("second removal: HTTP %d", r.Status)
		}
		contains(t, "after the second removal", compliance.Get(t, "/backoffice/watchlist"), "not on the watch list")
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action IN ('watchlist.add', 'watchlist.remove') AND resource_token = $1`, id)
		if n != 2 {
			t.Errorf("%d audit rows for the entry, want 2", n)
		}
	})
}
