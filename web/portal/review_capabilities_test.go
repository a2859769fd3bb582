package portal_test

import (
	"errors"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/onboarding"
)

// TestApplicationCapabilitiesSayWhy: the service's answer to "what may
// this person do to this application, now, and if not, why?" gives each
// refusal its own reason, the page shows that answer, and what it allows
// is what Decide accepts (the first approver's second approval is refused
// by both).
func TestApplicationCapabilitiesSayWhy(t *testing.T) {
	t.Parallel()
	// Each case has its own desk and application, so each fails alone.
	type desk struct {
		*reviewDesk
		app string
	}
	fresh := func(t *testing.T) desk {
		d := newReviewDesk(t)
		return desk{d, d.high(t)}
	}
	caps := func(t *testing.T, d desk, email string) onboarding.ApplicationCapability {
		t.Helper()
		ctx := staffCtx(t, d.env, email)
		a, _, _, _, err := d.env.App.Review.Evidence(ctx, d.app)
		if err != nil {
			t.Fatal(err)
		}
		return d.env.App.Review.ApplicationCapabilities(ctx, a)
	}
	page := func(t *testing.T, d desk, email string) string {
		t.Helper()
		return d.as(t, email).Get(t, "/backoffice/applications/"+d.app).Body
	}
	firstApproval := func(t *testing.T, d desk) {
		t.Helper()
		d.decide(t, apptest.UnderwriterEmail, d.app, emi.ReviewDecision{Action: "approve", Text: "Licence checked"})
	}

	t.Run("a role that does not decide", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		c := caps(t, d, apptest.ComplianceEmail)
		if c.Decide || c.Claim || c.WhyNotDecide != onboarding.WhyNotDecideRole || !c.Annotate || !c.Correct {
			t.Fatalf("compliance: %+v", c)
		}
		if !strings.Contains(page(t, d, apptest.ComplianceEmail), onboarding.WhyNotDecideRole) {
			t.Error("the compliance officer's page does not say why they cannot decide")
		}
	})
	t.Run("an underwriter who does not hold it", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		c := caps(t, d, apptest.UnderwriterEmail)
		if c.Decide || !c.Claim || c.WhyNotDecide != onboarding.WhyNotDecideClaim || c.Correct {
			t.Fatalf("underwriter without the claim: %+v", c)
		}
	})
	t.Run("the first approver cannot give the second", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		firstApproval(t, d)
		d.claim(t, apptest.UnderwriterEmail, d.app)
		c := caps(t, d, apptest.UnderwriterEmail)
		if !c.Decide || c.Approve || c.WhyNotApprove != onboarding.WhyNotApproveMine {
			t.Fatalf("first approver holding it again: %+v", c)
		}
		body := page(t, d, apptest.UnderwriterEmail)
		if strings.Contains(body, `data-testid="approve-form"`) || !strings.Contains(body, onboarding.WhyNotApproveMine) ||
			!strings.Contains(body, `data-testid="decision-forms"`) {
			t.Error("the first approver's page offers the second approval, or hides why, or hides reject")
		}
		// What the page withholds, the service refuses.
		ctx := staffCtx(t, d.env, apptest.UnderwriterEmail)
		_, stamp, _, _, err := d.env.App.Review.Evidence(ctx, d.app)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.env.App.Review.Decide(ctx, d.app, emi.ReviewDecision{Action: "approve", Stamp: stamp}); !errors.Is(err, emi.ErrFourEyes) {
			t.Fatalf("the first approver's second approval: %v, want four-eyes", err)
		}
	})
	t.Run("an administrator releases anyone's claim but does not decide", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		d.claim(t, apptest.UnderwriterEmail, d.app)
		c := caps(t, d, apptest.AdminEmail)
		if !c.Release || !c.Assign || c.Claim || c.Decide || c.WhyNotDecide != onboarding.WhyNotDecideRole {
			t.Fatalf("admin: %+v", c)
		}
		if c := caps(t, d, secondUnderwriter); c.Release {
			t.Fatalf("an underwriter may release a colleague's claim: %+v", c)
		}
	})
	t.Run("a second underwriter may approve", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		firstApproval(t, d)
		d.claim(t, secondUnderwriter, d.app)
		c := caps(t, d, secondUnderwriter)
		if !c.Decide || !c.Approve || c.WhyNotApprove != "" {
			t.Fatalf("second underwriter: %+v", c)
		}
		if a := d.decide(t, secondUnderwriter, d.app, emi.ReviewDecision{Action: "approve"}); a.Status != emi.AppApproved {
			t.Fatalf("second approval: %s", a.Status)
		}
	})
	t.Run("a decided application", func(t *testing.T) {
		t.Parallel()
		d := fresh(t)
		d.reject(t, d.app)
		c := caps(t, d, apptest.UnderwriterEmail)
		if c.Decide || c.Claim || c.Release || c.Assign || c.Annotate || c.WhyNotDecide == "" {
			t.Fatalf("decided: %+v", c)
		}
	})
}
