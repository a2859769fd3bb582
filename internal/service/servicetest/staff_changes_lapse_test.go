package servicetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
)

// changeAudit counts the audit rows of one staff change with the action.
func changeAudit(t *testing.T, m *moneyApp, action, id string) int {
	t.Helper()
	return m.count(t, `SELECT count(*) FROM audit_log WHERE action = $1 AND resource_token = $2`, action, id)
}

// changeState is a change's lifecycle status and whether it still holds a
// secret.
func changeState(t *testing.T, m *moneyApp, id string) string {
	t.Helper()
	var st string
	if err := m.env.App.DB.Get(&st, `SELECT r.status || CASE WHEN c.password_hash IS NULL AND c.second_half_enc IS NULL
		THEN '' ELSE '+secrets' END FROM staff_changes c JOIN control_requests r ON r.id = c.id WHERE c.id = $1`, id); err != nil {
		t.Fatalf("change %s: %v", id, err)
	}
	return st
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

// A pending staff change nobody decided within StaffChangeTTL lapses: the
// maintenance job closes it (status lapsed, audited by the system, the
// sealed half and the password hash gone, the proposer told), it cannot
// be approved any more, and the user or e-mail address it named is free
// for a new proposal at once, even before the job ran. Pending and decided
// changes are left alone.
func TestLapsedStaffChangesCloseAndFreeTheirUser(t *testing.T) {
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
	old := propose("old@lapse.test")
	early := propose("early@lapse.test")
	rejected := propose("rejected@lapse.test")
	if err := st.RejectChange(a, rejected.Change.ID, "withdrawn"); err != nil {
		t.Fatal(err)
	}
	m.env.Clock.Advance(staff.StaffChangeTTL - time.Hour)
	pending := propose("pending@lapse.test")
	m.env.Clock.Advance(2 * time.Hour)

	// Before the job runs, a lapsed proposal neither blocks a new one nor
	// can be approved.
	again := propose("early@lapse.test")
	if got := changeState(t, m, early.Change.ID); got != "lapsed" {
		t.Fatalf("the lapsed change a new proposal replaced is %s", got)
	}
	e := newApprover(t, m)
	_, err := st.ApproveChange(e, old.Change.ID)
	wantErr(t, "approving a lapsed change", err, emi.ErrStaffChangeStale)

	if err := m.env.App.Maintenance.Run(context.Background(), emi.Job{}); err != nil {
		t.Fatalf("maintenance: %v", err)
	}
	for id, want := range map[string]string{old.Change.ID: "lapsed", early.Change.ID: "lapsed", rejected.Change.ID: "withdrawn",
		pending.Change.ID: "pending+secrets", again.Change.ID: "pending+secrets"} {
		if got := changeState(t, m, id); got != want {
			t.Errorf("change %s is %s, want %s", id, got, want)
		}
	}
	var actor string
	if err := m.env.App.DB.Get(&actor, `SELECT actor_type || ':' || actor_id FROM audit_log
		WHERE action = 'request.lapsed' AND resource_token = $1`, old.Change.ID); err != nil {
		t.Fatalf("the lapse's audit row: %v", err)
	}
	if actor != "system:maintenance" && actor != "staff:"+staffID(e) {
		t.Fatalf("lapse audited as %s", actor)
	}
	// The proposer reads the flow's own words and link, as for any other
	// outcome, whether the job or the next proposal closed it.
	var told []string
	if err := m.env.App.DB.Select(&told, `SELECT href || ' ' || body FROM staff_inbox WHERE kind = 'decision' AND body LIKE '%lapsed%'`); err != nil {
		t.Fatal(err)
	}
	want := "/backoffice/staff Your request for this staff change was lapsed."
	if len(told) == 0 || slices.ContainsFunc(told, func(s string) bool { return s != want }) {
		t.Fatalf("the proposers were told %q, want %q", told, want)
	}
	_, err = st.ApproveChange(e, old.Change.ID)
	wantErr(t, "approving a closed lapsed change", err, emi.ErrStaffChangeDecided)
	approved(t, m, e, pending, nil)
	propose("old@lapse.test") // the address is free again
	if n := changeAudit(t, m, "staff.change_approve", old.Change.ID); n != 0 {
		t.Fatal("a lapsed change was approved")
	}
}

// staffID is the staff id of a signed-in context.
func staffID(ctx context.Context) string {
	p, _ := emi.PrincipalFrom(ctx)
	return p.ActorID
}

// More lapsed requests than one batch (100): every one closes, in several
// transactions, each with its audit row, and the count is right. The rows
// are written directly (a proposal through the service hashes a temporary
// password, too slow for hundreds).
func TestLapsedRequestsCloseInBatches(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	const n = 250
	old := m.env.Clock.Now().Add(-staff.StaffChangeTTL - time.Hour)
	if _, err := m.env.App.DB.Exec(`WITH r AS (
		  INSERT INTO control_requests (id, control, subject, resource_type, resource_token, reason, revision, proposed_by, proposed_at, lapses_at)
		  SELECT id, 'staff.privileged_change', 'staff:' || gen_random_uuid(), 'staff_change', id::text, '', 'auditor', gen_random_uuid(),
		         $1::timestamptz - i * interval '1 minute', $1::timestamptz - i * interval '1 minute' + interval '7 days'
		    FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, $2) i) g RETURNING id)
		INSERT INTO staff_changes (id, kind, staff_id, roles, from_roles, password_hash)
		SELECT id, 'set_roles', gen_random_uuid(), '{compliance}', '{auditor}', '$argon2id$x' FROM r`, old, n); err != nil {
		t.Fatal(err)
	}
	got, err := m.env.App.Controls.LapseDueRequests(context.Background())
	if err != nil || got != n {
		t.Fatalf("lapsed %d, %v; want %d", got, err, n)
	}
	left := m.count(t, `SELECT count(*) FROM control_requests WHERE status = 'pending'`)
	secrets := m.count(t, `SELECT count(*) FROM staff_changes WHERE password_hash IS NOT NULL`)
	audited := m.count(t, `SELECT count(DISTINCT resource_token) FROM audit_log WHERE action = 'request.lapsed'`)
	if left != 0 || secrets != 0 || audited != n {
		t.Fatalf("%d pending, %d with secrets, %d audited lapses; want 0, 0 and %d", left, secrets, audited, n)
	}
}

// Administrators approve changes while two maintenance runs close lapsed
// ones: each fresh change is approved, each lapsed one is refused (as
// stale when the approval saw it first, as decided when the job closed it
// first) and never applied, and each has exactly one lapse audit row and
// no approval row.
func TestLapseRacingApprovalsIsClean(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	st := m.env.App.Staff
	a := newStaffUser(t, m, sys(), emi.RoleAdmin)
	const each = 4
	var lapsed, fresh []emi.StaffOutcome
	for i := range each {
		out, err := m.create(t, a, fmt.Sprintf("lapsed-%d@lapse.test", i), emi.RoleCustomerService)
		if err != nil {
			t.Fatal(err)
		}
		lapsed = append(lapsed, out)
	}
	m.env.Clock.Advance(staff.StaffChangeTTL + time.Hour)
	for i := range each {
		out, err := m.create(t, a, fmt.Sprintf("fresh-%d@lapse.test", i), emi.RoleCustomerService)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, out)
	}
	approvers := []context.Context{newApprover(t, m), newApprover(t, m)}

	all := append(append([]emi.StaffOutcome(nil), lapsed...), fresh...)
	errs := make([]error, len(all))
	jobErrs := make([]error, 2)
	atOnce(len(all)+len(jobErrs), func(i int) {
		if i < len(all) {
			_, errs[i] = st.ApproveChange(approvers[i%2], all[i].Change.ID)
		} else {
			_, jobErrs[i-len(all)] = m.env.App.Controls.LapseDueRequests(context.Background())
		}
	})
	for _, err := range jobErrs {
		if err != nil {
			t.Fatalf("lapse job: %v", err)
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
	for i, c := range lapsed {
		err := errs[i]
		if !errors.Is(err, emi.ErrStaffChangeStale) && !errors.Is(err, emi.ErrStaffChangeDecided) {
			t.Fatalf("lapsed change %d: %v; want stale or decided", i, err)
		}
		if userExists(c.Change.Email) {
			t.Fatalf("lapsed change %d was applied", i)
		}
		if changeState(t, m, c.Change.ID) != "lapsed" || changeAudit(t, m, "request.lapsed", c.Change.ID) != 1 ||
			changeAudit(t, m, "staff.change_approve", c.Change.ID) != 0 {
			t.Fatalf("lapsed change %d: not closed exactly once, or audited as approved", i)
		}
	}
}
