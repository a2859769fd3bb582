package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestDecideAndTakeTheNext: a decision made with "and take the next case"
// lands on the next case of the same queue (AML, KYC); with none left it
// lands on the queue, saying so; a check with hits left to decide stays on
// its page. Each case page links the next case (the "n" shortcut follows
// it). The old code always answered with the same page and had no next-case
// link: this test failed there.
func TestDecideAndTakeTheNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := newPeopleFixture(t, f.env, f.env.NewPartner(t, emi.PartnerCreate{Name: "Next Partner"}))
	officer := f.env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)

	first, second := "/backoffice/aml/"+f.people.check, "/backoffice/aml/"+other.check
	if p := officer.Get(t, first); !strings.Contains(p.Body, `href="`+second+`" data-next-case`) {
		t.Fatal("the AML check does not link the next check of the queue")
	}
	ns := openHits(t, f.env, f.people.check)
	for i, n := range ns {
		d := emi.HitFalsePositive
		if i == 0 {
			d = emi.HitTrueMatch
		}
		p := officer.Post(t, first+"/decide", url.Values{"n": {fmt.Sprint(n)}, "decision": {d}, "reason": {"born the same day, same place"},
			"then": {"next"}})
		want := first + "#hit-" + fmt.Sprint(n)
		if i == len(ns)-1 {
			want = second
		}
		if p.Status != http.StatusSeeOther || p.Location != want {
			t.Fatalf("hit %d of %d: HTTP %d to %q, want %q", i+1, len(ns), p.Status, p.Location, want)
		}
	}
	if p := officer.Get(t, second); !strings.Contains(p.Body, "This is the next case.") {
		t.Error("the next check does not say what happened")
	}

	kyc := func(s string) string { return "/backoffice/kyc/" + s }
	p := officer.Post(t, kyc(f.people.session)+"/decide", url.Values{"decision": {"approve"}, "reason": {"photo matches"}, "then": {"next"}})
	if p.Status != http.StatusSeeOther || p.Location != kyc(other.session) {
		t.Fatalf("KYC approve and next: HTTP %d to %q, want %q", p.Status, p.Location, kyc(other.session))
	}
	p = officer.Post(t, kyc(other.session)+"/decide", url.Values{"decision": {"approve"}, "reason": {"photo matches"}, "then": {"next"}})
	if p.Status != http.StatusSeeOther || p.Location != "/backoffice/kyc" {
		t.Fatalf("the last KYC case and next: HTTP %d to %q, want the queue", p.Status, p.Location)
	}
	if q := officer.Get(t, "/backoffice/kyc"); !strings.Contains(q.Body, "No other identification waits for a review.") {
		t.Error("the queue does not say nothing is left")
	}
	// Without the choice, the answer is the decided case, as before.
	if p := officer.Get(t, kyc(other.session)); strings.Contains(p.Body, "data-next-case") {
		t.Error("a next case is linked though none is left")
	}
}

// TestRejectAndTakeTheNextApplication: an underwriter's decision with "and
// take the next case" claims the next unclaimed application of the queue,
// as "Take next" does, and opens it; with none left, the queue. The old
// code answered with the decided application.
func TestRejectAndTakeTheNextApplication(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	startWorkers(t, env)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Next Review Partner", Processing: emi.ProcessingSemiAutomatic})
	first := queuedApplication(t, env, p, nil)
	second := queuedApplication(t, env, p, nil)
	uw := env.NewBrowser()
	uw.SignIn(t, apptest.UnderwriterEmail)
	if r := uw.Post(t, "/backoffice/review/next", url.Values{}); r.Location != "/backoffice/applications/"+first {
		t.Fatalf("take next: to %q, want the oldest application", r.Location)
	}
	reject := func(app string) apptest.Page {
		stamp := stampIn(t, uw.Get(t, "/backoffice/applications/"+app).Body)
		return uw.Post(t, "/backoffice/review/"+app+"/decide", url.Values{"action": {"reject"}, "stamp": {stamp},
			"reason_code": {"prohibited_activity"}, "text": {"Sells replica weapons"}, "then": {"next"}})
	}
	if r := reject(first); r.Status != http.StatusSeeOther || r.Location != "/backoffice/applications/"+second {
		t.Fatalf("reject and next: HTTP %d to %q, want the next application", r.Status, r.Location)
	}
	if a := assigneeOf(t, env, second); a != staffID(t, env, apptest.UnderwriterEmail) {
		t.Fatalf("the next application is claimed by %q, not the underwriter", a)
	}
	if statusOf(t, env, first) != emi.AppRejected {
		t.Fatal("the first application was not rejected")
	}
	if r := reject(second); r.Status != http.StatusSeeOther || r.Location != "/backoffice/review" {
		t.Fatalf("the last one: HTTP %d to %q, want the queue", r.Status, r.Location)
	}
}
