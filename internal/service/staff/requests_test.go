package staff_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
	"emi/internal/service/staff"
)

// lifecycleEnv is the decision engine on a fresh database with a fake
// clock, and a flow of its own over the account-termination row of the
// decision table (customer service proposes and approves).
type lifecycleEnv struct {
	db       *postgres.DB
	controls *staff.Controls
	audit    *kernel.Auditor
	inbox    *staff.Inbox
	clock    *servicetest.FakeClock
	flow     staff.Flow
}

func newLifecycleEnv(t *testing.T) *lifecycleEnv {
	t.Helper()
	db := pgtest.DB(t)
	clock := servicetest.NewFakeClock(time.Now().UTC())
	audit := kernel.NewAuditor(postgres.NewAuditStore(db))
	inbox := staff.NewInbox(staff.InboxDeps{Store: postgres.NewInboxStore(db), Now: clock.Now})
	c := staff.NewControls(staff.ControlsDeps{Links: postgres.NewStaffStore(db), Tx: db, Requests: postgres.NewRequestStore(db),
		Audit: audit, Inbox: inbox, Now: clock.Now})
	return &lifecycleEnv{db: db, controls: c, audit: audit, inbox: inbox, clock: clock, flow: staff.Flow{
		Control: staff.ControlAccountTermination, Asked: "the test change", Changed: "the test subject",
		Proposed: "test.proposed", Approved: "test.approved", Rejected: "test.rejected", Withdrawn: "test.withdrawn",
		Voided: "test.voided", RejectNeedsReason: true,
	}}
}

// person is a new staff user with roles, signed in.
func (e *lifecycleEnv) person(t *testing.T, roles ...emi.Role) context.Context {
	t.Helper()
	rs := make([]string, len(roles))
	for i, r := range roles {
		rs[i] = string(r)
	}
	id := kernel.NewToken()
	if _, err := e.db.ExecContext(context.Background(), `INSERT INTO staff_users (id, email, name, password_hash, roles, password_set_at)
		VALUES ($1, $2, $3, '$argon2id$test', $4, now())`, id, id+"@lifecycle.test", "Staff "+id[:8], pq.Array(rs)); err != nil {
		t.Fatal(err)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: id, StaffRoles: rs})
}

func idOf(ctx context.Context) string { return kernel.StaffOf(ctx).ActorID }

func (e *lifecycleEnv) propose(t *testing.T, ctx context.Context, subject, revision string) staff.Request {
	t.Helper()
	var r staff.Request
	err := e.db.InTx(ctx, func(ctx context.Context) error {
		var err error
		r, err = e.controls.ProposeRequest(ctx, e.flow, staff.Proposal{Subject: subject, ResourceType: "test",
			ResourceToken: subject, Reason: "because the customer asked", Revision: revision})
		return err
	})
	if err != nil {
		t.Fatalf("propose %s: %v", subject, err)
	}
	return r
}

// approval locks nothing and reports revision; applied counts the changes
// applied.
func approval(revision string, applied *atomic.Int32) staff.Approval {
	return staff.Approval{
		Lock: func(context.Context, staff.Request) (string, error) { return revision, nil },
		Apply: func(context.Context, staff.Request) (map[string]any, error) {
			applied.Add(1)
			return map[string]any{"applied": true}, nil
		},
	}
}

func (e *lifecycleEnv) actions(t *testing.T, subject string) []string {
	t.Helper()
	rows, err := e.audit.Trail(staffSystem(), emi.AuditFilter{ResourceType: "test", ResourceToken: subject, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(rows) - 1; i >= 0; i-- {
		out = append(out, rows[i].Action)
	}
	return out
}

func staffSystem() context.Context {
	return emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
}

// public is the sentence a person refused reads.
func public(err error) string { return emi.AsError(err).Public }

func TestRequestIsProposedOnceAndApprovedByASecondPerson(t *testing.T) {
	e := newLifecycleEnv(t)
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	r := e.propose(t, alice, "test:1", "")
	if r.Status != staff.RequestPending || r.ProposedBy != idOf(alice) || r.Reason != "because the customer asked" {
		t.Fatalf("proposed %+v", r)
	}
	// A second proposal of the same subject is refused in the flow's words,
	// and the caller's transaction stays usable.
	err := e.db.InTx(alice, func(ctx context.Context) error {
		_, err := e.controls.ProposeRequest(ctx, e.flow, staff.Proposal{Subject: "test:1", ResourceType: "test",
			ResourceToken: "test:1", Reason: "again please"})
		if !errors.Is(err, emi.ErrRequestPending) || public(err) != fmt.Sprintf(staff.RefusedPending, "the test change") {
			t.Fatalf("second proposal: %v (%q)", err, public(err))
		}
		_, _, err = e.controls.PendingRequest(ctx, "test:1")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var applied atomic.Int32
	if _, err := e.controls.ApproveRequest(alice, e.flow, "test:1", approval("", &applied)); !errors.Is(err, emi.ErrFourEyes) ||
		public(err) != staff.RefusedTookPart {
		t.Fatalf("proposer approving: %v (%q)", err, public(err))
	}
	got, err := e.controls.ApproveRequest(bob, e.flow, "test:1", approval("", &applied))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != staff.RequestApproved || got.DecidedBy != idOf(bob) || applied.Load() != 1 {
		t.Fatalf("approved %+v, applied %d", got, applied.Load())
	}
	if _, err := e.controls.ApproveRequest(e.person(t, emi.RoleCustomerService), e.flow, "test:1", approval("", &applied)); !errors.Is(err, emi.ErrRequestClosed) ||
		public(err) != fmt.Sprintf(staff.RefusedClosed, "the test change") || applied.Load() != 1 {
		t.Fatalf("approving an approved request: %v, applied %d", err, applied.Load())
	}
	if got := e.actions(t, "test:1"); fmt.Sprint(got) != "[test.proposed test.approved]" {
		t.Fatalf("audit %v", got)
	}
	items, err := e.inbox.Mine(alice, false, 10)
	if err != nil || len(items) != 1 || items[0].Kind != "decision" || items[0].By != idOf(bob) {
		t.Fatalf("proposer's inbox: %v %+v", err, items)
	}
	// The subject is free again.
	e.propose(t, alice, "test:1", "")
}

func TestRequestNeedsTheTablesPermissions(t *testing.T) {
	e := newLifecycleEnv(t)
	auditor := e.person(t, emi.RoleAuditor)
	err := e.db.InTx(auditor, func(ctx context.Context) error {
		_, err := e.controls.ProposeRequest(ctx, e.flow, staff.Proposal{Subject: "test:2", ResourceType: "test", ResourceToken: "test:2", Reason: "no way"})
		return err
	})
	if !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("auditor proposing: %v", err)
	}
	e.propose(t, e.person(t, emi.RoleCustomerService), "test:2", "")
	var applied atomic.Int32
	for name, ctx := range map[string]context.Context{"auditor": auditor, "underwriter": e.person(t, emi.RoleUnderwriter)} {
		if _, err := e.controls.ApproveRequest(ctx, e.flow, "test:2", approval("", &applied)); !errors.Is(err, emi.ErrForbidden) {
			t.Errorf("%s approving: %v", name, err)
		}
		if _, err := e.controls.DeclineRequest(ctx, e.flow, "test:2", staff.Decline{Note: "not mine to say"}); !errors.Is(err, emi.ErrForbidden) {
			t.Errorf("%s rejecting: %v", name, err)
		}
	}
	if applied.Load() != 0 {
		t.Fatal("applied without permission")
	}
	// A reason is required (3 to 2,000 characters).
	err = e.db.InTx(e.person(t, emi.RoleCustomerService), func(ctx context.Context) error {
		_, err := e.controls.ProposeRequest(ctx, e.flow, staff.Proposal{Subject: "test:3", ResourceType: "test", ResourceToken: "test:3", Reason: " x "})
		return err
	})
	if !errors.Is(err, emi.ErrReviewValidation) {
		t.Fatalf("proposal without a reason: %v", err)
	}
}

func TestRequestIsWithdrawnByItsProposerAndRejectedByOthers(t *testing.T) {
	e := newLifecycleEnv(t)
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	e.propose(t, alice, "test:w", "")
	got, err := e.controls.DeclineRequest(alice, e.flow, "test:w", staff.Decline{Note: ""})
	if err != nil || got.Status != staff.RequestWithdrawn || got.DecidedBy != idOf(alice) {
		t.Fatalf("withdraw: %v %+v", err, got)
	}
	e.propose(t, alice, "test:r", "")
	if _, err := e.controls.DeclineRequest(bob, e.flow, "test:r", staff.Decline{Note: ""}); !errors.Is(err, emi.ErrReviewValidation) {
		t.Fatalf("rejection without a reason: %v", err)
	}
	got, err = e.controls.DeclineRequest(bob, e.flow, "test:r", staff.Decline{Note: "the customer withdrew their complaint"})
	if err != nil || got.Status != staff.RequestRejected || got.Note != "the customer withdrew their complaint" {
		t.Fatalf("reject: %v %+v", err, got)
	}
	var applied atomic.Int32
	if _, err := e.controls.ApproveRequest(bob, e.flow, "test:r", approval("", &applied)); !errors.Is(err, emi.ErrRequestClosed) {
		t.Fatalf("approving a rejected request: %v", err)
	}
	if got := fmt.Sprint(e.actions(t, "test:w"), e.actions(t, "test:r")); got != "[test.proposed test.withdrawn] [test.proposed test.rejected]" {
		t.Fatalf("audit %s", got)
	}
}

func TestRequestLapsesAndIsRefusedThenClosed(t *testing.T) {
	e := newLifecycleEnv(t)
	e.flow.Lapse = time.Hour
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	e.propose(t, alice, "test:lapse", "")
	e.propose(t, alice, "test:job", "")
	e.clock.Advance(time.Hour)
	if c := e.controls.RequestCapabilities(bob, mustPending(t, e, "test:lapse")); c.Approve || c.WhyNotApprove == "" || !c.Reject {
		t.Fatalf("capabilities of a lapsed request: %+v", c)
	}
	var applied atomic.Int32
	_, err := e.controls.ApproveRequest(bob, e.flow, "test:lapse", approval("", &applied))
	if !errors.Is(err, emi.ErrRequestLapsed) || public(err) != fmt.Sprintf(staff.RefusedLapsed, "the test change") || applied.Load() != 0 {
		t.Fatalf("approving a lapsed request: %v", err)
	}
	// The lapse was recorded although the approval was refused.
	if _, found, _ := e.controls.PendingRequest(bob, "test:lapse"); found {
		t.Fatal("a lapsed request still pending")
	}
	if got := e.actions(t, "test:lapse"); fmt.Sprint(got) != "[test.proposed request.lapsed]" {
		t.Fatalf("audit %v", got)
	}
	// The maintenance job closes the others.
	n, err := e.controls.LapseDueRequests(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("lapse job: %d %v", n, err)
	}
	if _, found, _ := e.controls.PendingRequest(bob, "test:job"); found {
		t.Fatal("the job left a lapsed request pending")
	}
	items, err := e.inbox.Mine(alice, false, 10)
	if err != nil || len(items) != 2 {
		t.Fatalf("proposer told of both lapses: %v %+v", err, items)
	}
	// The job found the request's flow by its control (here the declared
	// account termination's): its words and its page, not the control's
	// code name.
	declared, ok := staff.DeclaredFlow(e.flow.Control)
	if !ok {
		t.Fatalf("no flow declared for %s", e.flow.Control)
	}
	want := "Your request for " + declared.Asked + " was lapsed."
	if items[0].Body != want || items[0].Href == "/backoffice/inbox" {
		t.Fatalf("the job told the proposer %q (%s), want %q with the subject's page", items[0].Body, items[0].Href, want)
	}
}

func mustPending(t *testing.T, e *lifecycleEnv, subject string) staff.Request {
	t.Helper()
	r, found, err := e.controls.PendingRequest(staffSystem(), subject)
	if err != nil || !found {
		t.Fatalf("pending %s: %v %v", subject, found, err)
	}
	return r
}

func TestRequestIsVoidWhenItsSubjectMovedOn(t *testing.T) {
	e := newLifecycleEnv(t)
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	e.propose(t, alice, "test:v", "rev-1")
	var applied atomic.Int32
	_, err := e.controls.ApproveRequest(bob, e.flow, "test:v", approval("rev-2", &applied))
	if !errors.Is(err, emi.ErrRequestVoid) || public(err) != fmt.Sprintf(staff.RefusedVoid, "the test subject") || applied.Load() != 0 {
		t.Fatalf("approving a void request: %v", err)
	}
	if got := e.actions(t, "test:v"); fmt.Sprint(got) != "[test.proposed test.voided]" {
		t.Fatalf("audit %v", got)
	}
	// Bound to the revision it names: the same revision approves.
	e.propose(t, alice, "test:v", "rev-2")
	if _, err := e.controls.ApproveRequest(bob, e.flow, "test:v", approval("rev-2", &applied)); err != nil || applied.Load() != 1 {
		t.Fatalf("approval at the bound revision: %v", err)
	}
	// VoidRequest closes a pending request from the flow's own change.
	e.propose(t, alice, "test:v", "rev-2")
	if err := e.db.InTx(bob, func(ctx context.Context) error { return e.controls.VoidRequest(ctx, e.flow, "test:v") }); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := e.controls.PendingRequest(bob, "test:v"); found {
		t.Fatal("VoidRequest left the request pending")
	}
}

// An administrator who set up two users cannot make them two people: the
// engine's links hold in the lifecycle and in the capability answer.
func TestRequestRefusesUsersSetUpByOneAdministrator(t *testing.T) {
	e := newLifecycleEnv(t)
	admin := e.person(t, emi.RoleAdmin)
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	for _, u := range []context.Context{alice, bob} {
		if err := e.audit.Record(admin, emi.AuditEntry{Action: "staff.create", ResourceType: "staff_user", ResourceToken: idOf(u)}); err != nil {
			t.Fatal(err)
		}
	}
	e.propose(t, alice, "test:l", "")
	c := e.controls.RequestCapabilities(bob, mustPending(t, e, "test:l"))
	if c.Approve || c.WhyNotApprove != staff.RefusedSameAdministrator || !c.Reject || c.Withdraw {
		t.Fatalf("capabilities of a linked colleague: %+v", c)
	}
	var applied atomic.Int32
	if _, err := e.controls.ApproveRequest(bob, e.flow, "test:l", approval("", &applied)); !errors.Is(err, emi.ErrFourEyes) ||
		public(err) != staff.RefusedSameAdministrator || applied.Load() != 0 {
		t.Fatalf("linked approval: %v (%q)", err, public(err))
	}
	if c := e.controls.RequestCapabilities(alice, mustPending(t, e, "test:l")); c.Approve || !c.Withdraw || c.Reject {
		t.Fatalf("capabilities of the proposer: %+v", c)
	}
	if c := e.controls.RequestCapabilities(e.person(t, emi.RoleCustomerService), mustPending(t, e, "test:l")); !c.Approve || !c.Reject {
		t.Fatalf("capabilities of an unlinked colleague: %+v", c)
	}
}

// Of approvers racing, exactly one applies the change.
func TestRequestApprovalsRacingApplyOnce(t *testing.T) {
	e := newLifecycleEnv(t)
	e.propose(t, e.person(t, emi.RoleCustomerService), "test:race", "")
	var applied atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		who := e.person(t, emi.RoleCustomerService)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.controls.ApproveRequest(who, e.flow, "test:race", approval("", &applied))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, emi.ErrRequestClosed):
			t.Errorf("racing approval: %v", err)
		}
	}
	if ok != 1 || applied.Load() != 1 {
		t.Fatalf("%d approvals succeeded, %d applied", ok, applied.Load())
	}
}

// The queue's answer (links read once for the page) is the one request's
// answer, for the proposer, a linked colleague and an unlinked one.
func TestRequestCapabilitiesOfAPageAgreeWithEachRequest(t *testing.T) {
	e := newLifecycleEnv(t)
	admin := e.person(t, emi.RoleAdmin)
	alice, linked, other := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	for _, u := range []context.Context{alice, linked} {
		if err := e.audit.Record(admin, emi.AuditEntry{Action: "staff.create", ResourceType: "staff_user", ResourceToken: idOf(u)}); err != nil {
			t.Fatal(err)
		}
	}
	var rs []staff.Request
	for i, by := range []context.Context{alice, other, alice} {
		rs = append(rs, e.propose(t, by, fmt.Sprintf("test:page-%d", i), ""))
	}
	for name, viewer := range map[string]context.Context{"proposer": alice, "linked": linked, "other": other, "auditor": e.person(t, emi.RoleAuditor)} {
		page := e.controls.RequestCapabilitiesOf(viewer, rs, nil)
		for _, r := range rs {
			if one := e.controls.RequestCapabilities(viewer, r); page[r.ID] != one {
				t.Errorf("%s on %s: page %+v, one by one %+v", name, r.Subject, page[r.ID], one)
			}
		}
	}
}

// An approver decides the request they saw: withdrawn and proposed again
// meanwhile (the same subject, the same revision), the new one is neither
// approved nor rejected unseen.
func TestRequestDecidedIsTheOneSeen(t *testing.T) {
	e := newLifecycleEnv(t)
	alice, bob := e.person(t, emi.RoleCustomerService), e.person(t, emi.RoleCustomerService)
	seen := e.propose(t, alice, "test:seen", "rev")
	if _, err := e.controls.DeclineRequest(alice, e.flow, "test:seen", staff.Decline{}); err != nil {
		t.Fatal(err)
	}
	again := e.propose(t, alice, "test:seen", "rev")
	var applied atomic.Int32
	a := approval("rev", &applied)
	a.ID = seen.ID
	if _, err := e.controls.ApproveRequest(bob, e.flow, "test:seen", a); !errors.Is(err, emi.ErrRequestClosed) || applied.Load() != 0 {
		t.Fatalf("approving the withdrawn request it saw: %v, applied %d", err, applied.Load())
	}
	if _, err := e.controls.DeclineRequest(bob, e.flow, "test:seen", staff.Decline{ID: seen.ID, Note: "not this one"}); !errors.Is(err, emi.ErrRequestClosed) {
		t.Fatalf("rejecting the withdrawn request it saw: %v", err)
	}
	if r := mustPending(t, e, "test:seen"); r.ID != again.ID {
		t.Fatalf("pending %s, want the new proposal %s", r.ID, again.ID)
	}
	a.ID = again.ID
	if _, err := e.controls.ApproveRequest(bob, e.flow, "test:seen", a); err != nil || applied.Load() != 1 {
		t.Fatalf("approving the request seen now: %v", err)
	}
}
