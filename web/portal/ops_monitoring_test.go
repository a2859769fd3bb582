package portal_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
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
	if rules.Status != 200 || strings.Count(rules.Body, `data-testid="monitoring-rule"`) != 13 || !strings.Contains(rules.Body, "structuring") {
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
