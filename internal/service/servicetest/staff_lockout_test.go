package servicetest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
)

// The insider attacks: one administrator alone locks the others out, or
// takes over a colleague's login. Before, removing a role, disabling and
// resetting an auditor were one step each: the first assertions of each
// test below failed on that code (the removal applied at once; the reset of
// a stripped colleague showed the whole password).

// activeAdmins counts the administrators who can act: enabled and not
// suspended (the service's view, through List).
func activeAdmins(t *testing.T, m *moneyApp) []string {
	t.Helper()
	list, err := m.env.App.Staff.List(sys())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range list {
		if u.Has(emi.RoleAdmin) && !u.Disabled && !u.Suspended {
			out = append(out, u.ID)
		}
	}
	return out
}

func rolesOf(t *testing.T, m *moneyApp, id string) []emi.Role {
	t.Helper()
	u, err := m.env.App.Staff.Get(sys(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u.Roles
}

func TestLockoutOneAdminCannotTakeTheOthersOut(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin) // the insider
	b := newStaffUser(t, m, sys(), emi.RoleAdmin)
	c := newStaffUser(t, m, sys(), emi.RoleAdmin)

	// Stripping a colleague's roles and disabling one are proposals: the
	// colleague keeps every role and their access meanwhile.
	strip, err := st.SetRoles(a, staffOf(b), []emi.Role{emi.RoleAuditor})
	if err != nil || strip.Change.Status != emi.StaffChangePending {
		t.Fatalf("one admin stripped a colleague in one step: %+v %v", strip.Change, err)
	}
	if got := rolesOf(t, m, staffOf(b)); !slices.Equal(got, []emi.Role{emi.RoleAdmin}) {
		t.Fatalf("the colleague's roles changed before a second approval: %v", got)
	}
	dis, err := st.Disable(a, staffOf(c))
	if err != nil || dis.Change.Status != emi.StaffChangePending {
		t.Fatalf("one admin disabled a colleague in one step: %+v %v", dis.Change, err)
	}
	if u, _ := st.Get(sys(), staffOf(c)); u.Disabled {
		t.Fatal("the colleague is disabled before a second approval")
	}
	_, err = st.ApproveChange(a, dis.Change.ID)
	wantErr(t, "the insider approves their own disable of a colleague", err, emi.ErrFourEyes)
	// The colleague concerned cannot approve their own removal either.
	_, err = st.ApproveChange(b, strip.Change.ID)
	wantErr(t, "the colleague approves their own stripping", err, emi.ErrFourEyes)
	if err := st.RejectChange(a, strip.Change.ID, "withdrawn"); err != nil {
		t.Fatal(err)
	}
	if err := st.RejectChange(a, dis.Change.ID, "withdrawn"); err != nil {
		t.Fatal(err)
	}

	// The one-step suspension never leaves fewer than two administrators
	// who can act: the insider suspends every other in turn and is
	// refused at the floor, whatever other administrators the
	// environment holds.
	others := activeAdmins(t, m)
	if err := st.Suspend(a, staffOf(b), "incident drill"); err != nil {
		t.Fatal(err)
	}
	suspended := 1
	for _, id := range others {
		if id == staffOf(a) || id == staffOf(b) {
			continue
		}
		err := st.Suspend(a, id, "incident drill")
		if len(activeAdmins(t, m)) < staff.MinActiveAdministrators {
			t.Fatalf("a suspension left %d active administrators", len(activeAdmins(t, m)))
		}
		if err != nil {
			wantErr(t, "a suspension at the floor", err, emi.ErrLastAdministrators)
			continue
		}
		suspended++
	}
	if n := len(activeAdmins(t, m)); n != staff.MinActiveAdministrators || suspended != len(others)-staff.MinActiveAdministrators {
		t.Fatalf("after suspending every other administrator: %d active, %d suspended of %d", n, suspended, len(others)-1)
	}

	// A suspended colleague cannot sign in; every other administrator was
	// told at once.
	if _, err := st.SignIn(context.Background(), emailOf(t, m, staffOf(b)), "Correct-Horse-Battery-9"); !errors.Is(err, emi.ErrSignInFailed) {
		t.Fatalf("a suspended administrator signs in: %v", err)
	}
	for _, id := range activeAdmins(t, m) {
		if id == staffOf(a) {
			continue
		}
		items, err := m.env.App.Inbox.Mine(as(emi.StaffUser{ID: id, Roles: []emi.Role{emi.RoleAdmin}}), false, 50)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, it := range items {
			if it.Kind == "suspension" && it.By == staffOf(a) {
				n++
			}
		}
		if n != suspended {
			t.Fatalf("administrator %s was told of %d suspensions, want %d", id, n, suspended)
		}
	}

	// Unconfirmed, the suspension lapses after a day, and the insider
	// cannot simply take it again: another administrator must.
	m.env.Clock.Advance(emi.SuspensionTTL + time.Minute)
	if _, err := st.SignIn(context.Background(), emailOf(t, m, staffOf(b)), "Correct-Horse-Battery-9"); err != nil {
		t.Fatalf("a lapsed suspension still stops the sign-in: %v", err)
	}
	wantErr(t, "the insider suspends again after theirs lapsed", st.Suspend(a, staffOf(b), "again"), emi.ErrFourEyes)
	if err := st.Suspend(c, staffOf(b), "a second person's incident"); err != nil {
		t.Fatalf("another administrator suspends: %v", err)
	}
	// The suspender cannot confirm their own suspension, nor can the user.
	wantErr(t, "the suspender confirms", st.ConfirmSuspension(c, staffOf(b)), emi.ErrFourEyes)
	wantErr(t, "the suspended user confirms", st.ConfirmSuspension(b, staffOf(b)), emi.ErrFourEyes)
	// A confirmed suspension outlasts the day; lifting it ends it.
	if err := st.ConfirmSuspension(newApprover(t, m), staffOf(b)); err != nil {
		t.Fatal(err)
	}
	m.env.Clock.Advance(emi.SuspensionTTL + time.Minute)
	if u, _ := st.Get(sys(), staffOf(b)); !u.Suspended {
		t.Fatal("a confirmed suspension lapsed")
	}
	wantErr(t, "the suspended user lifts their own suspension", st.LiftSuspension(b, staffOf(b)), emi.ErrForbidden)
	if err := st.LiftSuspension(a, staffOf(b)); err != nil {
		t.Fatal(err)
	}
	if u, _ := st.Get(sys(), staffOf(b)); u.Suspended || u.SuspendedAt != nil {
		t.Fatal("a lifted suspension is still recorded")
	}
	wantErr(t, "lifting twice", st.LiftSuspension(a, staffOf(b)), emi.ErrStaffNotSuspended)
}

// Two administrators suspending each other at once, with three who can
// act: both transactions count the administrators with every row locked,
// so the second sees the first and one of them is refused.
func TestLockoutRacingSuspensionsKeepTwoAdministrators(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	admins := []context.Context{newStaffUser(t, m, sys(), emi.RoleAdmin), newStaffUser(t, m, sys(), emi.RoleAdmin),
		newStaffUser(t, m, sys(), emi.RoleAdmin)}
	// Every other administrator of the environment is suspended first, so
	// exactly the three can act.
	for _, id := range activeAdmins(t, m) {
		if id != staffOf(admins[0]) && id != staffOf(admins[1]) && id != staffOf(admins[2]) {
			if err := st.Suspend(admins[0], id, "not part of this test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := 0; round < 5; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = st.Suspend(admins[i], staffOf(admins[1-i]), "race")
			}()
		}
		wg.Wait()
		if n := len(activeAdmins(t, m)); n < staff.MinActiveAdministrators {
			t.Fatalf("round %d: racing suspensions left %d active administrators (%v)", round, n, errs)
		}
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: want exactly one suspension refused, got %v", round, errs)
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, emi.ErrLastAdministrators) {
				t.Fatalf("round %d: suspension %d: %v", round, i, err)
			}
			if err == nil {
				if err := st.LiftSuspension(admins[2], staffOf(admins[1-i])); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestTakeoverOneAdminCannotStripThenResetAColleague(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin) // the insider
	b := newStaffUser(t, m, sys(), emi.RoleAdmin) // the colleague to take over
	c := newStaffUser(t, m, sys(), emi.RoleAdmin) // an honest second administrator
	bEmail := emailOf(t, m, staffOf(b))

	// Step one, stripping B to auditor, takes a second administrator.
	strip, err := st.SetRoles(a, staffOf(b), []emi.Role{emi.RoleAuditor})
	if err != nil || strip.Change.Status != emi.StaffChangePending {
		t.Fatalf("the insider stripped a colleague in one step: %+v %v", strip.Change, err)
	}
	// Say the honest colleague approves it (an incident, a reorganisation).
	approved(t, m, c, strip, nil)
	if got := rolesOf(t, m, staffOf(b)); !slices.Equal(got, []emi.Role{emi.RoleAuditor}) {
		t.Fatalf("roles after the approved removal: %v", got)
	}

	// Step two, resetting B (an auditor now, an administrator ten minutes
	// ago), still comes in two halves: the insider never holds B's whole
	// temporary password.
	m.env.Clock.Advance(10 * time.Minute)
	reset, err := st.ResetCredentials(a, staffOf(b))
	if err != nil || reset.Change.Status != emi.StaffChangePending {
		t.Fatalf("the insider reset a stripped colleague in one step: %+v %v", reset.Change, err)
	}
	if _, err := st.SignIn(context.Background(), bEmail, reset.Secret); err == nil {
		t.Fatal("the insider signed in as the colleague with their half")
	}
	if _, err := st.SignIn(context.Background(), bEmail, "Correct-Horse-Battery-9"); err != nil {
		t.Fatalf("B's own password while the reset waits: %v", err)
	}
	// Neither the insider nor the administrator who approved the removal
	// (now one person with B) approves the reset.
	_, err = st.ApproveChange(a, reset.Change.ID)
	wantErr(t, "the insider approves their own reset", err, emi.ErrFourEyes)
	_, err = st.ApproveChange(c, reset.Change.ID)
	wantErr(t, "the approver of the removal approves the reset", err, emi.ErrFourEyes)
	if err := st.RejectChange(c, reset.Change.ID, "not asked for"); err != nil {
		t.Fatal(err)
	}

	// The insider who stripped B counts as one person with B for 30 days,
	// as for a grant.
	wantErr(t, "the insider beside the user they stripped", m.env.App.Controls.Distinct(context.Background(), staffOf(a), staffOf(b)), emi.ErrFourEyes)

	// 30 days on, B is an ordinary auditor again: a reset is one step.
	m.env.Clock.Advance(staff.StaffLinkWindow)
	if out, err := st.ResetCredentials(a, staffOf(b)); err != nil || out.Change.Status != emi.StaffChangeApplied {
		t.Fatalf("resetting a long-time auditor: %+v %v", out.Change, err)
	}
}

// A chain through several users: the insider sets up a puppet
// administrator (the grant approved by an honest colleague) and has the
// puppet approve the removal and the disable of colleagues. The puppet is
// one person with the insider, so every such approval is refused.
func TestTakeoverChainThroughAPuppetAdministrator(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	b := newStaffUser(t, m, sys(), emi.RoleAdmin)
	c := newStaffUser(t, m, sys(), emi.RoleAdmin)
	d := newStaffUser(t, m, sys(), emi.RoleCompliance)
	// The puppet: an auditor the insider creates alone (whole password),
	// then promoted to admin through the honest colleague.
	p := newStaffUser(t, m, a, emi.RoleAuditor)
	grant, err := st.SetRoles(a, staffOf(p), []emi.Role{emi.RoleAdmin})
	approved(t, m, c, grant, err)
	puppet := as(emi.StaffUser{ID: staffOf(p), Roles: []emi.Role{emi.RoleAdmin}})

	strip, err := st.SetRoles(a, staffOf(b), []emi.Role{emi.RoleAuditor})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ApproveChange(puppet, strip.Change.ID)
	wantErr(t, "the puppet approves the insider's removal of a colleague", err, emi.ErrFourEyes)
	dis, err := st.Disable(a, staffOf(d))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ApproveChange(puppet, dis.Change.ID)
	wantErr(t, "the puppet approves the insider's disable of a colleague", err, emi.ErrFourEyes)
	// The puppet proposing and the insider approving is the same refusal.
	strip2, err := st.SetRoles(puppet, staffOf(c), []emi.Role{emi.RoleAuditor})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ApproveChange(a, strip2.Change.ID)
	wantErr(t, "the insider approves the puppet's removal of a colleague", err, emi.ErrFourEyes)
	// And the puppet cannot confirm the insider's suspension of a
	// colleague: it lapses after a day.
	if err := st.Suspend(a, staffOf(b), "incident"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "the puppet confirms the insider's suspension", st.ConfirmSuspension(puppet, staffOf(b)), emi.ErrFourEyes)
	for _, id := range []string{staffOf(b), staffOf(c)} {
		if got := rolesOf(t, m, id); !slices.Equal(got, []emi.Role{emi.RoleAdmin}) {
			t.Fatalf("colleague %s lost roles: %v", id, got)
		}
	}
	if u, _ := st.Get(sys(), staffOf(d)); u.Disabled {
		t.Fatal("the colleague was disabled")
	}
}

// The suspension's error paths: each refusal changes nothing.
func TestSuspensionRefusals(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	b := newStaffUser(t, m, sys(), emi.RoleCompliance)
	err := st.Suspend(a, staffOf(b), " x ")
	wantErr(t, "a suspension without a reason", err, emi.ErrStaffValidation)
	wantErr(t, "suspending oneself", st.Suspend(a, staffOf(a), "tired"), emi.ErrForbidden)
	wantErr(t, "suspending an unknown user", st.Suspend(a, "01a22456-cb43-7d7c-a4a7-4c0738a21d4f", "incident"), emi.ErrStaffNotFound)
	wantErr(t, "confirming no suspension", st.ConfirmSuspension(newApprover(t, m), staffOf(b)), emi.ErrStaffNotSuspended)
	wantErr(t, "lifting no suspension", st.LiftSuspension(a, staffOf(b)), emi.ErrStaffNotSuspended)
	if u, _ := st.Get(sys(), staffOf(b)); u.Suspended || u.SuspendedAt != nil {
		t.Fatal("a refused suspension was recorded")
	}
	// A lapsed suspension cannot be confirmed any more.
	if err := st.Suspend(a, staffOf(b), "incident"); err != nil {
		t.Fatal(err)
	}
	m.env.Clock.Advance(emi.SuspensionTTL + time.Minute)
	wantErr(t, "confirming a lapsed suspension", st.ConfirmSuspension(newApprover(t, m), staffOf(b)), emi.ErrStaffNotSuspended)
	// A confirmed one cannot be confirmed twice.
	c := newApprover(t, m)
	if err := st.Suspend(c, staffOf(b), "incident again"); err != nil {
		t.Fatal(err)
	}
	if err := st.ConfirmSuspension(newApprover(t, m), staffOf(b)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "confirming twice", st.ConfirmSuspension(newApprover(t, m), staffOf(b)), emi.ErrStaffNotSuspended)
}
