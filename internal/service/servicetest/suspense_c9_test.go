package servicetest_test

import (
	"context"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// Suspense money used to be assigned to any account by one person, unlike a
// manual adjustment. Before the decision engine covered it, one
// customer-service user called AssignSuspense and the 5,000.00 EUR was on
// the account they chose at once. Now the same person's request moves
// nothing, they cannot approve it themselves, and the item stays open on
// the suspense account. (The portal's TestC9SuspenseAssignedByOnePerson
// performs the same sequence over the unchanged route and failed on the
// code before this change.)
func TestC9OnePersonCannotAssignSuspense(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	mine := m.open(t, "account_eur", "")
	bal := mine.Balances[0].Token
	item := m.park(t, 500_000)

	a, err := inc.RequestSuspenseAssignment(m.cs, item, mine.Token, "customer called")
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 500_000 {
		t.Fatal("one person's request moved the money")
	}
	_, _, err = inc.DecideSuspenseAssignment(m.cs, a.Token, true, "")
	wantErr(t, "the requester approves their own assignment", err, emi.ErrFourEyes)
	if m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 500_000 {
		t.Fatal("the requester's own approval moved the money")
	}
	it, err := m.env.App.IncomingStore.SuspenseItem(context.Background(), item, false)
	if err != nil || it.Status != emi.SuspenseOpen {
		t.Fatalf("item %s %v", it.Status, err)
	}
	// The database refuses it too, whatever the code above it does.
	if _, err := m.env.App.DB.Exec(`UPDATE suspense_assignment_requests SET status = 'approved', decided_by = requested_by,
		decided_at = now(), transfer = (SELECT token FROM transfers LIMIT 1) WHERE token = $1`, a.Token); err == nil {
		t.Fatal("the database let the requester approve")
	}
	// A second person approves: then, and only then, the money moves.
	if _, tr, err := inc.DecideSuspenseAssignment(m.comp, a.Token, true, ""); err != nil || tr == nil {
		t.Fatalf("second person: %v", err)
	}
	if m.available(t, bal) != 500_000 {
		t.Fatal("not credited on approval")
	}
}

// The insider's ways round the second person: two users set up by one
// administrator, an administrator with a money role and a user whose
// credentials they reset; each counts as one person (Controls), as for
// adjustments.
func TestC9InsidersAreOnePerson(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	acc := m.open(t, "account_eur", "")
	bal := acc.Balances[0].Token
	admin := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleAdmin}})

	// Two users created by one admin.
	b := newStaffUser(t, m, admin, emi.RoleCustomerService)
	c := newStaffUser(t, m, admin, emi.RoleCompliance)
	a, err := inc.RequestSuspenseAssignment(b, m.park(t, 100_000), acc.Token, "found the customer")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = inc.DecideSuspenseAssignment(c, a.Token, true, "")
	wantErr(t, "two users of one admin", err, emi.ErrFourEyes)

	// An admin who also holds a money role, and a user whose credentials
	// they reset.
	both := newStaffUser(t, m, sys(), emi.RoleAdmin, emi.RoleCompliance)
	d := newStaffUser(t, m, sys(), emi.RoleCustomerService)
	out, err := m.env.App.Staff.ResetCredentials(both, staffOf(d))
	approved(t, m, newApprover(t, m), out, err)
	a2, err := inc.RequestSuspenseAssignment(d, m.park(t, 100_000), acc.Token, "found the customer")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = inc.DecideSuspenseAssignment(both, a2.Token, true, "")
	wantErr(t, "an admin approves the request of a user they reset", err, emi.ErrFourEyes)
	if m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 200_000 {
		t.Fatal("an insider moved the money")
	}
	if got := auditActions(t, m, a.Item); len(got) != 2 || got[1] != "suspense.assign_requested" {
		t.Fatalf("a refused approval left audit rows %v", got)
	}

	// A colleague set up by the system approves; thirty days on, the
	// admin's link has lapsed.
	if _, _, err := inc.DecideSuspenseAssignment(newStaffUser(t, m, sys(), emi.RoleCompliance), a.Token, true, ""); err != nil {
		t.Fatalf("an unrelated colleague: %v", err)
	}
	m.env.Clock.Advance(staff.StaffLinkWindow + time.Hour)
	if _, _, err := inc.DecideSuspenseAssignment(both, a2.Token, true, ""); err != nil {
		t.Fatalf("after the link window: %v", err)
	}
	if m.available(t, bal) != 200_000 {
		t.Fatalf("available %d", m.available(t, bal))
	}
}

// An approval re-runs the request's checks under the locks: a target
// blocked or terminated since the request is refused (the request stays
// pending), a rejected or withdrawn request is never approved, and the
// requester withdraws while others reject.
func TestC9ApprovalRechecksAndDecidedOnce(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	acc := m.open(t, "account_eur", "")
	bal := acc.Balances[0].Token

	// Blocked after the request: refused, pending, nothing moves; once
	// unblocked, approved.
	item := m.park(t, 700)
	a, err := inc.RequestSuspenseAssignment(m.cs, item, acc.Token, "found the customer")
	if err != nil {
		t.Fatal(err)
	}
	m.setStatus(t, acc.Token, emi.AccountBlocked)
	_, _, err = inc.DecideSuspenseAssignment(m.comp, a.Token, true, "")
	wantErr(t, "approval after the target was blocked", err, emi.ErrTransferAccountUnusable)
	if m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 700 {
		t.Fatal("money moved to a blocked account")
	}
	if st := assignmentStatus(t, m, a.Token); st != emi.AssignmentPending {
		t.Fatalf("status %s", st)
	}
	m.setStatus(t, acc.Token, emi.AccountActive)
	if _, _, err := inc.DecideSuspenseAssignment(m.comp, a.Token, true, ""); err != nil {
		t.Fatalf("approve once unblocked: %v", err)
	}

	// Terminated after the request: refused; then rejected by another.
	empty := m.open(t, "account_eur", "")
	item = m.park(t, 300)
	a, err = inc.RequestSuspenseAssignment(m.cs, item, *empty.Balances[0].IBAN, "found the customer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Accounts.Terminate(m.partner(), empty.Token); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	_, _, err = inc.DecideSuspenseAssignment(m.comp, a.Token, true, "")
	wantErr(t, "approval after the target was terminated", err, emi.ErrTransferAccountUnusable)
	rej, _, err := inc.DecideSuspenseAssignment(m.comp, a.Token, false, "account is closed")
	if err != nil || rej.Status != emi.AssignmentRejected || rej.DecisionNote != "account is closed" {
		t.Fatalf("reject: %+v %v", rej, err)
	}
	// Reject then approve: the rejected request stays rejected.
	_, _, err = inc.DecideSuspenseAssignment(newStaffUser(t, m, sys(), emi.RoleCompliance), a.Token, true, "")
	wantErr(t, "approve a rejected request", err, emi.ErrSuspenseAssignmentDecided)
	_, _, err = inc.DecideSuspenseAssignment(m.cs, a.Token, false, "again")
	wantErr(t, "reject twice", err, emi.ErrSuspenseAssignmentDecided)

	// The item is open again: a new request, withdrawn by its requester;
	// then the item is returned.
	a, err = inc.RequestSuspenseAssignment(m.comp, item, acc.Token, "maybe this one")
	if err != nil {
		t.Fatal(err)
	}
	wd, _, err := inc.DecideSuspenseAssignment(m.comp, a.Token, false, "wrong customer after all")
	if err != nil || wd.Status != emi.AssignmentWithdrawn {
		t.Fatalf("withdraw: %+v %v", wd, err)
	}
	_, _, err = inc.DecideSuspenseAssignment(m.cs, a.Token, true, "")
	wantErr(t, "approve a withdrawn request", err, emi.ErrSuspenseAssignmentDecided)
	if err := inc.ReturnSuspense(m.cs, item, "sender recalled it"); err != nil {
		t.Fatalf("return after the requests were decided: %v", err)
	}
	if got := auditActions(t, m, item); len(got) != 6 || got[1] != "suspense.assign_requested" || got[2] != "suspense.assign_rejected" ||
		got[3] != "suspense.assign_requested" || got[4] != "suspense.assign_withdrawn" || got[5] != "suspense.return" {
		t.Fatalf("audit %v", got)
	}
	if m.available(t, bal) != 700 || m.position(t, emi.LedgerSuspense, "EUR") != 0 {
		t.Fatalf("available %d suspense %d", m.available(t, bal), m.position(t, emi.LedgerSuspense, "EUR"))
	}
	// The policy row is in the one table, with two people.
	if pol := staff.PolicyOf(staff.ControlSuspenseAssign); pol.People != 2 || pol.Approve != emi.PermManageMoney {
		t.Fatalf("policy %+v", pol)
	}
}

func assignmentStatus(t *testing.T, m *moneyApp, token string) string {
	t.Helper()
	var s string
	if err := m.env.App.DB.Get(&s, `SELECT status FROM control_requests WHERE id = $1`, token); err != nil {
		t.Fatal(err)
	}
	return s
}
