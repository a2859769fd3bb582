package browser_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// onePagePDF is a minimal PDF document.
var onePagePDF = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")

// waitApplication waits until the application has the status.
func waitApplication(t *testing.T, env *apptest.Env, app string, want emi.ApplicationStatus) {
	t.Helper()
	var st string
	testwait.Until(t, fmt.Sprintf("application %s to be %s", app, want), func() bool {
		if err := env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app); err != nil {
			t.Fatal(err)
		}
		return st == string(want)
	})
}

// TestApplicationInTheBrowser: an underwriter opens the applications list,
// opens the application the automatic checks approved, and sees the four
// checks with their details, the risk factors and the onboarded merchant;
// then the company and the member.
func TestApplicationInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Onboarding Partner"})
	r := partnerCall(t, env, p, "/v3/applications", "application_create", map[string]any{
		"merchant": p.Merchant, "products": []string{"account-opening", "card-issuing"}, "due_diligence": "CDD",
		"company": map[string]any{"uic": "100000001", "legal_name": "Sandbox Trading Ltd", "trade_name": "Sandbox Trading",
			"country": "GB", "city": "London", "zip": "EC1A 1BB", "address1": "1 Long Lane", "is_sie": false,
			"description_of_activity": "Software consultancy", "contact_email": "ops@sandbox-trading.example"},
		"members": []map[string]any{{"first_name": "Elin", "last_name": "Sandqvist", "type": []string{"ubo"},
			"ownership": true, "ownership_percentage": 100, "country": "SE", "birthday": "1987-03-02", "nationality": "SE",
			"unique_identifier": "8703021234", "pep_declaration": false, "pep_related_declaration": false, "is_sip": false,
			"documents": []map[string]any{{"file": base64.StdEncoding.EncodeToString(onePagePDF), "file_type": "pdf", "document_type": "passport"}}}},
	})
	if r.Status != http.StatusCreated {
		t.Fatalf("application_create: %s", r)
	}
	app := r.Data["token"].(string)
	member := r.Data["members"].([]any)[0].(map[string]any)["token"].(string)
	var pic bytes.Buffer
	if err := png.Encode(&pic, photo(320, 200)); err != nil {
		t.Fatal(err)
	}
	if d := partnerCall(t, env, p, "/v3/applications/"+app+"/companies/documents", "company_add_document",
		map[string]any{"file": base64.StdEncoding.EncodeToString(pic.Bytes()), "file_type": "png", "document_type": "incorporation-documents"}); d.Status != http.StatusCreated {
		t.Fatalf("company_add_document: %s", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = env.App.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitApplication(t, env, app, emi.AppApproved)
	var merchant string
	if err := env.App.DB.Get(&merchant, `SELECT onboarded_merchant FROM applications WHERE token = $1`, app); err != nil {
		t.Fatal(err)
	}

	b := newTab(t, env)
	b.signIn(env, apptest.UnderwriterEmail)
	b.clickNav(`nav[aria-label="Main"] a[href="/backoffice/applications"]`)
	if h := b.text("main h1"); h != "Applications" {
		t.Fatalf("heading %q, want Applications", h)
	}
	if rows := b.texts(`[data-testid="application-row"]`); len(rows) != 1 || !strings.Contains(rows[0], "Sandbox Trading Ltd") ||
		!strings.Contains(rows[0], "approved") || !strings.Contains(rows[0], "Low") {
		t.Fatalf("application rows %q", rows)
	}
	screenshot(b, "applications")

	b.clickNav(`a[href="/backoffice/applications/` + app + `"]`)
	if st := b.text(`[data-testid="application-status"]`); st != "approved" {
		t.Fatalf("status %q, want approved", st)
	}
	checks := b.texts(`section.check h3`)
	if len(checks) != 4 {
		t.Fatalf("checks %q, want 4", checks)
	}
	for _, c := range checks {
		if !strings.Contains(c, "passed") {
			t.Errorf("check %q did not pass", c)
		}
	}
	for what, want := range map[string]string{
		`[data-testid="check-trade_register"]`: "Sandbox Trading Ltd",
		`[data-testid="check-sanctions"]`:      "Names screened",
		`[data-testid="check-adverse_media"]`:  "Elin Sandqvist",
		`[data-testid="check-risk"]`:           "product card-issuing",
		`[data-testid="decision"]`:             merchant,
	} {
		if got := b.text(what); !strings.Contains(got, want) {
			t.Errorf("%s shows %q, without %q", what, got, want)
		}
	}
	b.waitVisible(`[data-testid="risk-factors"]`)
	// The picture loads lazily: scroll to it, then it renders.
	b.do("scroll to the company's picture", chromedp.ScrollIntoView(chromedp.CSS(`img.doc`)),
		pollTrue(`(() => { const i = document.querySelector("img.doc"); return i.complete && i.naturalWidth === 320; })()`))
	screenshot(b, "application-approved")

	b.clickNav(`a[href="/backoffice/companies/` + app + `"]`)
	if got := b.text(`[data-testid="decision"]`); !strings.Contains(got, merchant) {
		t.Errorf("the company's decision %q lacks the merchant", got)
	}
	screenshot(b, "company")
	b.clickNav(`[data-testid="members-table"] a[href="/backoffice/applications/` + app + `/members/` + member + `"]`)
	if n := b.count(`[data-testid="member-role"]`); n != 1 {
		t.Errorf("%d roles, want 1", n)
	}
	screenshot(b, "member")

	admin := newTab(t, env)
	admin.signIn(env, apptest.AdminEmail)
	admin.open("/backoffice/partners/" + p.ID)
	admin.do("open the configuration form", chromedp.Click(chromedp.CSS(`#validator-config details.edit > summary`)))
	admin.waitVisible(`[data-testid="validator-form"]`)
	screenshot(admin, "partner-validator-config")

	officer := newTab(t, env)
	officer.signIn(env, apptest.ComplianceEmail)
	officer.open("/backoffice/watchlist")
	officer.typeInto(`[data-testid="watchlist-form"] input[name="name"]`, "Jon Doe Fraudster")
	officer.do("choose a category", chromedp.SetValue(chromedp.CSS(`[data-testid="watchlist-form"] select[name="category"]`), "fraud"))
	officer.do("write the note", sendKeys(`[data-testid="watchlist-form"] textarea[name="note"]`, "Convicted of invoice fraud in 2024"))
	officer.typeInto(`[data-testid="watchlist-form"] input[name="source"]`, "https://news.example/jon-doe")
	officer.clickNav(`[data-testid="watchlist-add"]`)
	if rows := officer.texts(`[data-testid="watchlist-row"]`); len(rows) != 1 || !strings.Contains(rows[0], "Jon Doe Fraudster") {
		t.Fatalf("watch list rows %q", rows)
	}
	screenshot(officer, "watchlist")

	var bad []consoleLine
	for _, c := range append(append(b.consoleLines(), admin.consoleLines()...), officer.consoleLines()...) {
		if isCSPMessage(c) || c.Kind == "exception" {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("CSP violations or exceptions:\n%s", strings.Join(uniqueLines(bad), "\n"))
	}
}
