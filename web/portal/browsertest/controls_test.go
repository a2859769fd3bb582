package browser_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// A true match blocks approval and a false positive takes two people, as an
// underwriter and a compliance officer meet them in the browser. The
// underwriter's "false positive" on an exact sanctions match is only a
// proposal: approval is refused while it waits. The compliance officer
// finds the application in the alert queue and records a true match
// instead; from then on nobody can approve it, and the page says why.
func TestSanctionsHitControlsInTheBrowser(t *testing.T) {
	t.Parallel()
	env, p := reviewEnv(t)
	app := queueApplication(t, env, p, func(b map[string]any) {
		m := b["members"].([]map[string]any)[0]
		m["first_name"], m["last_name"], m["birthday"], m["nationality"], m["unique_identifier"] = "Kim", "Jong Un", "1984-01-08", "KP", "KP1"
	})

	uw := newTab(t, env)
	uw.signIn(env, apptest.UnderwriterEmail)
	uw.open("/backoffice/applications/" + app)
	uw.clickNav(`[data-testid="claim"]`)
	uw.do("propose a false positive",
		chromedp.SetValue(chromedp.CSS(`[data-testid="hit-form"] select[name="decision"]`), "false_positive"))
	uw.typeInto(`[data-testid="hit-form"] input[name="reason"]`, "Another person: the passport number differs")
	uw.clickNav(`[data-testid="hit-form"] button[type="submit"]`)
	if got := uw.text(`[data-testid="hit-decision"]`); !strings.Contains(got, "needs a second person") {
		t.Fatalf("after the underwriter's false positive the hit shows %q", got)
	}
	// Approving now is refused, with the reason in words.
	if uw.count(`[data-testid="approve"]`) > 0 {
		uw.clickNav(`[data-testid="approve"]`)
		if f := flashText(uw); !strings.Contains(f, "no final decision") {
			t.Fatalf("approval with an undecided hit: flash %q", f)
		}
	}
	if st := uw.text(`[data-testid="application-status"]`); st != "in_review" {
		t.Fatalf("status %q", st)
	}
	screenshot(uw, "controls-hit-proposed")

	officer := newTab(t, env)
	officer.signIn(env, apptest.ComplianceEmail)
	officer.open("/backoffice/alerts")
	if rows := officer.texts(`[data-testid="alert-row"]`); len(rows) == 0 || !strings.Contains(strings.Join(rows, "\n"), "Kim Jong Un") {
		t.Fatalf("the officer's alert queue %q", rows)
	}
	screenshot(officer, "controls-alert-queue")
	officer.clickNav(`[data-testid="alert-row"] a[href="/backoffice/applications/` + app + `"]`)
	officer.do("record a true match",
		chromedp.SetValue(chromedp.CSS(`[data-testid="hit-form"] select[name="decision"]`), "true_match"))
	officer.typeInto(`[data-testid="hit-form"] input[name="reason"]`, "Same person: birthday and nationality agree with the listing")
	officer.clickNav(`[data-testid="hit-form"] button[type="submit"]`)
	if got := officer.text(`[data-testid="hit-decision"]`); !strings.Contains(got, "true match") {
		t.Fatalf("after the officer's decision the hit shows %q", got)
	}

	// The underwriter cannot approve a true match.
	uw.open("/backoffice/applications/" + app)
	if uw.count(`[data-testid="approve"]`) > 0 {
		uw.clickNav(`[data-testid="approve"]`)
		if f := flashText(uw); !strings.Contains(f, "true match") {
			t.Fatalf("approval with a true match: flash %q", f)
		}
	}
	var st string
	_ = env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app)
	if st != string(emi.AppInReview) {
		t.Fatalf("the application is %s", st)
	}
	screenshot(uw, "controls-true-match-blocks")
	noCSPViolations(t, uw, officer)
}

// In the browser, the first approval is bound to the evidence. The partner
// changes the application after it; the second underwriter's approval
// becomes a new first approval, the page says the earlier one was void, and
// the application is not approved by one person.
func TestMaterialChangeVoidsFirstApprovalInTheBrowser(t *testing.T) {
	t.Parallel()
	env, p := reviewEnv(t)
	newUnderwriter(t, env, "second.underwriter@c3.test", "Second Underwriter")
	app := queueApplication(t, env, p, func(b map[string]any) {
		b["company"].(map[string]any)["description_of_activity"] = "Online casino and betting"
		b["due_diligence"] = "SDD"
	})
	first := newTab(t, env)
	first.signIn(env, apptest.UnderwriterEmail)
	first.open("/backoffice/applications/" + app)
	first.clickNav(`[data-testid="claim"]`)
	first.do("write the reason", sendKeys(`[data-testid="approve-form"] textarea[name="text"]`, "Licence checked"))
	first.clickNav(`[data-testid="approve"]`)
	if f := flashText(first); !strings.Contains(f, "First approval recorded") {
		t.Fatalf("first approval: %q", f)
	}

	// The partner changes the company.
	env.Clock.Advance(time.Second)
	r := p.Do(t, apptest.Request{Method: http.MethodPut, Path: "/v3/applications/" + app + "/companies", Operation: "company_update",
		JSON: map[string]any{"city": "Leeds"}})
	if r.Status != http.StatusOK {
		t.Fatalf("company_update: %s", r)
	}
	waitApplication(t, env, app, emi.AppInReview)

	second := newTab(t, env)
	second.signIn(env, "second.underwriter@c3.test")
	second.open("/backoffice/applications/" + app)
	second.clickNav(`[data-testid="claim"]`)
	second.do("write the reason", sendKeys(`[data-testid="approve-form"] textarea[name="text"]`, "Looks fine"))
	second.clickNav(`[data-testid="approve"]`)
	var st string
	_ = env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app)
	if st == string(emi.AppApproved) {
		t.Fatal("the second underwriter approved alone on evidence the first never saw")
	}
	if rows := second.texts(`[data-testid="decision-row"]`); !strings.Contains(strings.Join(rows, "\n"), "void") {
		t.Fatalf("the decisions do not say the earlier approval was void: %q", rows)
	}
	screenshot(second, "controls-first-approval-void")
	noCSPViolations(t, first, second)
}
