package portal_test

import (
	"net/url"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// The compliance alert queue in the back office. A compliance officer sees
// an application's undecided sanctions hit beside the API checks, claims
// it, assigns it to a colleague with a reason; the colleague sees the
// assignment on the dashboard and as a count beside "Inbox", and marks it
// read. An underwriter's @mention reaches the officer's inbox. Other roles
// see the queue without its actions.
func TestComplianceAlertsPage(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	startWorkers(t, env)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Alerts Partner", Processing: emi.ProcessingSemiAutomatic})
	second := newStaff(t, env, "second.officer@alerts.test", "Second Officer", emi.RoleCompliance)
	kim := queuedApplication(t, env, p, sanctioned)

	officer, colleague, uw, cs := env.NewBrowser(), env.NewBrowser(), env.NewBrowser(), env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	colleague.SignIn(t, "second.officer@alerts.test")
	uw.SignIn(t, apptest.UnderwriterEmail)
	cs.SignIn(t, apptest.CSEmail)

	page := officer.Get(t, "/backoffice/alerts")
	if !strings.Contains(page.Body, `data-testid="alert-row" data-kind="application"`) || !strings.Contains(page.Body, "Kim Jong Un") ||
		!strings.Contains(page.Body, "/backoffice/applications/"+kim) {
		t.Fatalf("the alert queue lacks the application's hit:\n%s", page.Body)
	}
	if !strings.Contains(page.Body, `href="/backoffice/alerts"`) {
		t.Fatal("no navigation entry for the alerts")
	}
	got := after(t, officer, "/backoffice/alerts/claim", url.Values{"kind": {"application"}, "subject": {kim}})
	if !strings.Contains(flashes(got), "yours") || !strings.Contains(got.Body, `data-testid="alert-release"`) {
		t.Fatalf("after the claim: %s", flashes(got))
	}
	// A colleague cannot take it while it is held.
	r := colleague.Post(t, "/backoffice/alerts/claim", url.Values{"kind": {"application"}, "subject": {kim}})
	if r.Status != 409 || !strings.Contains(r.Body, `data-testid="alerts-error"`) {
		t.Fatalf("claim of a held alert: HTTP %d", r.Status)
	}
	got = after(t, officer, "/backoffice/alerts/assign", url.Values{"kind": {"application"}, "subject": {kim},
		"to": {second}, "reason": {"you reviewed this owner last year"}})
	if !strings.Contains(got.Body, "Second Officer") {
		t.Fatal("the queue does not show the new holder")
	}
	dash := colleague.Get(t, "/backoffice/")
	if !strings.Contains(dash.Body, `data-testid="dashboard-inbox"`) || !strings.Contains(dash.Body, "you reviewed this owner last year") {
		t.Fatalf("the colleague's dashboard lacks the assignment:\n%s", dash.Body)
	}
	if !strings.Contains(dash.Body, `href="/backoffice/inbox"`) || !regexpNavCount(dash.Body, "Inbox", "1") {
		t.Fatal("no inbox count in the navigation")
	}
	after(t, colleague, "/backoffice/inbox/read", url.Values{"id": {"0"}})
	if dash = colleague.Get(t, "/backoffice/"); regexpNavCount(dash.Body, "Inbox", "1") {
		t.Fatal("the count stays after marking all read")
	}

	// An underwriter's mention reaches the officer.
	after(t, uw, "/backoffice/review/"+kim+"/notes", url.Values{"body": {"@" + apptest.ComplianceEmail + " please decide the owner's hit"}})
	inbox := officer.Get(t, "/backoffice/inbox")
	if !strings.Contains(inbox.Body, "please decide the owner") || !strings.Contains(inbox.Body, "mention") {
		t.Fatalf("the officer's inbox lacks the mention:\n%s", inbox.Body)
	}

	// Customer service sees the queue, without claim or assign.
	page = cs.Get(t, "/backoffice/alerts")
	if page.Status != 200 || strings.Contains(page.Body, `data-testid="alert-claim"`) || strings.Contains(page.Body, `data-testid="alert-assign"`) {
		t.Fatalf("customer service: HTTP %d, with actions", page.Status)
	}
	if r := cs.Post(t, "/backoffice/alerts/claim", url.Values{"kind": {"application"}, "subject": {kim}}); r.Status != 403 {
		t.Fatalf("customer service claims: HTTP %d", r.Status)
	}
}

// regexpNavCount reports whether the navigation link label carries count.
func regexpNavCount(body, label, count string) bool {
	i := strings.Index(body, ">"+label)
	if i < 0 {
		return false
	}
	end := strings.Index(body[i:], "</a>")
	if end < 0 {
		return false
	}
	return strings.Contains(body[i:i+end], ">"+count+"<")
}
