package portal_test

import (
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// Ongoing screening of onboarded merchants: a watch-list entry naming the
// UBO of an approved merchant raises an alert that names the merchant and
// links to its company page, and the AML check page says which merchant
// and which member it is about. The old code screened no merchant after
// approval, and the queue and the check page knew only users: this test
// failed there (no check was raised).
func TestAlertNamesTheMerchantOfARescreenedMember(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	startWorkers(t, env)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Merchant Alerts"})
	app, member := createApplication(t, env, p, sandboxApplication(p))
	waitStatus(t, env, app, emi.AppApproved)
	var m struct {
		Token string `db:"token"`
		Name  string `db:"name"`
	}
	if err := env.App.DB.Get(&m, `SELECT token::text AS token, name FROM merchants WHERE application = $1`, app); err != nil || m.Name == "" {
		t.Fatalf("the approved application's merchant: %+v %v", m, err)
	}

	if _, err := env.App.Watchlist.Add(staffCtx(t, env, apptest.ComplianceEmail), emi.WatchlistEntry{Name: "Elin Sandqvist",
		Category: "fraud", Note: "Named in an invoice-fraud case", Source: "https://news.example/case"}); err != nil {
		t.Fatal(err)
	}
	var check string
	testwait.Try(func() bool {
		_ = env.App.DB.Get(&check, `SELECT token::text FROM aml_checks WHERE merchant_token = $1 AND member_token = $2
			AND source = 'watchlist' AND status = 'match'`, m.Token, member)
		return check != ""
	})
	if check == "" {
		t.Fatal("the watch-list entry naming the merchant's UBO raised no check")
	}

	officer := env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	page := officer.Get(t, "/backoffice/alerts")
	if !strings.Contains(page.Body, `data-testid="alert-merchant"`) || !strings.Contains(page.Body, m.Name) ||
		!strings.Contains(page.Body, `href="/backoffice/companies/`+app+`"`) || !strings.Contains(page.Body, "/backoffice/aml/"+check) {
		t.Fatalf("the alert queue does not name the merchant %q:\n%s", m.Name, page.Body)
	}
	queue := officer.Get(t, "/backoffice/aml")
	if !strings.Contains(queue.Body, "merchant "+m.Name) || !strings.Contains(queue.Body, "/backoffice/aml/"+check) {
		t.Fatalf("the AML queue does not name the merchant:\n%s", queue.Body)
	}
	detail := officer.Get(t, "/backoffice/aml/"+check)
	if detail.Status != 200 || !strings.Contains(detail.Body, `data-testid="aml-merchant"`) || !strings.Contains(detail.Body, m.Name) ||
		!strings.Contains(detail.Body, "/backoffice/applications/"+app+"/members/"+member) || !strings.Contains(detail.Body, "Elin Sandqvist") {
		t.Fatalf("the AML check page does not say which merchant and member: HTTP %d\n%s", detail.Status, detail.Body)
	}
	// A watch-list hit is explained as one: it said the entry was no
	// longer on the loaded lists, with a name score of 0.000.
	if strings.Contains(detail.Body, "no longer on the loaded lists") || !strings.Contains(detail.Body, "emi&#39;s own watch list") {
		t.Fatalf("the watch-list hit is explained as a vanished sanctions entry:\n%s", detail.Body)
	}
}
