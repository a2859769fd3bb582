package servicetest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// newStaffUser creates a staff user with roles, as the principal of ctx
// (the system or an administrator), and returns its context.
func newStaffUser(t *testing.T, m *moneyApp, by context.Context, roles ...emi.Role) context.Context {
	t.Helper()
	email := fmt.Sprintf("s-%s@example.com", kernel.NewToken()[24:])
	in := emi.StaffCreate{Email: email, Name: email, Roles: roles, Password: "Correct-Horse-Battery-9"}
	if p, _ := emi.PrincipalFrom(by); p.Type == emi.ActorStaff {
		in.Password = "" // an administrator never chooses it
	}
	out, err := m.env.App.Staff.Create(by, in)
	if err != nil {
		t.Fatalf("create staff: %v", err)
	}
	if out.Change.Status == emi.StaffChangePending {
		out = approved(t, m, newApprover(t, m), out, nil)
	}
	return as(out.User)
}

// newApprover returns a new administrator set up by the system: a second
// administrator for privileged staff changes, linked to nobody.
func newApprover(t *testing.T, m *moneyApp) context.Context {
	t.Helper()
	return newStaffUser(t, m, sys(), emi.RoleAdmin)
}

// approved has approver approve the pending staff change of out.
func approved(t *testing.T, m *moneyApp, approver context.Context, out emi.StaffOutcome, err error) emi.StaffOutcome {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if out.Change.Status != emi.StaffChangePending {
		t.Fatalf("a privileged staff change took effect at once: %+v", out.Change)
	}
	done, err := m.env.App.Staff.ApproveChange(approver, out.Change.ID)
	if err != nil {
		t.Fatalf("the second administrator approves: %v", err)
	}
	return done
}

// One administrator mints money with two staff users they created. Before
// the decision engine, the second approval only compared user ids, so B
// requesting and C approving a 1,000,000.00 EUR credit succeeded; this test
// failed on that code.
func TestC8OneAdminCannotApproveWithStaffTheyCreated(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	acc := m.open(t, "account_eur", "")
	bal := acc.Balances[0].Token
	admin := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleAdmin}})
	adj := m.env.App.Adjustments
	credit := func(by context.Context) emi.Adjustment {
		t.Helper()
		a, err := adj.Request(by, emi.AdjustmentRequest{Account: acc.Token, Currency: "EUR", Direction: emi.AdjustmentCredit,
			Amount: 100_000_000, Reason: "goodwill"})
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		return a
	}

	// The admin creates B and C with the money permission.
	b := newStaffUser(t, m, admin, emi.RoleCustomerService)
	c := newStaffUser(t, m, admin, emi.RoleCompliance)
	a := credit(b)
	_, err := adj.Decide(c, a.Token, true, "")
	wantErr(t, "C approves B's credit, both created by one admin", err, emi.ErrFourEyes)
	if m.available(t, bal) != 0 {
		t.Fatal("money was credited")
	}

	// A person set up by the system (the CLI) or by another admin is
	// distinct: the request is approved.
	other := newStaffUser(t, m, sys(), emi.RoleCompliance)
	if _, err := adj.Decide(other, a.Token, true, ""); err != nil {
		t.Fatalf("an unrelated colleague approves: %v", err)
	}

	// A credential reset links the admin to the user: an admin who also
	// holds a money role cannot approve with a user whose credentials they
	// reset.
	both := newStaffUser(t, m, sys(), emi.RoleAdmin, emi.RoleCompliance)
	d := newStaffUser(t, m, sys(), emi.RoleCustomerService)
	out, err := m.env.App.Staff.ResetCredentials(both, staffOf(d))
	approved(t, m, newApprover(t, m), out, err)
	a = credit(d)
	_, err = adj.Decide(both, a.Token, true, "")
	wantErr(t, "an admin approves the credit of a user whose credentials they reset", err, emi.ErrFourEyes)

	// Granting a role links them too.
	e := newStaffUser(t, m, sys(), emi.RoleAuditor)
	out, err = m.env.App.Staff.SetRoles(both, staffOf(e), []emi.Role{emi.RoleCustomerService})
	approved(t, m, newApprover(t, m), out, err)
	e = as(emi.StaffUser{ID: staffOf(e), Roles: []emi.Role{emi.RoleCustomerService}})
	a2 := credit(e)
	_, err = adj.Decide(both, a2.Token, true, "")
	wantErr(t, "an admin approves the credit of a user they granted the money role", err, emi.ErrFourEyes)
	// ... and two users the same admin reset or granted are one person.
	_, err = adj.Decide(e, a.Token, true, "")
	wantErr(t, "two users set up by one admin", err, emi.ErrFourEyes)

	// The same sequence through reversals and terminations.
	term := m.open(t, "account_eur", "")
	if err := m.env.App.Accounts.RequestTermination(b, term.Token, "customer left"); err != nil {
		t.Fatal(err)
	}
	bcs := newStaffUser(t, m, admin, emi.RoleCustomerService)
	_, err = m.env.App.Accounts.ApproveTermination(bcs, term.Token)
	wantErr(t, "termination approved by another user of the same admin", err, emi.ErrFourEyes)

	// Thirty days on, the link has lapsed.
	m.env.Clock.Advance(staff.StaffLinkWindow + time.Hour)
	if _, err := adj.Decide(c, credit(b).Token, true, ""); err != nil {
		t.Fatalf("after the link window: %v", err)
	}
}

// The engine's property: no sequence of staff changes by one administrator
// (creating users, resetting credentials, granting roles) gives two people
// who may jointly approve a decision that needs two: every approver that
// the administrator created, reset or granted, and the administrator
// themselves, counts as one person. The property: whatever an admin does to
// other users' access (create, reset, grant, and also remove a privileged
// role, suspend, disable, reset a user stripped a moment ago), every user
// so touched is one person with the admin and with each other.
func TestControlsPropertyOneAdminIsOnePerson(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	ctrl := m.env.App.Controls
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0x19))
	for round := 0; round < 25; round++ {
		admin := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleAdmin, emi.RoleCompliance}})
		adminID := staffOf(admin)
		var controlled, independent []string
		controlled = append(controlled, adminID)
		steps := 1 + rnd.IntN(5)
		for i := 0; i < steps; i++ {
			switch rnd.IntN(8) {
			case 0: // the admin creates a user
				controlled = append(controlled, staffOf(newStaffUser(t, m, admin, emi.RoleCustomerService)))
			case 1: // the admin resets an independent user's credentials
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleCustomerService))
				out, err := m.env.App.Staff.ResetCredentials(admin, u)
				approved(t, m, newApprover(t, m), out, err)
				controlled = append(controlled, u)
			case 2: // the admin grants a role to an independent user
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleAuditor))
				out, err := m.env.App.Staff.SetRoles(admin, u, []emi.Role{emi.RoleCompliance})
				approved(t, m, newApprover(t, m), out, err)
				controlled = append(controlled, u)
			case 3: // someone else is set up by the system
				independent = append(independent, staffOf(newStaffUser(t, m, sys(), emi.RoleCompliance)))
			case 4: // the admin removes a privileged role (a second admin approves)
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleCompliance, emi.RoleAuditor))
				out, err := m.env.App.Staff.SetRoles(admin, u, []emi.Role{emi.RoleAuditor})
				approved(t, m, newApprover(t, m), out, err)
				controlled = append(controlled, u)
			case 5: // the admin suspends an independent user (one step)
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleCustomerService))
				if err := m.env.App.Staff.Suspend(admin, u, "incident drill"); err != nil {
					t.Fatal(err)
				}
				controlled = append(controlled, u)
			case 6: // the admin disables a privileged user (a second admin approves)
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleUnderwriter))
				out, err := m.env.App.Staff.Disable(admin, u)
				approved(t, m, newApprover(t, m), out, err)
				controlled = append(controlled, u)
			case 7: // the admin resets a user stripped to auditor a moment ago
				u := staffOf(newStaffUser(t, m, sys(), emi.RoleCompliance))
				if _, err := m.env.App.Staff.SetRoles(sys(), u, []emi.Role{emi.RoleAuditor}); err != nil {
					t.Fatal(err)
				}
				out, err := m.env.App.Staff.ResetCredentials(admin, u)
				approved(t, m, newApprover(t, m), out, err)
				controlled = append(controlled, u)
			}
		}
		// Any two of the admin's set are one person: for every control of
		// the decision table that takes two people, q approving what p
		// proposed is refused, even with every role (the permission
		// check passes; only the people rule stands between them).
		for _, p := range controlled {
			for _, q := range controlled {
				if err := ctrl.Distinct(context.Background(), q, p); err == nil {
					t.Fatalf("round %d (seed %d): %s and %s, both set up by admin %s, counted as two people", round, seed, p, q, adminID)
				}
				pol := staff.Policies[rnd.IntN(len(staff.Policies))]
				if pol.People < 2 {
					continue
				}
				approver := as(emi.StaffUser{ID: q, Roles: emi.Roles()})
				if err := ctrl.Approve(approver, pol.Control, p); !errors.Is(err, emi.ErrFourEyes) {
					t.Fatalf("round %d (seed %d): %s approved %s proposed by %s (both set up by admin %s): %v", round, seed, q, pol.Control, p, adminID, err)
				}
			}
		}
		// A user set up by the system is distinct from each of them.
		for _, ind := range independent {
			for _, p := range controlled {
				if err := ctrl.Distinct(context.Background(), ind, p); err != nil {
					t.Fatalf("round %d (seed %d): independent %s refused beside %s: %v", round, seed, ind, p, err)
				}
			}
		}
	}
}

// Every approval needs the policy's approve permission, checked by the
// engine itself, and a nil engine refuses rather than approves.
func TestControlsPermissionsAndFailClosed(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	for _, pol := range staff.Policies {
		if pol.People < 1 || pol.Propose == "" || pol.Approve == "" || pol.BoundTo == "" {
			t.Errorf("policy %s is incomplete: %+v", pol.Control, pol)
		}
		err := m.env.App.Controls.Approve(m.auditor, pol.Control, kernel.NewToken())
		wantErr(t, string(pol.Control)+" by an auditor", err, emi.ErrForbidden)
	}
	var nilEngine *staff.Controls
	if err := nilEngine.Approve(m.comp, staff.ControlAdjustment, kernel.NewToken()); err == nil {
		t.Fatal("a nil engine approved")
	}
	if err := m.env.App.Controls.Approve(m.comp, staff.ControlAdjustment, staffOf(m.comp)); err == nil {
		t.Fatal("the proposer approved their own request")
	}
}

// Each refusal of the people rule says its real reason to the person
// refused (the public sentence the back office shows): they took part
// already, they set up someone who took part, someone who took part set
// them up, or one administrator set up both. Before, two flows told a user
// "you asked for this" when the engine refused them for a link.
func TestControlsRefusalSaysTheRealReason(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	ctrl := m.env.App.Controls
	admin := newApprover(t, m)
	created := newStaffUser(t, m, admin, emi.RoleCompliance)
	sibling := newStaffUser(t, m, admin, emi.RoleCompliance)
	stranger := newStaffUser(t, m, sys(), emi.RoleCompliance)
	for _, c := range []struct {
		name, me, proposer, want string
	}{
		{"took part", staffOf(stranger), staffOf(stranger), staff.RefusedTookPart},
		{"set them up", staffOf(admin), staffOf(created), staff.RefusedYouSetThemUp},
		{"set up by them", staffOf(created), staffOf(admin), staff.RefusedTheySetYouUp},
		{"same administrator", staffOf(sibling), staffOf(created), staff.RefusedSameAdministrator},
	} {
		err := ctrl.Distinct(context.Background(), c.me, c.proposer)
		wantErr(t, c.name, err, emi.ErrFourEyes)
		if got := emi.AsError(err).Public; got != c.want {
			t.Errorf("%s: the refusal reads %q, want %q", c.name, got, c.want)
		}
	}
	if err := ctrl.Distinct(context.Background(), staffOf(stranger), staffOf(created)); err != nil {
		t.Errorf("two people set up by different administrators were refused: %v", err)
	}
}
