package servicetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
)

// changeRows counts the stored rows of one staff change.
func changeRows(t *testing.T, m *moneyApp, id string) int {
	t.Helper()
	return m.count(t, `SELECT count(*) FROM staff_changes WHERE id = $1`, id)
}

// changeAudit counts the audit rows of one staff change with the action.
func changeAudit(t *testing.T, m *moneyApp, action, id string) int {
	t.Helper()
	return m.count(t, `SELECT count(*) FROM audit_log WHERE action = $1 AND resource_token = $2`, action, id)
}

// count runs a count query.
func (m *moneyApp) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := m.env.App.DB.Get(&n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// A pending staff change nobody decided within StaffChangeTTL used to stay
// in the table for ever: listed as "waiting for a second administrator",
// holding the sealed half of a temporary password, and blocking any new
// proposal for the same user or e-mail address until someone rejected it.
// The maintenance job now deletes such a change once it lapsed more than
// StaffChangeRetention (90 days) ago; a recently lapsed one, a pending
// one and a decided one stay, and the audit rows stay (with one more
// saying the change was deleted). On the old code the long-lapsed change
// survived the maintenance run: this test failed there.
func TestLapsedStaffChangesArePruned(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	propose := func(email string) emi.StaffOutcome {
		t.Helper()
		out, err := m.create(t, a, email, emi.RoleCustomerService)
		if err != nil || out.Change.Status != emi.StaffChangePending {
			t.Fatalf("propose %s: %+v, %v", email, out.Change, err)
		}
		return out
	}
	old := propose("old@prune.test")
	rejected := propose("rejected@prune.test")
	if err := st.RejectChange(a, rejected.Change.ID, "withdrawn"); err != nil {
		t.Fatal(err)
	}
	m.env.Clock.Advance(90 * 24 * time.Hour)
	recent := propose("recent@prune.test") // lapses after 97 days, 3 days before the run
	m.env.Clock.Advance(10 * 24 * time.Hour)
	pending := propose("pending@prune.test")

	// Before the run the long-lapsed proposal blocks a new one.
	_, err := m.create(t, a, "old@prune.test", emi.RoleCustomerService)
	wantErr(t, "a new proposal beside the lapsed one", err, emi.ErrStaffChangePending)

	run := func() {
		t.Helper()
		if err := m.env.App.Maintenance.Run(context.Background(), emi.Job{}); err != nil {
			t.Fatalf("maintenance: %v", err)
		}
	}
	run()
	if changeRows(t, m, old.Change.ID) != 0 {
		t.Fatal("a change that lapsed 93 days ago is still stored")
	}
	for name, c := range map[string]emi.StaffOutcome{"recently lapsed": recent, "pending": pending, "rejected": rejected} {
		if changeRows(t, m, c.Change.ID) != 1 {
			t.Errorf("the %s change was deleted", name)
		}
	}
	if n := changeAudit(t, m, "staff.change_propose", old.Change.ID); n != 1 {
		t.Fatalf("%d proposal audit rows for the deleted change, want 1 (the audit log is never pruned)", n)
	}
	var actor string
	if err := m.env.App.DB.Get(&actor, `SELECT actor_type || ':' || actor_id FROM audit_log
		WHERE action = 'staff.change_lapsed_delete' AND resource_token = $1`, old.Change.ID); err != nil {
		t.Fatalf("the deletion's audit row: %v", err)
	}
	if actor != "system:maintenance" {
		t.Fatalf("deletion audited as %s, want system:maintenance", actor)
	}

	// What an administrator sees and can do afterwards.
	changes, err := st.Changes(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.ID == old.Change.ID {
			t.Fatal("the deleted change is still listed")
		}
	}
	e := newApprover(t, m)
	_, err = st.ApproveChange(e, old.Change.ID)
	wantErr(t, "approving the deleted change", err, emi.ErrStaffChangeNotFound)
	_, err = st.ApproveChange(e, recent.Change.ID)
	wantErr(t, "approving the recently lapsed change", err, emi.ErrStaffChangeStale)
	approved(t, m, e, pending, nil)
	propose("old@prune.test") // the address is free again

	// A second run finds nothing more to delete.
	run()
	if n := changeAudit(t, m, "staff.change_lapsed_delete", old.Change.ID); n != 1 {
		t.Fatalf("%d deletion audit rows after two runs, want 1", n)
	}
	if changeRows(t, m, recent.Change.ID) != 1 {
		t.Fatal("the recently lapsed change went on the second run")
	}
}

// More lapsed changes than one batch (100): every one goes, in several
// transactions, each with its audit row, and the count returned is
// right. The rows are written directly (a proposal through the service
// hashes a temporary password, too slow for hundreds).
func TestLapsedStaffChangesArePrunedInBatches(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	const n = 250
	old := m.env.Clock.Now().Add(-staff.StaffChangeTTL - staff.StaffChangeRetention - time.Hour)
	if _, err := m.env.App.DB.Exec(`INSERT INTO staff_changes (id, kind, staff_id, roles, from_roles, status, proposed_by, proposed_at)
		SELECT gen_random_uuid(), 'set_roles', gen_random_uuid(), '{compliance}', '{auditor}', 'pending', gen_random_uuid(),
		       $1::timestamptz - i * interval '1 minute'
		  FROM generate_series(1, $2) i`, old, n); err != nil {
		t.Fatal(err)
	}
	got, err := m.env.App.Staff.PruneLapsedChanges(context.Background())
	if err != nil || got != n {
		t.Fatalf("pruned %d, %v; want %d", got, err, n)
	}
	left := m.count(t, `SELECT count(*) FROM staff_changes`)
	audited := m.count(t, `SELECT count(DISTINCT resource_token) FROM audit_log WHERE action = 'staff.change_lapsed_delete'`)
	if left != 0 || audited != n {
		t.Fatalf("%d changes left, %d audited deletions; want 0 and %d", left, audited, n)
	}
}

// Administrators approve changes while two maintenance runs prune: each
// fresh change is approved (the prune never touches it), each long-lapsed
// one is refused, as stale when the approval locked it first (the prune
// skips it, a later run deletes it) or as not found when the prune deleted
// it first, and never applied; each deleted change has exactly one
// deletion audit row and no approval row.
func TestPruneRacingApprovalsIsClean(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	const each = 4
	var lapsed, fresh []emi.StaffOutcome
	for i := range each {
		out, err := m.create(t, a, fmt.Sprintf("lapsed-%d@prune.test", i), emi.RoleCustomerService)
		if err != nil {
			t.Fatal(err)
		}
		lapsed = append(lapsed, out)
	}
	m.env.Clock.Advance(staff.StaffChangeTTL + staff.StaffChangeRetention + time.Hour)
	for i := range each {
		out, err := m.create(t, a, fmt.Sprintf("fresh-%d@prune.test", i), emi.RoleCustomerService)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, out)
	}
	approvers := []context.Context{newApprover(t, m), newApprover(t, m)}

	all := append(append([]emi.StaffOutcome(nil), lapsed...), fresh...)
	errs := make([]error, len(all))
	pruneErrs := make([]error, 2)
	atOnce(len(all)+len(pruneErrs), func(i int) {
		if i < len(all) {
			_, errs[i] = st.ApproveChange(approvers[i%2], all[i].Change.ID)
		} else {
			_, pruneErrs[i-len(all)] = st.PruneLapsedChanges(context.Background())
		}
	})
	for _, err := range pruneErrs {
		if err != nil {
			t.Fatalf("prune: %v", err)
		}
	}
	userExists := func(email string) bool {
		return m.count(t, `SELECT count(*) FROM staff_users WHERE email = $1`, email) == 1
	}
	for i, c := range fresh {
		if err := errs[each+i]; err != nil || !userExists(c.Change.Email) {
			t.Fatalf("fresh change %d: %v (user exists: %v); want it approved", i, err, userExists(c.Change.Email))
		}
	}
	// A later run deletes whatever an approval had locked.
	if _, err := st.PruneLapsedChanges(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, c := range lapsed {
		err := errs[i]
		if !errors.Is(err, emi.ErrStaffChangeStale) && !errors.Is(err, emi.ErrStaffChangeNotFound) {
			t.Fatalf("lapsed change %d: %v; want stale or not found", i, err)
		}
		if userExists(c.Change.Email) {
			t.Fatalf("lapsed change %d was applied", i)
		}
		if changeRows(t, m, c.Change.ID) != 0 || changeAudit(t, m, "staff.change_lapsed_delete", c.Change.ID) != 1 ||
			changeAudit(t, m, "staff.change_approve", c.Change.ID) != 0 {
			t.Fatalf("lapsed change %d: not deleted exactly once, or audited as approved", i)
		}
	}
}
