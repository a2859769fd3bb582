package portal_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// The forms a page shows for an account and for a two-person request are
// exactly the steps the service accepts, for every role and for the people the decision engine
// tells apart: the proposer, an unlinked colleague, a colleague linked to
// the proposer through the administrator who set both up, and each other
// role. Each case starts from a fresh request: the page is read, then every
// step is posted whether or not it was shown, and "shown" must equal "done"
// (the request left pending). A page that re-derived a rule (the old
// "anyone but the proposer may approve") shows the linked colleague an
// approve button the service refuses, and fails here.
func TestRequestFormsAreWhatTheServiceAllows(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	env := a.env
	newStaff(t, env, "colleague@forms.test", "Unlinked Colleague", emi.RoleCustomerService)
	newStaff(t, env, "linked@forms.test", "Linked Colleague", emi.RoleCustomerService)
	// One administrator "created" both the proposer and the linked
	// colleague within the link window: the engine counts them as one
	// person.
	var admin, proposer, linked string
	for email, dst := range map[string]*string{apptest.AdminEmail: &admin, apptest.CSEmail: &proposer, "linked@forms.test": &linked} {
		if err := env.App.DB.Get(dst, `SELECT id::text FROM staff_users WHERE email = $1`, email); err != nil {
			t.Fatal(err)
		}
	}
	adminCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: admin, StaffRoles: []string{string(emi.RoleAdmin)}})
	for _, u := range []string{proposer, linked} {
		if err := env.App.Audit.Record(adminCtx, emi.AuditEntry{Action: "staff.create", ResourceType: "staff_user", ResourceToken: u}); err != nil {
			t.Fatal(err)
		}
	}
	viewers := map[string]string{
		"proposer": apptest.CSEmail, "colleague": "colleague@forms.test", "linked colleague": "linked@forms.test",
		"compliance": apptest.ComplianceEmail, "auditor": apptest.AuditorEmail, "admin": apptest.AdminEmail,
		"underwriter": apptest.UnderwriterEmail,
	}
	pendingOf := func(subject string) bool {
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM control_requests WHERE subject = $1 AND status = 'pending'`, subject); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// A step is a form: its name, how the page shows it (the form's
	// action), where it posts and what.
	type step struct {
		name, shown, path string
		form              url.Values
		// done reports whether the service did it (nil: the request
		// left pending).
		done func() bool
	}
	type flow struct {
		name  string
		steps []string
		// propose makes a fresh request as the proposer, on a fresh
		// account; it returns the page that shows it, the request's
		// subject and its steps by name.
		propose func(t *testing.T) (page, subject string, steps map[string]step)
	}
	fresh := func(t *testing.T) string {
		return openAccount(t, env, a.p, map[string]any{"program": "account_eur", "user": a.user})["token"].(string)
	}
	flows := []flow{
		{"account termination", []string{"approve", "withdraw or reject"}, func(t *testing.T) (string, string, map[string]step) {
			tok := fresh(t)
			page := "/backoffice/accounts/" + tok
			follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Customer closes the relationship"}}))
			end := page + "/terminate/withdraw"
			return page, "account:" + tok, map[string]step{
				"approve": {"approve", `data-testid="approve-termination"`, page + "/terminate/approve", url.Values{}, nil},
				// One route: the service withdraws the proposer's own and
				// rejects another's; the page names it accordingly.
				"withdraw or reject": {"withdraw or reject", `action="` + end + `?request=`, end, url.Values{}, nil},
			}
		}},
		{"account actions", []string{"block", "unblock", "request termination"}, func(t *testing.T) (string, string, map[string]step) {
			tok := fresh(t)
			page := "/backoffice/accounts/" + tok
			status := func(want string) func() bool { return func() bool { return accountStatus(t, env, tok) == want } }
			steps := map[string]step{
				"block":   {"block", `action="` + page + `/block"`, page + "/block", url.Values{"reason": {"card reported stolen"}}, status(emi.AccountBlocked)},
				"unblock": {"unblock", `action="` + page + `/unblock"`, page + "/unblock", url.Values{"reason": {"card found"}}, status(emi.AccountActive)},
				"request termination": {"request termination", `action="` + page + `/terminate"`, page + "/terminate",
					url.Values{"reason": {"customer leaves"}}, func() bool { return pendingOf("account:" + tok) }},
			}
			return page, "", steps
		}},
		{"manual adjustment", []string{"approve", "reject or withdraw"}, func(t *testing.T) (string, string, map[string]step) {
			acc := fresh(t)
			page := "/backoffice/accounts/" + acc
			follow(t, a.cs, a.cs.Post(t, page+"/adjustments", url.Values{"direction": {"credit"}, "currency": {"EUR"},
				"amount": {"1.00"}, "reason": {"goodwill credit"}}))
			var tok string
			if err := env.App.DB.Get(&tok, `SELECT id::text FROM control_requests WHERE control = 'adjustment.approve'
				AND status = 'pending' AND resource_token = $1`, acc); err != nil {
				t.Fatal(err)
			}
			// The queue, where every role that moves money decides.
			base := "/backoffice/adjustments/" + tok
			return "/backoffice/adjustments", "adjustment:" + tok, map[string]step{
				"approve":            {"approve", `action="` + base + `/approve"`, base + "/approve", url.Values{}, nil},
				"reject or withdraw": {"reject or withdraw", `action="` + base + `/reject"`, base + "/reject", url.Values{"reason": {"not needed"}}, nil},
			}
		}},
	}
	browsers := map[string]*apptest.Browser{}
	for who, email := range viewers {
		browsers[who] = env.NewBrowser()
		browsers[who].SignIn(t, email)
	}
	for _, f := range flows {
		for who, b := range browsers {
			for _, name := range f.steps {
				page, subject, steps := f.propose(t)
				st := steps[name]
				if name == "unblock" {
					// Only a blocked account unblocks.
					follow(t, a.cs, a.cs.Post(t, page+"/block", url.Values{"reason": {"card reported stolen"}}))
				}
				pg := b.Get(t, page)
				shown := pg.Status == 200 && strings.Contains(pg.Body, st.shown)
				b.Post(t, st.path, st.form)
				done := st.done != nil && st.done()
				if st.done == nil {
					done = !pendingOf(subject)
				}
				if shown != done {
					t.Errorf("%s, %s by the %s: shown %v, the service did it %v", f.name, name, who, shown, done)
				}
			}
		}
	}
}
