package onboarding

import (
	"context"
	"fmt"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// ApplicationCapability answers "what may this person do to this
// application, now, and if not, why?" by the rules of Claim, Release,
// Assign, Decide, Note and the corrections, the decision engine's
// distinct-people rule included: the back office offers exactly these.
type ApplicationCapability struct {
	Claim, Release, Assign bool
	// Decide: reject or request information (and approve when Approve).
	Decide bool
	// WhyNotDecide says why Decide is false, in words.
	WhyNotDecide string
	// Approve: an approval (first or second) would be accepted.
	Approve bool
	// WhyNotApprove says why an approval would be refused although Decide
	// holds (the first approval was theirs, or a link to its author).
	WhyNotApprove string
	// Annotate: write a note; Correct: correct the company or a member.
	Annotate, Correct bool
}

// The reasons an application's decision is refused (ApplicationCapability).
const (
	WhyNotDecideRole    = "Your roles do not decide applications."
	WhyNotDecideClaim   = "Claim this application to decide it: only the underwriter who holds it decides."
	whyNotDecideStatus  = "Decisions are made once the application is in review (it is %s)."
	whyNotApproveUnread = "Whether you may give the second approval could not be checked now: try again."
)

// ApplicationCapabilities answers for the staff member of ctx and a
// (as read for the page).
func (r *Review) ApplicationCapabilities(ctx context.Context, a emi.Application) ApplicationCapability {
	me := kernel.StaffOf(ctx)
	now := r.now().UTC()
	rs := a.Review
	var out ApplicationCapability
	if a.Status.Decided() {
		out.WhyNotDecide = "The application is decided."
		return out
	}
	decide := Decide.AllowedFor(me)
	out.Claim = decide && !rs.Claimed(now)
	out.Release = rs.Claimed(now) && mayRelease(me, rs.Assignee)
	out.Assign = Oversee.AllowedFor(me)
	out.Annotate, out.Correct = Annotate.AllowedFor(me), Correct.AllowedFor(me)
	switch {
	case !decide:
		out.WhyNotDecide = WhyNotDecideRole
		return out
	case a.Status != emi.AppInReview:
		out.WhyNotDecide = fmt.Sprintf(whyNotDecideStatus, strings.ReplaceAll(string(a.Status), "_", " "))
		return out
	}
	// Whether an approval would be accepted is said even before the
	// claim (the first approver reads why they cannot give the second).
	out.WhyNotApprove = r.whyNotApprove(ctx, a)
	if !rs.ClaimedBy(me.ActorID, now) {
		out.WhyNotDecide = WhyNotDecideClaim
		return out
	}
	out.Decide = true
	out.Approve = out.WhyNotApprove == ""
	return out
}

// WhyNotApproveMine is what the first approver reads: the second approval
// is someone else's.
const WhyNotApproveMine = "You gave the first approval: another underwriter must give the second."

// whyNotApprove says why Decide would refuse this person's approval of a
// ("" when it would accept it): the decision engine's answer about the
// first approver, unless the evidence moved past the first approval (then
// this approval would be the first again).
func (r *Review) whyNotApprove(ctx context.Context, a emi.Application) string {
	first := a.Review.FirstApprovalBy
	if first == "" {
		return ""
	}
	if stamp, err := r.store.EvidenceStamp(ctx, a.Token); err == nil {
		if void, err := r.firstApprovalVoid(ctx, a.Token, stamp); err == nil && void {
			return ""
		}
	}
	err := r.controls.Approve(ctx, staffsvc.ControlApplicationApproval, first)
	switch {
	case err == nil:
		return ""
	case first == kernel.StaffOf(ctx).ActorID:
		return WhyNotApproveMine
	}
	if why := strings.TrimSuffix(emi.AsError(err).Public, " Nothing was changed."); why != "" {
		return why
	}
	return whyNotApproveUnread
}

// mayRelease: the underwriter who holds an application gives it back;
// whoever manages staff gives back anyone's (Release).
func mayRelease(me emi.Principal, assignee string) bool {
	return Oversee.AllowedFor(me) && (assignee == me.ActorID || staffsvc.ManageStaff.AllowedFor(me))
}
