package servicetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// One administrator minting money alone, as an insider administrator tries
// it through the services: create two money users (or reset two), sign in
// as them and approve a 1,000,000.00 EUR credit with both. On the code
// before the second-administrator rule, Create by an admin with a password
// of their choosing took effect at once (and the reset returned the whole
// working password), so the first assertions below failed.
func TestC8OneAdminAloneCannotSetUpMoneyUsers(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin) // the insider
	e := newStaffUser(t, m, sys(), emi.RoleAdmin) // an independent colleague
	pending := func(out emi.StaffOutcome, err error) emi.StaffOutcome {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if out.Change.Status != emi.StaffChangePending || out.User.ID != "" && out.Change.Kind == emi.StaffChangeCreate {
			t.Fatalf("a privileged change took effect at once: %+v", out)
		}
		return out
	}
	userExists := func(email string) bool {
		var n int
		if err := m.env.App.DB.Get(&n, `SELECT count(*) FROM staff_users WHERE lower(email) = lower($1)`, email); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	// The admin cannot choose the password any more.
	_, err := st.Create(a, emi.StaffCreate{Email: "b@c8.test", Name: "B", Roles: []emi.Role{emi.RoleCustomerService},
		Password: "Correct-Horse-Battery-9"})
	wantErr(t, "an admin choosing a money user's password", err, emi.ErrStaffValidation)

	// Alone, the admin's two money users stay proposals.
	b := pending(m.create(t, a, "b@c8.test", emi.RoleCustomerService))
	c := pending(m.create(t, a, "c@c8.test", emi.RoleCompliance))
	if userExists("b@c8.test") || userExists("c@c8.test") {
		t.Fatal("a proposed user exists")
	}
	if len(b.Secret) == 0 || len(b.Secret) > 13 {
		t.Fatalf("the proposer sees %d characters; want only the first half of the temporary password", len(b.Secret))
	}
	_, err = st.ApproveChange(a, b.Change.ID)
	wantErr(t, "the proposer approves their own proposal", err, emi.ErrFourEyes)

	// An admin the proposer set up (created, here with an independent
	// approver) is the same person for 30 days.
	d := approved(t, m, e, pending(m.create(t, a, "d@c8.test", emi.RoleAdmin)), nil)
	_, err = st.ApproveChange(as(d.User), c.Change.ID)
	wantErr(t, "an admin the proposer created approves", err, emi.ErrFourEyes)
	if userExists("c@c8.test") {
		t.Fatal("C exists after refused approvals")
	}

	// Resetting an existing money user's credentials alone stays a
	// proposal too: the user keeps their password and TOTP meanwhile.
	x := newStaffUser(t, m, sys(), emi.RoleCustomerService)
	r := pending(st.ResetCredentials(a, staffOf(x)))
	_, err = st.ApproveChange(a, r.Change.ID)
	wantErr(t, "the proposer approves their own reset", err, emi.ErrFourEyes)
	if _, err := st.SignIn(context.Background(), emailOf(t, m, staffOf(x)), "Correct-Horse-Battery-9"); err != nil {
		t.Fatalf("X's own password after a pending reset: %v", err)
	}
	// The user concerned cannot approve a change to themselves: an admin
	// whose reset another admin proposed.
	re := pending(st.ResetCredentials(a, staffOf(e)))
	_, err = st.ApproveChange(e, re.Change.ID)
	wantErr(t, "an admin approves the reset of their own credentials", err, emi.ErrFourEyes)
	// ... nor reject it, again and again.
	wantErr(t, "an admin rejects the reset of their own credentials", st.RejectChange(e, re.Change.ID, "no"), emi.ErrForbidden)
	if err := st.RejectChange(a, re.Change.ID, "withdrawn"); err != nil {
		t.Fatalf("the proposer withdraws: %v", err)
	}
	_, err = st.ApproveChange(newApprover(t, m), re.Change.ID)
	wantErr(t, "approving a withdrawn change", err, emi.ErrStaffChangeDecided)

	// Granting a money role alone stays a proposal, and so does removing it.
	aud := newStaffUser(t, m, sys(), emi.RoleAuditor)
	grant := pending(st.SetRoles(a, staffOf(aud), []emi.Role{emi.RoleCompliance}))
	// The grant reissues the credentials in two halves: an admin who set
	// up an auditor alone (and so may hold that auditor's password) gains
	// nothing by having it promoted.
	granted := approved(t, m, newApprover(t, m), grant, nil)
	if grant.Secret == "" || granted.Secret == "" {
		t.Fatalf("a privileged grant issued no split password: %q %q", grant.Secret, granted.Secret)
	}
	audEmail := emailOf(t, m, staffOf(aud))
	if _, err := st.SignIn(context.Background(), audEmail, "Correct-Horse-Battery-9"); err == nil {
		t.Fatal("the promoted user's old password still signs in")
	}
	if res, err := st.SignIn(context.Background(), audEmail, grant.Secret+granted.Secret); err != nil || !res.MustChangePassword || !res.NeedsEnrollment {
		t.Fatalf("the promoted user's new temporary password: %+v %v", res, err)
	}
	y := newStaffUser(t, m, sys(), emi.RoleCustomerService)
	removal := pending(st.SetRoles(a, staffOf(y), []emi.Role{emi.RoleAuditor}))
	if removal.Secret != "" {
		t.Fatal("removing a role issued credentials")
	}
	if out := approved(t, m, newApprover(t, m), removal, nil); !slices.Equal(out.User.Roles, []emi.Role{emi.RoleAuditor}) {
		t.Fatalf("removing a money role: %+v", out)
	}

	// With an independent second admin the users exist, on a temporary
	// password of which each admin saw one half: neither half signs in.
	bu := approved(t, m, e, b, nil)
	cu := approved(t, m, e, c, nil)
	for _, half := range []string{b.Secret, bu.Secret} {
		if _, err := st.SignIn(context.Background(), "b@c8.test", half); err == nil {
			t.Fatal("half of the temporary password signed in")
		}
	}
	res, err := st.SignIn(context.Background(), "b@c8.test", b.Secret+bu.Secret)
	if err != nil || !res.MustChangePassword || !res.NeedsEnrollment {
		t.Fatalf("the whole temporary password: %+v %v", res, err)
	}
	// And the two users, set up by the same admins, are one person: the
	// credit of 1,000,000.00 EUR is refused.
	acc := m.open(t, "account_eur", "")
	adj, err := m.env.App.Adjustments.Request(as(bu.User), emi.AdjustmentRequest{Account: acc.Token, Currency: "EUR",
		Direction: emi.AdjustmentCredit, Amount: 100_000_000, Reason: "goodwill"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.env.App.Adjustments.Decide(as(cu.User), adj.Token, true, "")
	wantErr(t, "C approves B's credit", err, emi.ErrFourEyes)
	if m.available(t, acc.Balances[0].Token) != 0 {
		t.Fatal("money was credited")
	}
}

// A temporary password expires, and a user on one must choose another
// password that differs from it.
func TestTemporaryPasswordExpiresAndMustChange(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	out, err := st.Create(a, emi.StaffCreate{Email: "aud@c8.test", Name: "Aud", Roles: []emi.Role{emi.RoleAuditor}})
	if err != nil || out.Secret == "" {
		t.Fatalf("create: %+v %v", out, err)
	}
	self := as(out.User)
	err = st.ChangePassword(self, out.User.ID, out.Secret, out.Secret)
	wantErr(t, "keeping the temporary password", err, emi.ErrPasswordPolicy)
	m.env.Clock.Advance(emi.TemporaryPasswordTTL + 1)
	_, err = st.SignIn(context.Background(), "aud@c8.test", out.Secret)
	wantErr(t, "an expired temporary password", err, emi.ErrSignInFailed)
}

// create has by create a staff user with roles, without a password.
func (m *moneyApp) create(t *testing.T, by context.Context, email string, roles ...emi.Role) (emi.StaffOutcome, error) {
	t.Helper()
	return m.env.App.Staff.Create(by, emi.StaffCreate{Email: email, Name: email, Roles: roles})
}

func emailOf(t *testing.T, m *moneyApp, id string) string {
	t.Helper()
	var email string
	if err := m.env.App.DB.Get(&email, `SELECT email FROM staff_users WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return email
}

// Two independent administrators approve one privileged change at the same
// moment: it takes effect once, the approver's half is shown once, and the
// other approval is refused as decided.
func TestStaffChangeApprovedOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	proposer := newStaffUser(t, m, sys(), emi.RoleAdmin)
	for round := 0; round < 5; round++ {
		email := fmt.Sprintf("race-%d@c8.test", round)
		out, err := m.create(t, proposer, email, emi.RoleCustomerService)
		if err != nil || out.Change.Status != emi.StaffChangePending {
			t.Fatalf("propose: %+v %v", out.Change, err)
		}
		approvers := []context.Context{newApprover(t, m), newApprover(t, m), newApprover(t, m)}
		results := make([]error, len(approvers))
		secrets := make([]string, len(approvers))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, a := range approvers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				done, err := st.ApproveChange(a, out.Change.ID)
				results[i], secrets[i] = err, done.Secret
			}()
		}
		close(start)
		wg.Wait()
		ok, shown := 0, 0
		for i, err := range results {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, emi.ErrStaffChangeDecided):
				t.Fatalf("round %d: approval %d: %v", round, i, err)
			}
			if secrets[i] != "" {
				shown++
			}
		}
		var users int
		if err := m.env.App.DB.Get(&users, `SELECT count(*) FROM staff_users WHERE email = $1`, email); err != nil {
			t.Fatal(err)
		}
		if ok != 1 || shown != 1 || users != 1 {
			t.Fatalf("round %d: %d approvals took effect, the half was shown %d times, %d users", round, ok, shown, users)
		}
	}
}
