package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/registry"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/testwait"
)

func sandboxCompany() map[string]any {
	return map[string]any{
		"uic": "100000001", "legal_name": "Sandbox Trading Ltd", "trade_name": "Sandbox Trading",
		"country": "GB", "city": "London", "zip": "EC1A 1BB", "address1": "1 Long Lane",
		"contact_email": "ops@sandbox-trading.example", "phone": "+442079460000",
		"website": "https://sandbox-trading.example", "description_of_activity": "Software consultancy",
		"is_sie": false,
	}
}

func cleanUBO() map[string]any {
	return map[string]any{
		"first_name": "Elin", "last_name": "Sandqvist", "type": []string{"ubo"},
		"ownership": true, "ownership_percentage": 100, "country": "SE", "country_of_residence": "GB",
		"birthday": "1987-03-02", "nationality": "SE", "place_of_birth": "SE", "unique_identifier": "8703021234",
		"pep_declaration": false, "pep_related_declaration": false, "is_sip": false,
		"contact_email": "elin@sandbox-trading.example",
		"documents":     []map[string]any{{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "passport"}},
	}
}

func sandboxApplication(p *apptest.Partner) map[string]any {
	return map[string]any{
		"merchant": p.Merchant, "products": []string{"account-opening", "card-issuing"}, "due_diligence": "CDD",
		"ip_address": "203.0.113.7", "fingerprint": "fp-1", "company": sandboxCompany(),
		"members": []map[string]any{cleanUBO()},
	}
}

// onboardingEnv starts the app with its workers running.
func onboardingEnv(t *testing.T) *apptest.Env {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	startWorkers(t, env)
	return env
}

func startWorkers(t *testing.T, env *apptest.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = env.App.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitEvent waits for an event of a type about an application and returns
// its data.
func waitEvent(t *testing.T, env *apptest.Env, typ emi.EventType, app string) map[string]any {
	t.Helper()
	var bodies [][]byte
	if testwait.Try(func() bool {
		if err := env.App.DB.Select(&bodies, `SELECT body FROM events WHERE type = $1 AND resource_token = $2 ORDER BY seq`, typ, app); err != nil {
			t.Fatal(err)
		}
		return len(bodies) > 0
	}) {
		var ev struct {
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(bodies[len(bodies)-1], &ev)
		return ev.Data
	}
	var st string
	_ = env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app)
	var checks []string
	_ = env.App.DB.Select(&checks, `SELECT name || '=' || status || ' ' || details::text FROM application_checks WHERE application = $1`, app)
	t.Fatalf("no %s event for %s (status %s, checks %v)", typ, app, st, checks)
	return nil
}

func countEvents(t *testing.T, env *apptest.Env, app string, types ...emi.EventType) int {
	t.Helper()
	var n int
	ts := make([]string, len(types))
	for i, x := range types {
		ts[i] = string(x)
	}
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM events WHERE resource_token = $1 AND type = ANY($2)`, app, "{"+strings.Join(ts, ",")+"}"); err != nil {
		t.Fatal(err)
	}
	return n
}

func createApplication(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) string {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", body)
	apptest.Expect(t, "application_create", r, 0, http.StatusCreated)
	// The workers may have decided it already when the answer is read back.
	if st := r.Data["status"]; st != "checking" && st != "in_review" && st != "approved" && st != "rejected" {
		t.Fatalf("a new application is %v", st)
	}
	return r.Data["token"].(string)
}

func TestApplicationValidation(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	member := func(f func(m map[string]any)) func(b map[string]any) {
		return func(b map[string]any) { f(b["members"].([]map[string]any)[0]) }
	}
	company := func(f func(c map[string]any)) func(b map[string]any) {
		return func(b map[string]any) { f(b["company"].(map[string]any)) }
	}
	payout := func(pd map[string]any) func(b map[string]any) {
		return func(b map[string]any) { b["payout_details"] = []map[string]any{pd} }
	}
	cases := []struct {
		name, field string
		ok          bool
		mutate      func(b map[string]any)
	}{
		{"five products", "", true, func(b map[string]any) {
			b["products"] = []string{"pos", "e-commerce", "qr", "account-opening", "card-issuing"}
		}},
		{"no products", "products", false, func(b map[string]any) { b["products"] = []string{} }},
		{"products missing", "products", false, func(b map[string]any) { delete(b, "products") }},
		{"six products", "products", false, func(b map[string]any) {
			b["products"] = []string{"pos", "e-commerce", "qr", "account-opening", "card-issuing", "pos"}
		}},
		{"duplicate products", "products", false, func(b map[string]any) { b["products"] = []string{"pos", "pos"} }},
		{"unknown product", "products[0]", false, func(b map[string]any) { b["products"] = []string{"atm"} }},
		{"due diligence SDD", "", true, func(b map[string]any) { b["due_diligence"] = "SDD" }},
		{"due diligence EDD", "due_diligence", false, func(b map[string]any) { b["due_diligence"] = "EDD" }},
		{"due diligence missing (configuration)", "due_diligence", false, func(b map[string]any) { delete(b, "due_diligence") }},
		{"merchant 31", "merchant", false, func(b map[string]any) { b["merchant"] = strings.Repeat("a", 31) }},
		{"merchant 37", "merchant", false, func(b map[string]any) { b["merchant"] = strings.Repeat("a", 37) }},
		{"merchant of another partner", "merchant", false, func(b map[string]any) { b["merchant"] = other.Merchant }},
		{"ip address", "ip_address", false, func(b map[string]any) { b["ip_address"] = "300.1.1.1" }},
		{"GBP payout", "", true, payout(map[string]any{"currency": "GBP", "sort_code": "123456", "account_number": "12345678", "amount": "10.50"})},
		{"sort code 5", "payout_details[0].sort_code", false, payout(map[string]any{"currency": "GBP", "sort_code": "12345", "account_number": "12345678"})},
		{"sort code 7", "payout_details[0].sort_code", false, payout(map[string]any{"currency": "GBP", "sort_code": "1234567", "account_number": "12345678"})},
		{"sort code letters", "payout_details[0].sort_code", false, payout(map[string]any{"currency": "GBP", "sort_code": "12a456", "account_number": "12345678"})},
		{"account number 7", "payout_details[0].account_number", false, payout(map[string]any{"currency": "GBP", "sort_code": "123456", "account_number": "1234567"})},
		{"account number 9", "payout_details[0].account_number", false, payout(map[string]any{"currency": "GBP", "sort_code": "123456", "account_number": "123456789"})},
		{"GBP without sort code", "payout_details[0].sort_code", false, payout(map[string]any{"currency": "GBP", "account_number": "12345678"})},
		{"EUR payout", "", true, payout(map[string]any{"currency": "EUR", "iban": "BG80 BNBG 9661 1020 3456 78", "amount": 0})},
		{"EUR without IBAN", "payout_details[0].iban", false, payout(map[string]any{"currency": "EUR"})},
		{"iban check digits", "payout_details[0].iban", false, payout(map[string]any{"currency": "EUR", "iban": "BG80BNBG96611020345679"})},
		{"iban length", "payout_details[0].iban", false, payout(map[string]any{"currency": "EUR", "iban": "BG80BNBG9661102034567"})},
		{"currency code", "payout_details[0].currency", false, payout(map[string]any{"currency": "EURO", "iban": "BG80BNBG96611020345678"})},
		{"currency unknown", "payout_details[0].currency", false, payout(map[string]any{"currency": "XYZ", "iban": "BG80BNBG96611020345678"})},
		{"negative amount", "payout_details[0].amount", false, payout(map[string]any{"currency": "EUR", "iban": "BG80BNBG96611020345678", "amount": -5})},
		{"amount with 3 decimals in EUR", "payout_details[0].amount", false, payout(map[string]any{"currency": "EUR", "iban": "BG80BNBG96611020345678", "amount": "1.005"})},
		{"amount not a number", "payout_details[0].amount", false, payout(map[string]any{"currency": "EUR", "iban": "BG80BNBG96611020345678", "amount": "ten"})},
		{"company country 3", "company.country", false, company(func(c map[string]any) { c["country"] = "GBR" })},
		{"company country unknown", "company.country", false, company(func(c map[string]any) { c["country"] = "XX" })},
		{"company e-mail", "company.contact_email", false, company(func(c map[string]any) { c["contact_email"] = "ops@" })},
		{"company website", "company.website", false, company(func(c map[string]any) { c["website"] = "sandbox-trading" })},
		{"company is_sie type", "company.is_sie", false, company(func(c map[string]any) { c["is_sie"] = "no" })},
		{"company legal_name (configuration)", "company.legal_name", false, company(func(c map[string]any) { delete(c, "legal_name") })},
		{"company website for e-commerce (configuration)", "company.website", false, func(b map[string]any) {
			b["products"] = []string{"e-commerce"}
			delete(b["company"].(map[string]any), "website")
		}},
		{"incorporation date in the future", "company.incorporation_date", false, company(func(c map[string]any) { c["incorporation_date"] = "2999-01-01" })},
		{"member two types", "", true, member(func(m map[string]any) { m["type"] = []string{"ubo", "ceo"} })},
		{"member without type", "members[0].type", false, member(func(m map[string]any) { m["type"] = []string{} })},
		{"member with three types", "members[0].type", false, member(func(m map[string]any) { m["type"] = []string{"ubo", "ceo", "proxy"} })},
		{"member duplicate types", "members[0].type", false, member(func(m map[string]any) { m["type"] = []string{"ubo", "ubo"} })},
		{"member type value", "members[0].type[0]", false, member(func(m map[string]any) { m["type"] = []string{"owner"} })},
		{"member legal form", "members[0].legal_form", false, member(func(m map[string]any) { m["legal_form"] = "plc" })},
		{"member legal form ok", "", true, member(func(m map[string]any) { m["legal_form"] = "limited-liability-partnership" })},
		{"ownership 101", "members[0].ownership_percentage", false, member(func(m map[string]any) { m["ownership_percentage"] = 101 })},
		{"ownership -1", "members[0].ownership_percentage", false, member(func(m map[string]any) { m["ownership_percentage"] = -1 })},
		{"ownership 0", "", true, member(func(m map[string]any) { m["ownership_percentage"] = 0 })},
		{"ownership fraction", "members[0].ownership_percentage", false, member(func(m map[string]any) { m["ownership_percentage"] = 50.5 })},
		{"ownership for a CEO", "members[0].ownership_percentage", false, member(func(m map[string]any) { m["type"] = []string{"ceo"}; delete(m, "ownership") })},
		{"member nationality", "members[0].nationality", false, member(func(m map[string]any) { m["nationality"] = "Sweden" })},
		{"member place of birth", "members[0].place_of_birth", false, member(func(m map[string]any) { m["place_of_birth"] = "Stockholm" })},
		{"member birthday", "members[0].birthday", false, member(func(m map[string]any) { m["birthday"] = "1987-02-30" })},
		{"member birthday (configuration)", "members[0].birthday", false, member(func(m map[string]any) { delete(m, "birthday") })},
		{"member user of another partner", "members[0].user", false, member(func(m map[string]any) { m["user"] = kernel.NewToken() })},
		{"legal-entity member (configuration)", "members[0].uic", false, member(func(m map[string]any) {
			m["type"] = []string{"legal-entity"}
			m["legal_name"] = "Holding AB"
			delete(m, "ownership")
			delete(m, "ownership_percentage")
		})},
		{"member document type", "members[0].documents[0].document_type", false, member(func(m map[string]any) {
			m["documents"] = []map[string]any{{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "selfie-video"}}
		})},
		{"member document content", "members[0].documents[0].file", false, member(func(m map[string]any) {
			m["documents"] = []map[string]any{{"file": b64(pngBytes), "file_type": "pdf", "document_type": "passport"}}
		})},
		{"unknown field", "favourite_colour", false, func(b map[string]any) { b["favourite_colour"] = "blue" }},
		{"unknown company field", "company.colour", false, company(func(c map[string]any) { c["colour"] = "blue" })},
	}
	for _, c := range cases {
		body := sandboxApplication(p)
		body["company"] = sandboxCompany()
		body["members"] = []map[string]any{cleanUBO()}
		c.mutate(body)
		r := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", body)
		if c.ok {
			apptest.Expect(t, c.name, r, 0, http.StatusCreated)
			continue
		}
		apptest.Expect(t, c.name, r, 11001, http.StatusBadRequest)
		found := false
		for _, e := range r.Errors {
			found = found || e.Field == c.field
		}
		if !found {
			t.Errorf("%s: no error names %s: %s", c.name, c.field, r)
		}
	}
	t.Run("every problem at once, and nothing stored", func(t *testing.T) {
		var before int
		_ = env.App.DB.Get(&before, `SELECT count(*) FROM applications`)
		body := sandboxApplication(p)
		body["products"] = []string{"atm"}
		body["company"].(map[string]any)["country"] = "GBR"
		body["members"].([]map[string]any)[0]["type"] = []string{}
		r := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", body)
		for _, f := range []string{"products[0]", "company.country", "members[0].type"} {
			apptest.ExpectField(t, "many problems", r, f)
		}
		var after int
		_ = env.App.DB.Get(&after, `SELECT count(*) FROM applications`)
		if after != before {
			t.Fatal("a refused application was stored")
		}
	})
	t.Run("the amount is kept exactly", func(t *testing.T) {
		body := map[string]any{"products": []string{"pos"}, "due_diligence": "SDD",
			"payout_details": []map[string]any{{"currency": "EUR", "iban": "BG80BNBG96611020345678", "amount": 100.5}, {"currency": "BHD", "iban": "BG80BNBG96611020345678", "amount": "0012345678901234.125"}}}
		r := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", body)
		apptest.Expect(t, "amounts", r, 0, http.StatusCreated)
		pd := r.Data["payout_details"].([]any)
		if pd[0].(map[string]any)["amount"] != "100.5" || pd[1].(map[string]any)["amount"] != "12345678901234.125" {
			t.Fatalf("amounts: %v", pd)
		}
	})
}

func TestApplicationWithoutValidatorConfig(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P", NoValidatorConfig: true})
	r := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", map[string]any{"products": []string{"pos"}, "due_diligence": "SDD"})
	apptest.Expect(t, "no validator configuration", r, 11008, http.StatusConflict)
}

func TestApplicationNotFound(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	owner := env.NewPartner(t, emi.PartnerCreate{Name: "Owner"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	app := createApplication(t, env, owner, map[string]any{"products": []string{"account-opening"}, "due_diligence": "SDD"})
	member := call(t, env, owner, http.MethodPost, "/v3/applications/"+app+"/companies/members", "company_add_member", cleanUBO())
	apptest.Expect(t, "member", member, 0, http.StatusCreated)
	mt := member.Data["token"].(string)
	doc := map[string]any{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "incorporation-documents"}
	for _, tc := range []struct {
		name, app string
		p         *apptest.Partner
	}{{"unknown", kernel.NewToken(), owner}, {"foreign", app, other}, {"malformed", "x", owner}} {
		base := "/v3/applications/" + tc.app
		for _, r := range []apptest.Response{
			call(t, env, tc.p, http.MethodGet, base, "application_details", nil),
			call(t, env, tc.p, http.MethodPut, base+"/companies", "company_update", sandboxCompany()),
			call(t, env, tc.p, http.MethodPost, base+"/companies/documents", "company_add_document", doc),
			call(t, env, tc.p, http.MethodPost, base+"/companies/members", "company_add_member", cleanUBO()),
			call(t, env, tc.p, http.MethodPut, base+"/companies/members/"+mt, "company_member_update", map[string]any{"status": "inactive"}),
			call(t, env, tc.p, http.MethodPost, base+"/companies/members/"+mt+"/documents", "company_member_add_document", doc),
		} {
			apptest.Expect(t, tc.name+" application", r, 11002, http.StatusNotFound)
			if r.Message != "service.applications.not_found" {
				t.Fatalf("%s: message %q", tc.name, r.Message)
			}
		}
	}
	for _, r := range []apptest.Response{
		call(t, env, owner, http.MethodPut, "/v3/applications/"+app+"/companies/members/"+kernel.NewToken(), "company_member_update", map[string]any{"status": "inactive"}),
		call(t, env, owner, http.MethodPost, "/v3/applications/"+app+"/companies/members/"+kernel.NewToken()+"/documents", "company_member_add_document", doc),
	} {
		apptest.Expect(t, "unknown member", r, 11002, http.StatusNotFound)
		if r.Message != "service.members.not_found" {
			t.Fatalf("message %q", r.Message)
		}
	}
	// A member of another application of the same partner is not found there.
	app2 := createApplication(t, env, owner, map[string]any{"products": []string{"pos"}, "due_diligence": "SDD"})
	r := call(t, env, owner, http.MethodPut, "/v3/applications/"+app2+"/companies/members/"+mt, "company_member_update", map[string]any{"status": "inactive"})
	apptest.Expect(t, "member of another application", r, 11002, http.StatusNotFound)
}

func TestCompanyAndMembers(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P", Processing: emi.ProcessingSemiAutomatic})
	app := createApplication(t, env, p, map[string]any{"products": []string{"account-opening"}, "due_diligence": "CDD"})
	base := "/v3/applications/" + app + "/companies"

	u := call(t, env, p, http.MethodPut, base, "company_update", sandboxCompany())
	apptest.Expect(t, "company_update", u, 0, http.StatusOK)
	u = call(t, env, p, http.MethodPut, base, "company_update", map[string]any{"city": "Leeds"})
	apptest.Expect(t, "company_update of one field", u, 0, http.StatusOK)
	co := u.Data["company"].(map[string]any)
	if co["city"] != "Leeds" || co["legal_name"] != "Sandbox Trading Ltd" {
		t.Fatalf("company after a partial update: %v", co)
	}
	bad := call(t, env, p, http.MethodPut, base, "company_update", map[string]any{"legal_name": "", "country": "GBR"})
	apptest.Expect(t, "company_update invalid", bad, 11001, http.StatusBadRequest)
	apptest.ExpectField(t, "company_update invalid", bad, "legal_name")
	apptest.ExpectField(t, "company_update invalid", bad, "country")

	d := call(t, env, p, http.MethodPost, base+"/documents", "company_add_document", map[string]any{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "incorporation-documents"})
	apptest.Expect(t, "company_add_document", d, 0, http.StatusCreated)
	lie := call(t, env, p, http.MethodPost, base+"/documents", "company_add_document", map[string]any{"file": b64(pdfBytes), "file_type": "png", "document_type": "bill"})
	apptest.Expect(t, "a PDF declared as png", lie, 11001, http.StatusBadRequest)
	apptest.ExpectField(t, "a PDF declared as png", lie, "file")

	m := call(t, env, p, http.MethodPost, base+"/members", "company_add_member", cleanUBO())
	apptest.Expect(t, "company_add_member", m, 0, http.StatusCreated)
	member := m.Data["token"].(string)
	if m.Data["status"] != "active" {
		t.Fatalf("new member: %s", m)
	}
	up := call(t, env, p, http.MethodPut, base+"/members/"+member, "company_member_update", map[string]any{"status": "inactive", "contact_email": "elin@example.org"})
	apptest.Expect(t, "company_member_update", up, 0, http.StatusOK)
	if up.Data["status"] != "inactive" || up.Data["contact_email"] != "elin@example.org" || up.Data["first_name"] != "Elin" {
		t.Fatalf("member after update: %s", up)
	}
	refused := call(t, env, p, http.MethodPut, base+"/members/"+member, "company_member_update", map[string]any{
		"uic": "1", "type": []string{"ceo"}, "unique_identifier": "x", "user": "x", "place_of_birth": "SE", "birthday": "1990-01-01",
		"nationality": "SE", "documents": []any{}, "status": "deleted", "ownership_percentage": 120})
	apptest.Expect(t, "add-only fields", refused, 11001, http.StatusBadRequest)
	for _, f := range append(append([]string{}, emi.MemberAddOnlyFields...), "status", "ownership_percentage") {
		apptest.ExpectField(t, "add-only fields", refused, f)
	}
	apptest.Expect(t, "company_member_add_document", call(t, env, p, http.MethodPost, base+"/members/"+member+"/documents",
		"company_member_add_document", map[string]any{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "ubo-declaration"}), 0, http.StatusCreated)

	det := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
	apptest.Expect(t, "application_details", det, 0, http.StatusOK)
	members := det.Data["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["status"] != "inactive" || det.Data["processing"] != "semi-automatic" {
		t.Fatalf("application_details: %s", det)
	}
	var docs int
	_ = env.App.DB.Get(&docs, `SELECT count(*) FROM documents WHERE owner_token = $1 OR owner_token = $2`, app, member)
	if docs != 3 {
		t.Fatalf("%d documents stored, want 3", docs)
	}
	var revision int
	_ = env.App.DB.Get(&revision, `SELECT revision FROM applications WHERE token = $1`, app)
	if revision != 7 {
		t.Fatalf("revision %d after 6 accepted changes", revision)
	}
}

func TestAutomaticApproval(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	app := createApplication(t, env, p, sandboxApplication(p))
	checks := waitEvent(t, env, emi.EventApplicationChecksCompleted, app)
	if len(checks["checks"].([]any)) != 4 || checks["risk_score"] != "Low" {
		t.Fatalf("checks_completed: %v", checks)
	}
	ev := waitEvent(t, env, emi.EventApplicationApproved, app)
	merchant, _ := ev["merchant"].(string)
	if len(merchant) != 36 || ev["mid"] != nil {
		t.Fatalf("approved: %v", ev)
	}
	d := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
	if d.Data["status"] != "approved" || d.Data["onboarded_merchant"] != merchant || d.Data["risk_score"] != "Low" {
		t.Fatalf("after approval: %s", d)
	}
	for _, c := range d.Data["checks"].([]any) {
		if c.(map[string]any)["status"] != "passed" {
			t.Fatalf("check %v", c)
		}
	}
	var kind string
	if err := env.App.DB.Get(&kind, `SELECT kind FROM merchants WHERE token = $1 AND partner_id = $2`, merchant, p.ID); err != nil || kind != "onboarded" {
		t.Fatalf("merchant %q %v", kind, err)
	}
	late := call(t, env, p, http.MethodPut, "/v3/applications/"+app+"/companies", "company_update", sandboxCompany())
	apptest.Expect(t, "company_update after the decision", late, 11003, http.StatusConflict)
	apptest.Expect(t, "member after the decision", call(t, env, p, http.MethodPost, "/v3/applications/"+app+"/companies/members",
		"company_add_member", cleanUBO()), 11003, http.StatusConflict)
	// The new merchant may own users now.
	u := validUser(p)
	u["merchant"] = merchant
	createUser(t, env, p, u)
}

func TestRegistryMismatchIsRejected(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	body := sandboxApplication(p)
	body["company"].(map[string]any)["legal_name"] = "Completely Different Holdings Ltd"
	app := createApplication(t, env, p, body)
	ev := waitEvent(t, env, emi.EventApplicationRejected, app)
	if !strings.Contains(ev["reason"].(string), "trade_register") {
		t.Fatalf("rejected: %v", ev)
	}
	if countEvents(t, env, app, emi.EventApplicationApproved, emi.EventApplicationInReview) != 0 {
		t.Fatal("a rejected application was also approved or put in review")
	}
}

func TestSemiAutomaticGoesToReview(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P", Processing: emi.ProcessingSemiAutomatic})
	app := createApplication(t, env, p, sandboxApplication(p))
	waitEvent(t, env, emi.EventApplicationInReview, app)
	d := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
	if d.Data["status"] != "in_review" {
		t.Fatalf("status %v", d.Data["status"])
	}
}

func TestAcquiringApprovalIssuesMIDandTID(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	mids := map[string]bool{}
	for i := 0; i < 3; i++ {
		body := sandboxApplication(p)
		body["products"] = []string{"pos", "e-commerce", "qr"}
		app := createApplication(t, env, p, body)
		ev := waitEvent(t, env, emi.EventApplicationApproved, app)
		mid, tid := fmt.Sprint(ev["mid"]), fmt.Sprint(ev["tid"])
		if !regexp.MustCompile(`^[1-9][0-9]{14}$`).MatchString(mid) || !regexp.MustCompile(`^[1-9][0-9]{7}$`).MatchString(tid) || mids[mid] {
			t.Fatalf("mid %q tid %q", mid, tid)
		}
		mids[mid] = true
		d := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
		if d.Data["mid"] != mid || d.Data["tid"] != tid {
			t.Fatalf("application_details: %s", d)
		}
	}
}

func TestSanctionedMemberIsNotApproved(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	body := sandboxApplication(p)
	kim := cleanUBO()
	kim["first_name"], kim["last_name"], kim["birthday"], kim["nationality"], kim["unique_identifier"] = "Kim", "Jong Un", "1984-01-08", "KP", "KP1"
	body["members"] = []map[string]any{kim}
	app := createApplication(t, env, p, body)
	waitEvent(t, env, emi.EventApplicationInReview, app)
	d := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
	checks := map[string]string{}
	for _, c := range d.Data["checks"].([]any) {
		checks[c.(map[string]any)["name"].(string)] = c.(map[string]any)["status"].(string)
	}
	if d.Data["status"] != "in_review" || checks["sanctions"] != "review" || d.Data["risk_score"] != "High" {
		t.Fatalf("sanctioned member: %s", d)
	}
	// A declared listing fails the check and rejects the application.
	body = sandboxApplication(p)
	body["members"].([]map[string]any)[0]["is_sip"] = true
	app = createApplication(t, env, p, body)
	waitEvent(t, env, emi.EventApplicationRejected, app)
}

func TestAdverseMediaWatchlist(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	if _, err := env.App.Watchlist.Add(complianceCtx(), emi.WatchlistEntry{Name: "Elin Sandqvist", Category: "fraud",
		Note: "Convicted of invoice fraud", Source: "https://news.example/elin"}); err != nil {
		t.Fatal(err)
	}
	app := createApplication(t, env, p, sandboxApplication(p))
	waitEvent(t, env, emi.EventApplicationInReview, app)
	d := call(t, env, p, http.MethodGet, "/v3/applications/"+app, "application_details", nil)
	for _, c := range d.Data["checks"].([]any) {
		cm := c.(map[string]any)
		if cm["name"] == "adverse_media" && cm["status"] != "review" {
			t.Fatalf("adverse media: %v", cm)
		}
	}
}

// flakyRegistry fails the first n lookups as an outage, then answers as the
// sandbox register.
type flakyRegistry struct {
	fail  atomic.Int32
	calls atomic.Int32
	next  onboarding.Registry
}

func (f *flakyRegistry) Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error) {
	f.calls.Add(1)
	if f.fail.Add(-1) >= 0 {
		return emi.RegistryRecord{}, fmt.Errorf("%w: 503 from the register", emi.ErrProviderUnavailable)
	}
	return f.next.Lookup(ctx, country, uic)
}

func TestProviderOutageIsRetried(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	flaky := &flakyRegistry{next: env.App.Registry}
	flaky.fail.Store(2)
	a := env.App
	// The app's checks with a flaky register, decided at once (no settle
	// period, so the test need not wait for one).
	a.Checks = onboarding.NewChecks(onboarding.ChecksDeps{Tx: a.DB, Store: a.OnboardingStore, Screener: a.Sanctions,
		Registry: flaky, Media: a.Watchlist, Events: a.Events, Audit: a.Audit, Risk: onboarding.DefaultRiskModel(a.Now),
		FalsePositives: a.People, NamesMatch: registry.NamesMatch, Now: a.Now})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	app := createApplication(t, env, p, sandboxApplication(p))
	// Before the workers run, drive one attempt by hand: the register is
	// down, so the check is "error" and nothing is decided.
	job := emi.Job{ID: 1, Payload: json.RawMessage(`{"application":"` + app + `"}`)}
	if err := a.Checks.Run(context.Background(), job); err == nil {
		t.Fatal("a run with a provider outage must ask for a retry")
	}
	var st, check string
	_ = a.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app)
	_ = a.DB.Get(&check, `SELECT status FROM application_checks WHERE application = $1 AND name = 'trade_register'`, app)
	if st != "checking" || check != "error" || countEvents(t, env, app, emi.EventApplicationChecksCompleted) != 0 {
		t.Fatalf("after an outage: status %s, trade_register %s", st, check)
	}
	startWorkers(t, env)
	waitEvent(t, env, emi.EventApplicationApproved, app)
	if flaky.calls.Load() < 3 {
		t.Fatalf("%d register calls", flaky.calls.Load())
	}
	var history []string
	_ = a.DB.Select(&history, `SELECT status FROM application_check_history WHERE application = $1 AND name = 'trade_register' ORDER BY id`, app)
	if strings.Join(history, ",") != "error,passed" {
		t.Fatalf("trade_register history %v", history)
	}
}

func TestCompanyWaitsForData(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	app := createApplication(t, env, p, map[string]any{"products": []string{"account-opening"}, "due_diligence": "CDD"})
	base := "/v3/applications/" + app + "/companies"
	apptest.Expect(t, "company", call(t, env, p, http.MethodPut, base, "company_update", sandboxCompany()), 0, http.StatusOK)
	ceo := cleanUBO()
	ceo["type"] = []string{"ceo"}
	delete(ceo, "ownership")
	delete(ceo, "ownership_percentage")
	apptest.Expect(t, "ceo", call(t, env, p, http.MethodPost, base+"/members", "company_add_member", ceo), 0, http.StatusCreated)
	env.WaitJobsIdle(t) // the checks ran on the change
	var pending int
	_ = env.App.DB.Get(&pending, `SELECT count(*) FROM application_checks WHERE application = $1 AND status = 'pending'`, app)
	if pending == 0 || countEvents(t, env, app, emi.EventApplicationChecksCompleted) != 0 {
		t.Fatalf("without a UBO the checks must wait (%d pending)", pending)
	}
	apptest.Expect(t, "ubo", call(t, env, p, http.MethodPost, base+"/members", "company_add_member", cleanUBO()), 0, http.StatusCreated)
	waitEvent(t, env, emi.EventApplicationApproved, app)
}

// Concurrent changes while the checks run leave consistent data and exactly
// one decision, made on the final data.
func TestConcurrentChangesGiveOneDecision(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	app := createApplication(t, env, p, map[string]any{"products": []string{"account-opening"}, "due_diligence": "CDD",
		"company": sandboxCompany()})
	base := "/v3/applications/" + app + "/companies"
	var wg sync.WaitGroup
	var added, updated, closed atomic.Int32
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			m := cleanUBO()
			m["ownership_percentage"] = 10
			m["unique_identifier"] = fmt.Sprintf("ID-%d", i)
			r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: base + "/members", Operation: "company_add_member", JSON: m})
			switch r.Code {
			case 0:
				added.Add(1)
			case 11003:
				closed.Add(1)
			default:
				t.Errorf("member add: %s", r)
			}
		}()
		go func() {
			defer wg.Done()
			r := p.Do(t, apptest.Request{Method: http.MethodPut, Path: base, Operation: "company_update",
				JSON: map[string]any{"address2": fmt.Sprintf("Floor %d", i)}})
			switch r.Code {
			case 0:
				updated.Add(1)
			case 11003:
				closed.Add(1)
			default:
				t.Errorf("company update: %s", r)
			}
		}()
	}
	wg.Wait()
	waitEvent(t, env, emi.EventApplicationApproved, app)
	env.WaitJobsIdle(t) // a second decision would be there now
	if n := countEvents(t, env, app, emi.EventApplicationApproved, emi.EventApplicationRejected); n != 1 {
		t.Fatalf("%d decisions", n)
	}
	var members, revision, checked int
	_ = env.App.DB.Get(&members, `SELECT count(*) FROM company_members WHERE application = $1`, app)
	_ = env.App.DB.QueryRow(`SELECT revision, checked_revision FROM applications WHERE token = $1`, app).Scan(&revision, &checked)
	if members != int(added.Load()) || revision != 1+int(added.Load())+int(updated.Load()) || checked != revision {
		t.Fatalf("members %d (added %d), revision %d (updates %d), decided on revision %d", members, added.Load(), revision, updated.Load(), checked)
	}
	var merchants int
	_ = env.App.DB.Get(&merchants, `SELECT count(*) FROM merchants WHERE application = $1`, app)
	if merchants != 1 {
		t.Fatalf("%d merchants for one application", merchants)
	}
}

// TestBodyLevelErrorPathsHaveNoLeadingDot is the regression test of a
// partner's report (issue 34): the checks that company_add_member and
// company_add_document run on the body itself named ".first_name" and
// ".file_type". A field of the body is named as the body has it, a
// member of a list with its index, and card_convert's delivery problems
// only under delivery_details.
func TestBodyLevelErrorPathsHaveNoLeadingDot(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	app := createApplication(t, env, p, map[string]any{"products": []string{"account-opening"}, "due_diligence": "SDD"})
	exact := func(what string, r apptest.Response, code int, want ...string) {
		t.Helper()
		apptest.Expect(t, what, r, code, http.StatusBadRequest)
		var got []string
		for _, f := range r.Errors {
			got = append(got, f.Field)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: errors name %q, want %q (%+v)", what, got, want, r.Errors)
		}
	}

	m := cleanUBO()
	delete(m, "first_name")  // required by the partner's validator configuration
	delete(m, "nationality") // likewise
	m["user"] = createUser(t, env, other, validUser(other))
	m["documents"] = []map[string]any{{"file": b64(pdfBytes), "file_type": "png", "document_type": "passport"}}
	exact("member", call(t, env, p, http.MethodPost, "/v3/applications/"+app+"/companies/members", "company_add_member", m),
		emi.ErrValidation.Code, "first_name", "nationality", "user", "documents[0].file")

	exact("document", call(t, env, p, http.MethodPost, "/v3/applications/"+app+"/companies/documents", "company_add_document",
		map[string]any{"file": b64(pdfBytes), "file_type": "exe", "document_type": "passport"}), emi.ErrValidation.Code, "file_type")

	mem := cleanUBO()
	mem["first_name"] = "4"
	exact("application member", call(t, env, p, http.MethodPost, "/v3/applications", "application_create",
		map[string]any{"products": []string{"account-opening"}, "due_diligence": "SDD", "members": []any{cleanUBO(), mem}}),
		emi.ErrValidation.Code, "members[1].first_name")

	c := newPayCard(t, env, p, "account_eur", 0, nil)
	bad := delivery()
	bad["phone"], bad["country"] = "x", "bg"
	exact("convert", call(t, env, p, http.MethodPut, "/v2/cards/"+c.card+"/convert", "card_convert", map[string]any{"delivery_details": bad}),
		emi.ErrCardValidation.Code, "delivery_details.phone", "delivery_details.country")
}
