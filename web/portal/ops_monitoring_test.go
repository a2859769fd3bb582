package portal_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/monitoring"
)

// A transaction monitoring alert in the back office: the compliance
// officer finds it in the alert queue, opens it and reads each rule's
// finding, claims it as any alert, and reads the rules in force. Customer
// service, who sees the screening alerts, neither sees a monitoring alert
// in the queue, nor its count, nor its page, nor the rules: a customer's
// monitoring is compliance's alone.
func TestMonitoringAlertInTheBackOffice(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Watched Partner"})
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID,
		MasterMerchant: p.Merchant})
	in := emi.UserCreate{Email: "rowan@watched.test"}
	in.FirstName, in.LastName = "Rowan", "Ashdown"
	in.ExpectedIncomingMonthlyEUR, in.RiskScore = "Between 1001 and 5000 EUR", "High"
	u, err := env.App.Users.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := env.App.Accounts.Create(ctx, emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().AddDate(0, 0, -3).Format(time.RFC3339)
	res, err := env.App.HistoryImport.Import(context.Background(), p.ID, strings.NewReader(
		`{"ref":"wire-1","at":"`+at+`","kind":"incoming","account":"`+acc.Token+`","amount":"14200.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Trading Co"}}`+"\n"))
	if err != nil || res.Booked != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	var alert string
	if err := env.App.DB.Get(&alert, `SELECT token FROM monitoring_alerts WHERE subject_token = $1`, u.Token); err != nil {
		t.Fatal(err)
	}

	officer, cs := env.NewBrowser(), env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	cs.SignIn(t, apptest.CSEmail)

	queue := officer.Get(t, "/backoffice/alerts")
	if !strings.Contains(queue.Body, `data-testid="alert-row" data-kind="monitoring_alert"`) || !strings.Contains(queue.Body, "Rowan Ashdown") ||
		!strings.Contains(queue.Body, "/backoffice/monitoring/"+alert) || !regexpNavCount(officer.Get(t, "/backoffice/").Body, "Compliance alerts", "1") {
		t.Fatalf("the queue lacks the monitoring alert:\n%s", queue.Body)
	}
	page := officer.Get(t, "/backoffice/monitoring/"+alert)
	for _, want := range []string{"Rowan Ashdown", "Watched Partner", "large_amount", "profile_incoming_volume",
		"incoming 14,200.00 EUR this month, declared band Between 1001 and 5000 EUR", "wire-1"} {
		if page.Status != 200 || !strings.Contains(page.Body, want) {
			t.Fatalf("the alert's page (HTTP %d) lacks %q:\n%s", page.Status, want, page.Body)
		}
	}
	got := after(t, officer, "/backoffice/alerts/claim", url.Values{"kind": {"monitoring_alert"}, "subject": {alert}})
	if !strings.Contains(flashes(got), "yours") {
		t.Fatalf("claim: %s", flashes(got))
	}
	rules := officer.Get(t, "/backoffice/monitoring/rules")
	if rules.Status != 200 || strings.Count(rules.Body, `data-testid="monitoring-rule"`) != len(monitoring.Codes()) || !strings.Contains(rules.Body, "structuring") {
		t.Fatalf("rules page: HTTP %d", rules.Status)
	}

	queue = cs.Get(t, "/backoffice/alerts")
	if queue.Status != 200 || strings.Contains(queue.Body, "monitoring_alert") || strings.Contains(queue.Body, "Rowan Ashdown") ||
		regexpNavCount(cs.Get(t, "/backoffice/").Body, "Compliance alerts", "1") {
		t.Fatalf("customer service's queue shows the monitoring alert or its count:\n%s", queue.Body)
	}
	for _, path := range []string{"/backoffice/monitoring/" + alert, "/backoffice/monitoring/rules"} {
		if r := cs.Get(t, path); r.Status != 403 {
			t.Errorf("customer service opens %s: HTTP %d", path, r.Status)
		}
	}
	if r := officer.Get(t, "/backoffice/monitoring/"+emi.ErrForbidden.Key); r.Status != 404 {
		t.Errorf("a token that is none: HTTP %d", r.Status)
	}
}

// TestMonitoringRuleChangeInTheBackOffice: one officer proposes a lower
// large-amount threshold from the rules page and reads its backtest; the
// page offers them no approval and says why; a second officer approves it
// and the new version is in force.
func TestMonitoringRuleChangeInTheBackOffice(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	env.SeedStaff(t)
	newStaff(t, env, "second.officer@rules.test", "Second Officer", emi.RoleCompliance)
	first, second := env.NewBrowser(), env.NewBrowser()
	first.SignIn(t, apptest.ComplianceEmail)
	second.SignIn(t, "second.officer@rules.test")

	bad := first.Post(t, "/backoffice/monitoring/rules/large_amount/propose", url.Values{"program": {""}, "score": {"30"},
		"state": {"live"}, "param.threshold_eur": {"lots"}, "reason": {"lower it"}})
	if bad.Status != 422 || !strings.Contains(bad.Body, "threshold_eur: must be a number") {
		t.Fatalf("a parameter that is no number: HTTP %d", bad.Status)
	}
	got := after(t, first, "/backoffice/monitoring/rules/large_amount/propose", url.Values{"program": {""}, "score": {"30"},
		"state": {"live"}, "param.threshold_eur": {"7500"}, "reason": {"the market's reporting threshold"}})
	if !strings.Contains(flashes(got), "Proposed") || !strings.Contains(got.Body, `data-testid="rule-proposal"`) ||
		!strings.Contains(got.Body, "hits now") || strings.Contains(got.Body, `data-testid="rule-approve"`) ||
		!strings.Contains(got.Body, `data-testid="rule-why-not"`) {
		t.Fatalf("after the proposal, the proposer's page:\n%s", got.Body)
	}
	page := second.Get(t, "/backoffice/monitoring/rules")
	if !strings.Contains(page.Body, `data-testid="rule-approve"`) || !strings.Contains(page.Body, "the market&#39;s reporting threshold") {
		t.Fatalf("the second officer's page lacks the approval:\n%s", page.Body)
	}
	request := dom(t, page).Find(`[data-testid="rule-proposal"] input[name="request"]`).First().AttrOr("value", "")
	if r := first.Post(t, "/backoffice/monitoring/rules/large_amount/approve", url.Values{"program": {""}, "request": {request}}); r.Status != 409 {
		t.Fatalf("the proposer approves by posting the form: HTTP %d", r.Status)
	}
	got = after(t, second, "/backoffice/monitoring/rules/large_amount/approve", url.Values{"program": {""}, "request": {request}})
	if !strings.Contains(flashes(got), "large_amount version 2 is in force") || strings.Contains(got.Body, `data-testid="rule-proposal"`) ||
		!strings.Contains(got.Body, `{&#34;threshold_eur&#34;:7500}`) {
		t.Fatalf("after the approval: %s\n%s", flashes(got), got.Body)
	}
}

// A case in the back office: opened from the alert's page, a question to
// the partner that could tip the customer off is refused with the text
// kept (422), a routine one is sent; customer service cannot open the
// case's page.
func TestMonitoringCaseInTheBackOffice(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Watched Partner"})
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID,
		MasterMerchant: p.Merchant})
	in := emi.UserCreate{Email: "case@watched.test"}
	in.FirstName, in.LastName = "Casey", "Holt"
	u, err := env.App.Users.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := env.App.Accounts.Create(ctx, emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().AddDate(0, 0, -3).Format(time.RFC3339)
	if res, err := env.App.HistoryImport.Import(context.Background(), p.ID, strings.NewReader(
		`{"ref":"w","at":"`+at+`","kind":"incoming","account":"`+acc.Token+`","amount":"14200.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Trading Co"}}`+"\n")); err != nil || res.Booked != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	var alert string
	if err := env.App.DB.Get(&alert, `SELECT token FROM monitoring_alerts WHERE subject_token = $1`, u.Token); err != nil {
		t.Fatal(err)
	}
	officer, cs := env.NewBrowser(), env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	cs.SignIn(t, apptest.CSEmail)
	page := officer.Get(t, "/backoffice/monitoring/"+alert)
	if !strings.Contains(page.Body, `data-testid="case-open"`) {
		t.Fatalf("the alert's page offers no case:\n%s", page.Body)
	}
	opened := officer.Post(t, "/backoffice/monitoring/"+alert+"/case", url.Values{"note": {"first look"}})
	if !strings.HasPrefix(opened.Location, "/backoffice/monitoring/cases/") {
		t.Fatalf("open a case: HTTP %d to %q", opened.Status, opened.Location)
	}
	casePath := opened.Location
	tipOff := "Our monitoring raised a suspicion about this customer"
	refused := officer.Post(t, casePath+"/request", url.Values{"topic": {"source_of_funds"}, "question": {tipOff}})
	if refused.Status != 422 || !strings.Contains(refused.Body, `data-testid="case-refused"`) || !strings.Contains(refused.Body, tipOff) {
		t.Fatalf("a tipping-off question: HTTP %d, want 422 with the text kept:\n%s", refused.Status, refused.Body)
	}
	sent := officer.Post(t, casePath+"/request", url.Values{"topic": {"source_of_funds"}, "question": {"Where does the 14,200 EUR come from?"}})
	if sent.Status != 303 {
		t.Fatalf("a routine question: HTTP %d", sent.Status)
	}
	view := officer.Get(t, casePath)
	if !strings.Contains(view.Body, "Where does the 14,200 EUR come from?") || !strings.Contains(view.Body, "investigating") {
		t.Fatalf("the case page lacks the request:\n%s", view.Body)
	}
	if got := cs.Get(t, casePath); got.Status != 403 {
		t.Fatalf("customer service opens the case: HTTP %d", got.Status)
	}
	if list := officer.Get(t, "/backoffice/monitoring/cases"); !strings.Contains(list.Body, "Casey Holt") {
		t.Fatalf("the case list lacks the case:\n%s", list.Body)
	}
}
