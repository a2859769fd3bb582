package staff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Two-person requests: the one lifecycle of every decision the decision
// table (Policies) says takes more than one person. A flow (an account's
// termination, a transfer's reversal, a program change that moves risk…)
// describes itself once as a Flow; the lifecycle does the rest the same way
// for all of them:
//
//   - propose: the proposer holds the row's Propose permission and gives a
//     reason; the request binds to the revision of the thing it is about
//     (its subject); one request per subject waits at a time;
//   - approve: each approver holds Approve and is a person distinct from
//     everyone who took part (Distinct, the administrators' links
//     included); when the row's People have taken part, the flow's change
//     is applied in the same transaction;
//   - reject (another person, with Approve) or withdraw (the proposer);
//   - lapse: a request nobody decided within the flow's Lapse closes;
//   - void: a request whose subject changed since (another revision)
//     closes, since approving it would approve something nobody proposed.
//
// Each step writes one audit row on the flow's resource and tells the
// proposer in their inbox of the outcome; each refusal says its real reason
// in one vocabulary (the Refused… sentences and Distinct's).

// The statuses of a request.
const (
	RequestPending   = "pending"
	RequestApproved  = "approved"
	RequestRejected  = "rejected"
	RequestWithdrawn = "withdrawn"
	RequestLapsed    = "lapsed"
	RequestVoid      = "void"
)

// Request is one two-person request.
type Request struct {
	ID      string  `db:"id"`
	Control Control `db:"control"`
	// Subject is what the request is about, "type:token" (SubjectOf): at
	// most one request per subject is pending.
	Subject string `db:"subject"`
	// ResourceType and ResourceToken are where its audit rows go.
	ResourceType  string `db:"resource_type"`
	ResourceToken string `db:"resource_token"`
	PartnerID     string `db:"partner_id"`
	Reason        string `db:"reason"`
	// Revision is the subject's revision when proposed ("" when the flow
	// binds to nothing that changes).
	Revision   string     `db:"revision"`
	Status     string     `db:"status"`
	ProposedBy string     `db:"proposed_by"`
	ProposedAt time.Time  `db:"proposed_at"`
	LapsesAt   *time.Time `db:"lapses_at"`
	// Approvals are the approvers so far, in order.
	Approvals []string   `db:"-"`
	DecidedBy string     `db:"decided_by"`
	DecidedAt *time.Time `db:"decided_at"`
	Note      string     `db:"note"`
	// ProposedByName is the proposer's name, when read for a screen.
	ProposedByName string `db:"proposed_by_name"`
}

// Participants returns the proposer and the approvers so far.
func (r Request) Participants() []string {
	return append([]string{r.ProposedBy}, r.Approvals...)
}

// SubjectOf names a subject: "account:<token>".
func SubjectOf(kind, token string) string { return kind + ":" + token }

// TimeRevision is the revision of a subject versioned by a time (a
// program's updated_at): microseconds, UTC, as PostgreSQL keeps them.
func TimeRevision(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
}

// RequestStore keeps the requests.
type RequestStore interface {
	// InsertRequest stores a new pending request: emi.ErrNonUniqueValue
	// when its subject has one already.
	InsertRequest(ctx context.Context, r Request) error
	// PendingRequest returns the pending request of subject, if any;
	// forUpdate locks its row.
	PendingRequest(ctx context.Context, subject string, forUpdate bool) (Request, bool, error)
	// UpdateRequest writes a request's status, approvals, decision and
	// note.
	UpdateRequest(ctx context.Context, r Request) error
	// DueRequests returns (locked, skipping rows another transaction
	// holds) up to limit pending requests whose lapses_at is at or before
	// now.
	DueRequests(ctx context.Context, now time.Time, limit int) ([]Request, error)
}

// Flow is one kind of two-person request: its row of the decision table
// and what its steps write.
type Flow struct {
	Control Control
	// Asked names what is asked for, as a refusal says it: "the
	// termination of this account".
	Asked string
	// Changed names what voids a request when it changes: "the program".
	Changed string
	// The audit actions of the steps. Approved may be "" when the flow's
	// Apply records its own row.
	Proposed, Approved, Rejected, Withdrawn, Voided string
	// Lapse is how long a request can be approved; 0 for as long as it
	// waits.
	Lapse time.Duration
	// ReasonOptional lets a proposal come without a reason; otherwise it
	// needs 3 to 2,000 characters (kernel.StaffReason).
	ReasonOptional bool
	// RejectNeedsReason makes a rejection (not a withdrawal) give one.
	RejectNeedsReason bool
	// Codes are the error codes the flow's refusals carry (a flow that
	// had codes of its own before the lifecycle keeps them); nil ones are
	// the lifecycle's.
	Codes RequestCodes
	// Href is the back-office page of a request's subject, for the inbox
	// ("" links nowhere).
	Href func(r Request) string
}

// declaredFlows are the flows by control (DeclareFlow). Written only while
// the packages' variables are initialised, read afterwards.
var declaredFlows = map[Control]Flow{}

// DeclareFlow records f as the flow of its control and returns it: the
// lapse job finds a request's flow (its wording, its page, its codes) by
// the request's control. Each flow is declared once, as a package
// variable (var TerminationFlow = staff.DeclareFlow(staff.Flow{...})); a
// second flow for one control panics at start-up.
func DeclareFlow(f Flow) Flow {
	if _, dup := declaredFlows[f.Control]; dup {
		panic("staff.DeclareFlow: a second flow for " + string(f.Control))
	}
	declaredFlows[f.Control] = f
	return f
}

// DeclaredFlow returns the flow declared for c.
func DeclaredFlow(c Control) (Flow, bool) {
	f, ok := declaredFlows[c]
	return f, ok
}

// flowOf is c's declared flow, or a bare one (the lifecycle's own wording)
// for a control no flow declared.
func flowOf(c Control) Flow {
	if f, ok := declaredFlows[c]; ok {
		return f
	}
	return Flow{Control: c}
}

// RequestCodes are the codes of a flow's refusals.
type RequestCodes struct {
	Pending, Closed, Lapsed, Void *emi.Error
}

func (f Flow) code(e, def *emi.Error) *emi.Error {
	if e != nil {
		return e
	}
	return def
}

// The refusals of the lifecycle, as the person refused reads them (%s is
// the flow's Asked, or Changed for RefusedVoid).
const (
	RefusedPending   = "A request for %s already waits for a second person: approve, reject or withdraw it first. Nothing was changed."
	RefusedClosed    = "No request for %s waits any more (it was approved, rejected, withdrawn, lapsed or voided meanwhile, perhaps by a colleague just now). Nothing was changed."
	RefusedLapsed    = "The request for %s lapsed: nobody approved it in time. Propose it again if it is still needed. Nothing was changed."
	RefusedVoid      = "The request is void: %s changed after it was proposed, so approving it would approve something nobody proposed. Propose it again if it is still needed. Nothing was changed."
	RefusedWithdraw  = "Only the person who proposed it withdraws a request; you may reject it instead. Nothing was changed."
	RefusedNoRequest = "You may neither approve nor reject this request. Nothing was changed."
)

func (f Flow) refusePending() error {
	return f.code(f.Codes.Pending, emi.ErrRequestPending).WithDetail("a %s request of this subject is pending", f.Control).
		WithPublic(RefusedPending, f.Asked)
}

func (f Flow) refuseClosed() error {
	return f.code(f.Codes.Closed, emi.ErrRequestClosed).WithDetail("no %s request of this subject is pending", f.Control).
		WithPublic(RefusedClosed, f.Asked)
}

// Proposal is what a flow proposes.
type Proposal struct {
	// ID is the request's id when the flow chose it (its own row shares
	// it); "" for a new one.
	ID                          string
	Subject                     string
	ResourceType, ResourceToken string
	PartnerID                   string
	Reason                      string
	Revision                    string
	// Changes join the proposal's audit row.
	Changes map[string]any
}

// ProposeRequest records a pending request of f. It runs in the caller's
// transaction, which has locked the subject and checked that it may be
// asked for: the caller holds f's Propose permission, the reason is
// checked, and a subject with a pending request refuses (the flow's
// Pending code).
func (c *Controls) ProposeRequest(ctx context.Context, f Flow, p Proposal) (Request, error) {
	pol := PolicyOf(f.Control)
	if err := kernel.Require(ctx, pol.Propose); err != nil {
		return Request{}, err
	}
	if c == nil || c.requests == nil {
		return Request{}, emi.Internal(errors.New("controls: no request store configured"))
	}
	reason := p.Reason
	if !f.ReasonOptional {
		var err error
		if reason, err = kernel.StaffReason(reason); err != nil {
			return Request{}, err
		}
	} else if len(reason) > 2000 {
		return Request{}, emi.ErrReviewValidation.Field("reason", "must be at most 2,000 characters")
	}
	// Microseconds, as PostgreSQL keeps them (it rounds): the lapse time
	// read back is the one compared here.
	now := c.now().UTC().Truncate(time.Microsecond)
	if old, found, err := c.requests.PendingRequest(ctx, p.Subject, false); err != nil {
		return Request{}, err
	} else if found {
		if old.LapsesAt == nil || now.Before(*old.LapsesAt) {
			return Request{}, f.refusePending()
		}
		// Lapsed, not yet closed by the job: closed now, so that it does
		// not block the subject.
		if err := c.tx.InTx(ctx, func(ctx context.Context) error {
			old, found, err := c.requests.PendingRequest(ctx, p.Subject, true)
			if err != nil || !found || old.LapsesAt == nil || now.Before(*old.LapsesAt) {
				return err
			}
			return c.closeLocked(ctx, f, old, RequestLapsed)
		}); err != nil {
			return Request{}, err
		}
	}
	r := Request{ID: cmp.Or(p.ID, kernel.NewToken()), Control: f.Control, Subject: p.Subject, ResourceType: p.ResourceType,
		ResourceToken: p.ResourceToken, PartnerID: p.PartnerID, Reason: reason, Revision: p.Revision,
		Status: RequestPending, ProposedBy: kernel.StaffOf(ctx).ActorID, ProposedAt: now}
	if f.Lapse > 0 {
		at := now.Add(f.Lapse)
		r.LapsesAt = &at
	}
	// In a savepoint: a proposal racing this one past the check above
	// fails here without aborting the caller's transaction.
	err := c.tx.InTx(ctx, func(ctx context.Context) error { return c.requests.InsertRequest(ctx, r) })
	if errors.Is(err, emi.ErrNonUniqueValue) {
		return Request{}, f.refusePending()
	}
	if err != nil {
		return Request{}, err
	}
	changes := map[string]any{"request": r.ID, "reason": reason}
	maps.Copy(changes, p.Changes)
	return r, c.record(ctx, r, f.Proposed, changes)
}

// PendingRequest returns the pending request of a subject, for a screen;
// the caller checks the view permission.
func (c *Controls) PendingRequest(ctx context.Context, subject string) (Request, bool, error) {
	if c == nil || c.requests == nil {
		return Request{}, false, emi.Internal(errors.New("controls: no request store configured"))
	}
	return c.requests.PendingRequest(ctx, subject, false)
}

// Approval is what a flow does when one of its requests is approved.
type Approval struct {
	// Lock locks the subject and returns its revision now, compared with
	// the request's: another one voids the request. Nil when the flow
	// binds to nothing that changes.
	Lock func(ctx context.Context, r Request) (string, error)
	// Apply makes the change once the last person approved, in the same
	// transaction; what it returns joins the Approved audit row.
	Apply func(ctx context.Context, r Request) (map[string]any, error)
	// Note is the approver's note, kept with the decision.
	Note string
	// ID, when set, is the request the approver saw: another one pending
	// for the subject is refused as closed.
	ID string
	// Others count as having taken part though they did not act (the user
	// a staff change is about).
	Others []string
}

// Decline is a rejection or a withdrawal.
type Decline struct {
	// Note is the reason given (required for a rejection when the flow's
	// RejectNeedsReason).
	Note string
	// Lock, when given, locks the subject first.
	Lock func(ctx context.Context, r Request) error
	// ID, when set, is the request the person saw (see Approval.ID).
	ID string
}

// errClosing rolls an approval back so that the request's lapse or void is
// recorded in a transaction of its own.
var errClosing = errors.New("request closing")

// ApproveRequest gives the caller's approval to the pending request of
// subject: f's Approve permission, a person distinct from everyone who took
// part (emi.ErrFourEyes with Distinct's sentence), a request still pending
// (the flow's Closed code), not lapsed and bound to the subject's revision
// now. When its People have taken part, a.Apply runs in the same
// transaction. A lapsed or void request is closed (in a transaction of its
// own, audited, the proposer told) and refused with RefusedLapsed or
// RefusedVoid. ApproveRequest opens its own transaction. Called inside
// the caller's, it runs in a savepoint and a lapse or void it finds is
// refused but not recorded (the caller's rollback takes the record with
// it): only a flow with neither a Lapse nor a Lock may do that (HitFlow,
// inside the application's own transaction).
func (c *Controls) ApproveRequest(ctx context.Context, f Flow, subject string, a Approval) (Request, error) {
	pol := PolicyOf(f.Control)
	if err := kernel.Require(ctx, pol.Approve); err != nil {
		return Request{}, err
	}
	if c == nil || c.requests == nil {
		return Request{}, emi.Internal(errors.New("controls: no request store configured"))
	}
	me := kernel.StaffOf(ctx).ActorID
	var out Request
	var closing string
	err := c.tx.InTx(ctx, func(ctx context.Context) error {
		closing = ""
		r, found, err := c.requests.PendingRequest(ctx, subject, false)
		if err != nil {
			return err
		}
		if !found {
			return f.refuseClosed()
		}
		// The subject first, then the request: the order a proposal takes.
		rev := r.Revision
		if a.Lock != nil {
			if rev, err = a.Lock(ctx, r); err != nil {
				return err
			}
		}
		if r, found, err = c.requests.PendingRequest(ctx, subject, true); err != nil {
			return err
		} else if !found || (a.ID != "" && r.ID != a.ID) || r.Control != f.Control {
			return f.refuseClosed()
		}
		if err := c.Distinct(ctx, me, append(r.Participants(), a.Others...)...); err != nil {
			return err
		}
		now := c.now().UTC()
		switch {
		case r.LapsesAt != nil && !now.Before(*r.LapsesAt):
			closing, out = RequestLapsed, r
			return errClosing
		case a.Lock != nil && rev != r.Revision:
			closing, out = RequestVoid, r
			return errClosing
		}
		r.Approvals = append(r.Approvals, me)
		changes := map[string]any{"request": r.ID, "reason": r.Reason, "proposed_by": r.ProposedBy, "approved_by": me}
		if len(r.Participants()) < pol.People {
			out = r
			if err := c.requests.UpdateRequest(ctx, r); err != nil {
				return err
			}
			return c.record(ctx, r, string(f.Control)+".approval_given", changes)
		}
		// Approved before the change is applied, so that the change does
		// not find its own request pending (and void it).
		r.Status, r.DecidedBy, r.DecidedAt, r.Note = RequestApproved, me, &now, a.Note
		if err := c.requests.UpdateRequest(ctx, r); err != nil {
			return err
		}
		if a.Apply != nil {
			more, err := a.Apply(ctx, r)
			if err != nil {
				return err
			}
			maps.Copy(changes, more)
		}
		out = r
		if err := c.record(ctx, r, f.Approved, changes); err != nil {
			return err
		}
		return c.tell(ctx, f, r, "approved")
	})
	if errors.Is(err, errClosing) {
		return Request{}, c.close(ctx, f, out, closing)
	}
	if err != nil {
		return Request{}, err
	}
	return out, nil
}

// close records the lapse or void of r (pending when ApproveRequest saw it)
// and returns the refusal that says so.
func (c *Controls) close(ctx context.Context, f Flow, seen Request, status string) error {
	recorded := false
	err := c.tx.InTx(ctx, func(ctx context.Context) error {
		r, found, err := c.requests.PendingRequest(ctx, seen.Subject, true)
		if err != nil || !found || r.ID != seen.ID {
			return err // closed meanwhile: nothing to record
		}
		recorded = true
		return c.closeLocked(ctx, f, r, status)
	})
	if err != nil {
		return err
	}
	if !recorded {
		return f.refuseClosed()
	}
	if status == RequestLapsed {
		return f.code(f.Codes.Lapsed, emi.ErrRequestLapsed).WithDetail("request %s lapsed at %s", seen.ID, seen.LapsesAt).
			WithPublic(RefusedLapsed, f.Asked)
	}
	return f.code(f.Codes.Void, emi.ErrRequestVoid).WithDetail("request %s is bound to revision %q, the subject moved on", seen.ID, seen.Revision).
		WithPublic(RefusedVoid, f.Changed)
}

// closeLocked marks r (locked, pending) lapsed or void.
func (c *Controls) closeLocked(ctx context.Context, f Flow, r Request, status string) error {
	now := c.now().UTC()
	r.Status, r.DecidedAt = status, &now
	if err := c.requests.UpdateRequest(ctx, r); err != nil {
		return err
	}
	action := "request.lapsed"
	if status == RequestVoid {
		action = cmp.Or(f.Voided, "request.voided")
	}
	if err := c.record(ctx, r, action, map[string]any{"request": r.ID, "control": string(r.Control),
		"proposed_by": r.ProposedBy, "reason": r.Reason}); err != nil {
		return err
	}
	return c.tell(ctx, f, r, status)
}

// DeclineRequest ends the pending request of subject without applying it:
// the proposer withdraws it (f's Propose permission), anyone else with f's
// Approve permission rejects it (with a reason when f.RejectNeedsReason).
// It runs in its own transaction unless the caller has one.
func (c *Controls) DeclineRequest(ctx context.Context, f Flow, subject string, d Decline) (Request, error) {
	pol := PolicyOf(f.Control)
	p := kernel.StaffOf(ctx)
	if !p.Can(pol.Propose) && !p.Can(pol.Approve) {
		return Request{}, kernel.Require(ctx, pol.Approve)
	}
	if c == nil || c.requests == nil {
		return Request{}, emi.Internal(errors.New("controls: no request store configured"))
	}
	note := strings.TrimSpace(d.Note)
	if len(note) > 2000 {
		return Request{}, emi.ErrReviewValidation.Field("reason", "must be at most 2,000 characters")
	}
	var out Request
	err := c.tx.InTx(ctx, func(ctx context.Context) error {
		r, found, err := c.requests.PendingRequest(ctx, subject, false)
		if err != nil {
			return err
		}
		if !found {
			return f.refuseClosed()
		}
		if d.Lock != nil {
			if err := d.Lock(ctx, r); err != nil {
				return err
			}
		}
		if r, found, err = c.requests.PendingRequest(ctx, subject, true); err != nil {
			return err
		} else if !found || (d.ID != "" && r.ID != d.ID) || r.Control != f.Control {
			return f.refuseClosed()
		}
		action, status := f.Withdrawn, RequestWithdrawn
		if r.ProposedBy != p.ActorID {
			if err := kernel.Require(ctx, pol.Approve); err != nil {
				return err
			}
			action, status = f.Rejected, RequestRejected
			if f.RejectNeedsReason {
				if note, err = kernel.StaffReason(note); err != nil {
					return err
				}
			}
		} else if err := kernel.Require(ctx, pol.Propose); err != nil {
			return err
		}
		now := c.now().UTC()
		r.Status, r.DecidedBy, r.DecidedAt, r.Note = status, p.ActorID, &now, note
		if err := c.requests.UpdateRequest(ctx, r); err != nil {
			return err
		}
		out = r
		changes := map[string]any{"request": r.ID, "reason": r.Reason, "proposed_by": r.ProposedBy}
		if note != "" {
			changes["note"] = note
		}
		if err := c.record(ctx, r, action, changes); err != nil {
			return err
		}
		return c.tell(ctx, f, r, status)
	})
	return out, err
}

// LapseDueRequests closes every pending request past its lapse time, in
// batches, as the system: an audit row each ("request.lapsed") and the
// proposer told. It returns how many lapsed.
func (c *Controls) LapseDueRequests(ctx context.Context) (int, error) {
	if c == nil || c.requests == nil {
		return 0, nil
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("maintenance"))
	total := 0
	for {
		n := 0
		err := c.tx.InTx(ctx, func(ctx context.Context) error {
			due, err := c.requests.DueRequests(ctx, c.now().UTC(), 100)
			if err != nil {
				return err
			}
			n = len(due)
			for _, r := range due {
				if err := c.closeLocked(ctx, flowOf(r.Control), r, RequestLapsed); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < 100 {
			return total, nil
		}
	}
}

// RequestCapability is what the signed-in person may do with a pending
// request now and, for what they may not, why.
type RequestCapability struct {
	Approve, Reject, Withdraw bool
	// WhyNotApprove is the refusal an approval would get: the decision
	// engine's when the person took part (or is linked to someone who
	// did), the lapse; "" when allowed, or when the person merely lacks
	// the permission to approve.
	WhyNotApprove string
}

// RequestCapabilities answers for r (pending) by the rules of
// ApproveRequest and DeclineRequest, the engine's distinct-people rule
// included, so that a screen offers exactly what the service accepts.
// others count as having taken part (Approval.Others).
func (c *Controls) RequestCapabilities(ctx context.Context, r Request, others ...string) RequestCapability {
	p := kernel.StaffOf(ctx)
	return c.capability(ctx, r, func() error { return c.Distinct(ctx, p.ActorID, append(r.Participants(), others...)...) })
}

// RequestCapabilitiesOf is RequestCapabilities for each of rs, by id, with
// the administrators' links of everyone concerned read once (a queue's
// page): others, when given, names who else counts as having taken part
// in each.
func (c *Controls) RequestCapabilitiesOf(ctx context.Context, rs []Request, others func(Request) []string) map[string]RequestCapability {
	me := kernel.StaffOf(ctx).ActorID
	parts := make(map[string][]string, len(rs))
	ids := []string{me}
	for _, r := range rs {
		ps := r.Participants()
		if others != nil {
			ps = append(ps, others(r)...)
		}
		ps = slices.DeleteFunc(ps, func(s string) bool { return s == "" })
		parts[r.ID] = ps
		ids = append(ids, ps...)
	}
	var controllers map[string][]string
	var linkErr error
	if len(rs) > 0 {
		slices.Sort(ids)
		controllers, linkErr = c.links.StaffControllers(ctx, slices.Compact(ids), c.now().Add(-StaffLinkWindow))
	}
	out := make(map[string]RequestCapability, len(rs))
	for _, r := range rs {
		out[r.ID] = c.capability(ctx, r, func() error {
			ps := parts[r.ID]
			switch {
			case slices.Contains(ps, me):
				return emi.ErrFourEyes.WithPublic("%s", RefusedTookPart)
			case linkErr != nil:
				return linkErr
			}
			return distinctGiven(me, ps, controllers)
		})
	}
	return out
}

// capability answers for r with distinct the engine's distinct-people
// check of the reader.
func (c *Controls) capability(ctx context.Context, r Request, distinct func() error) RequestCapability {
	pol := PolicyOf(r.Control)
	p := kernel.StaffOf(ctx)
	var out RequestCapability
	if r.Status != RequestPending {
		return out
	}
	mine := r.ProposedBy == p.ActorID
	out.Withdraw = mine && p.Can(pol.Propose)
	out.Reject = !mine && p.Can(pol.Approve)
	if !p.Can(pol.Approve) && !p.Can(pol.Propose) {
		return out
	}
	// Taking part comes first: it is the reason whatever the permission.
	if err := distinct(); err != nil {
		out.WhyNotApprove = emi.AsError(err).Public
		if out.WhyNotApprove == "" {
			out.WhyNotApprove = "Whether you may approve it could not be checked now: try again."
		}
		return out
	}
	if !p.Can(pol.Approve) {
		return out
	}
	if r.LapsesAt != nil && !c.now().Before(*r.LapsesAt) {
		out.WhyNotApprove = fmt.Sprintf(RefusedLapsed, "this")
		return out
	}
	out.Approve = true
	return out
}

// record writes a step's audit row on r's resource (none for action "").
func (c *Controls) record(ctx context.Context, r Request, action string, changes map[string]any) error {
	if action == "" {
		return nil
	}
	return c.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: r.ResourceType, ResourceToken: r.ResourceToken,
		PartnerID: r.PartnerID, Changes: changes})
}

// tell puts the outcome of r in its proposer's inbox (not when they
// decided it themselves).
func (c *Controls) tell(ctx context.Context, f Flow, r Request, outcome string) error {
	href := ""
	if f.Href != nil {
		href = f.Href(r)
	}
	if href == "" {
		href = "/backoffice/inbox"
	}
	what := cmp.Or(f.Asked, string(r.Control))
	return c.inbox.Notify(ctx, r.ProposedBy, "decision", href, fmt.Sprintf("Your request for %s was %s.", what, outcome))
}

// VoidRequest closes the pending request of subject, if any, as void, in
// the caller's transaction (which has locked the subject): the flow's
// subject changed in a way that answers or defeats the request (an account
// terminated by other means while its termination waited).
func (c *Controls) VoidRequest(ctx context.Context, f Flow, subject string) error {
	if c == nil || c.requests == nil {
		return emi.Internal(errors.New("controls: no request store configured"))
	}
	r, found, err := c.requests.PendingRequest(ctx, subject, true)
	if err != nil || !found {
		return err
	}
	return c.closeLocked(ctx, f, r, RequestVoid)
}

// RequirePropose and RequireApprove check the decision table's permission
// of a step of control, for a flow that checks it before its own reads.
func RequirePropose(ctx context.Context, control Control) error {
	return kernel.Require(ctx, PolicyOf(control).Propose)
}

// RequireApprove: see RequirePropose.
func RequireApprove(ctx context.Context, control Control) error {
	return kernel.Require(ctx, PolicyOf(control).Approve)
}
