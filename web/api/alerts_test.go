package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/onboarding"
)

// Compliance sees every hit: one alert queue holds API checks waiting for a
// decision and applications whose sanctions hits lack a final decision,
// with claims and assignments; an assignment and an @mention reach the
// person's inbox. Before, the AML queue listed API checks only, and a
// mention notified no one.
func TestComplianceAlertQueueAndInbox(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Alert Partner", Processing: emi.ProcessingSemiAutomatic})
	c1 := staffCtx(t, env, "c1@alerts.test", emi.RoleCompliance)
	c2 := staffCtx(t, env, "c2@alerts.test", emi.RoleCompliance)
	u1 := staffCtx(t, env, "u1@alerts.test", emi.RoleUnderwriter)
	auditor := staffCtx(t, env, "a1@alerts.test", emi.RoleAuditor)

	app := queued(t, env, p, func(b map[string]any) {
		m := b["members"].([]map[string]any)[0]
		m["first_name"], m["last_name"], m["birthday"], m["nationality"], m["unique_identifier"] = "Kim", "Jong Un", "1984-01-08", "KP", "KP1"
	})
	r := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", viktorBout)
	apptest.Expect(t, "aml_check", r, 18001, http.StatusConflict)
	check := r.Data["token"].(string)

	find := func(ctx context.Context, kind, subject string) *emi.Alert {
		t.Helper()
		q, err := env.App.Alerts.Queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range q {
			if q[i].Kind == kind && q[i].Subject == subject {
				return &q[i]
			}
		}
		return nil
	}
	countMatches := func(what string) {
		t.Helper()
		q, err := env.App.Alerts.Queue(c1)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := env.App.Alerts.Count(c1); err != nil || n != len(q) {
			t.Fatalf("%s: the navigation counts %d alerts, the queue lists %d (%v)", what, n, len(q), err)
		}
	}
	countMatches("two alerts")
	appAlert, checkAlert := find(c1, emi.AlertApplication, app), find(c1, emi.AlertAMLCheck, check)
	if appAlert == nil || checkAlert == nil {
		t.Fatalf("the queue lacks the application (%v) or the API check (%v)", appAlert, checkAlert)
	}
	if appAlert.Open == 0 || appAlert.TopScore < 0.9 || !strings.Contains(appAlert.Subjects, "Kim") {
		t.Fatalf("application alert %+v", appAlert)
	}

	t.Run("claims: one holder, even when ten officers claim at once", func(t *testing.T) {
		var won atomic.Int32
		var wg sync.WaitGroup
		officers := make([]context.Context, 10)
		for i := range officers {
			officers[i] = staffCtx(t, env, "race"+string(rune('a'+i))+"@alerts.test", emi.RoleCompliance)
		}
		for _, o := range officers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := env.App.Alerts.Claim(o, emi.AlertAMLCheck, check); err == nil {
					won.Add(1)
				} else if !is(err, emi.ErrReviewClosed) {
					t.Errorf("claim: %v", err)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d officers hold the alert", won.Load())
		}
		if err := env.App.Alerts.Claim(c1, emi.AlertAMLCheck, check); !is(err, emi.ErrReviewClosed) {
			t.Fatalf("claim of a held alert: %v", err)
		}
		if err := env.App.Alerts.Release(c1, emi.AlertAMLCheck, check); !is(err, emi.ErrForbidden) {
			t.Fatalf("release by someone who does not hold it: %v", err)
		}
		// The holder releases it; then it is free for anyone.
		for _, o := range officers {
			if err := env.App.Alerts.Release(o, emi.AlertAMLCheck, check); err != nil && !is(err, emi.ErrForbidden) {
				t.Fatalf("release: %v", err)
			}
		}
		if a := find(c1, emi.AlertAMLCheck, check); a == nil || a.Claim != nil {
			t.Fatalf("after the holder's release: %+v", a)
		}
		if err := env.App.Alerts.Claim(c1, emi.AlertAMLCheck, check); err != nil {
			t.Fatalf("claim of a released alert: %v", err)
		}
	})

	t.Run("roles: an underwriter or an auditor neither claims nor assigns", func(t *testing.T) {
		for _, who := range []context.Context{u1, auditor} {
			if err := env.App.Alerts.Claim(who, emi.AlertApplication, app); !is(err, emi.ErrForbidden) {
				t.Fatalf("claim: %v", err)
			}
			if err := env.App.Alerts.Assign(who, emi.AlertApplication, app, staffOf(t, c2), "please look"); !is(err, emi.ErrForbidden) {
				t.Fatalf("assign: %v", err)
			}
		}
		if err := env.App.Alerts.Assign(c1, emi.AlertApplication, app, staffOf(t, u1), "please look"); !is(err, emi.ErrReviewValidation) {
			t.Fatalf("assignment to an underwriter: %v", err)
		}
	})

	t.Run("an assignment reaches the colleague's inbox, and only theirs", func(t *testing.T) {
		if err := env.App.Alerts.Assign(c1, emi.AlertApplication, app, staffOf(t, c2), "you know this partner"); err != nil {
			t.Fatal(err)
		}
		if a := find(c1, emi.AlertApplication, app); a == nil || a.Claim == nil || a.Claim.StaffID != staffOf(t, c2) {
			t.Fatalf("after the assignment: %+v", a)
		}
		items, err := env.App.Inbox.Mine(c2, true, 10)
		if err != nil || len(items) != 1 || items[0].Kind != "assignment" || !strings.Contains(items[0].Body, "you know this partner") {
			t.Fatalf("c2's inbox: %v %+v", err, items)
		}
		if n, _ := env.App.Inbox.Unread(c1); n != 0 {
			t.Fatalf("the assigner has %d items", n)
		}
		// Someone else cannot mark c2's item read.
		if err := env.App.Inbox.MarkRead(c1, items[0].ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := env.App.Inbox.Unread(c2); n != 1 {
			t.Fatalf("c2's unread after c1 marked it: %d", n)
		}
		if err := env.App.Inbox.MarkRead(c2, 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := env.App.Inbox.Unread(c2); n != 0 {
			t.Fatalf("c2's unread after marking all: %d", n)
		}
	})

	t.Run("an @mention in a note reaches the person named", func(t *testing.T) {
		if _, err := env.App.Review.AddNote(u1, app, 0, "@c1@alerts.test can compliance look at the owner's hit?"); err != nil {
			t.Fatal(err)
		}
		items, err := env.App.Inbox.Mine(c1, true, 10)
		if err != nil || len(items) != 1 || items[0].Kind != "mention" || !strings.HasPrefix(items[0].Href, "/backoffice/applications/"+app) {
			t.Fatalf("c1's inbox: %v %+v", err, items)
		}
	})

	t.Run("a decided alert leaves the queue", func(t *testing.T) {
		a, _, _, _, _ := env.App.Review.Evidence(c1, app)
		for _, c := range a.Checks {
			if c.Name != emi.CheckSanctions {
				continue
			}
			for _, h := range c.Details["hits"].([]any) {
				key := onboarding.HitKey(h.(map[string]any))
				if err := env.App.Review.DecideHit(u1, app, key, emi.HitFalsePositive, "another person"); err != nil {
					t.Fatal(err)
				}
				if find(c1, emi.AlertApplication, app) == nil {
					t.Fatal("a proposed false positive took the application out of the queue")
				}
				countMatches("a proposal")
				if err := env.App.Review.DecideHit(c1, app, key, emi.HitTrueMatch, "same person"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if a := find(c1, emi.AlertApplication, app); a != nil {
			t.Fatalf("decided application still queued: %+v", a)
		}
		countMatches("after the decision")
	})
}
