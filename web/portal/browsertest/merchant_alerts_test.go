package browser_test

import (
	"context"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// Ongoing screening of onboarded merchants as a compliance officer meets
// it: a watch-list entry naming the UBO of an approved merchant puts an
// alert in the queue that names the merchant; its link opens the
// merchant's company page, and the check's page says which merchant and
// which member it is about. On the code before, no merchant was screened
// after its approval and the queue showed no merchant: this test failed
// there.
func TestMerchantAlertInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Merchant Partner"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = env.App.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	app := submitApplication(t, env, p, nil)
	waitApplication(t, env, app, emi.AppApproved)
	var merchant, name string
	_ = env.App.DB.Get(&merchant, `SELECT token::text FROM merchants WHERE application = $1`, app)
	_ = env.App.DB.Get(&name, `SELECT name FROM merchants WHERE application = $1`, app)

	officerCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: "00000000-0000-7000-8000-00000000c0de",
		StaffRoles: []string{string(emi.RoleCompliance)}})
	if _, err := env.App.Watchlist.Add(officerCtx, emi.WatchlistEntry{Name: "Elin Sandqvist", Category: "fraud",
		Note: "Named in an invoice-fraud case"}); err != nil {
		t.Fatal(err)
	}
	var check string
	testwait.Until(t, "the merchant's screening match", func() bool {
		_ = env.App.DB.Get(&check, `SELECT token::text FROM aml_checks WHERE merchant_token = $1 AND status = 'match'`, merchant)
		return check != ""
	})
	if check == "" || name == "" {
		t.Fatalf("no check for merchant %s (%q)", merchant, name)
	}

	officer := newTab(t, env)
	officer.signIn(env, apptest.ComplianceEmail)
	officer.open("/backoffice/alerts")
	if got := officer.text(`[data-testid="alert-merchant"]`); got != name {
		t.Fatalf("the alert names the merchant %q, want %q", got, name)
	}
	screenshot(officer, "merchant-alert-queue")
	officer.clickNav(`[data-testid="alert-merchant"]`)
	if !strings.Contains(officer.text("main"), "Elin Sandqvist") || !strings.HasSuffix(eval[string](officer, "location.pathname"), "/backoffice/companies/"+app) {
		t.Fatalf("the merchant link opened %s", eval[string](officer, "location.pathname"))
	}
	officer.open("/backoffice/aml/" + check)
	panel := officer.text(`[data-testid="aml-merchant"]`)
	if !strings.Contains(panel, name) || !strings.Contains(panel, "Elin Sandqvist") || !strings.Contains(panel, merchant) {
		t.Fatalf("the check's page says %q", panel)
	}
	screenshot(officer, "merchant-aml-check")
	noCSPViolations(t, officer)
}
