package staff

import (
	"context"
	"errors"
	"slices"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Control names a sensitive decision that more than one person takes.
type Control string

// The controls. Each has one row in Policies.
const (
	// ControlApplicationApproval: the second approval of a four-eyes
	// application.
	ControlApplicationApproval Control = "application.approve"
	// ControlAdjustment: approving a manual credit or debit of a balance.
	ControlAdjustment Control = "adjustment.approve"
	// ControlTransferReversal: approving the reversal of an internal
	// transfer.
	ControlTransferReversal Control = "transfer.reverse"
	// ControlAccountTermination: approving an account's termination.
	ControlAccountTermination Control = "account.terminate"
	// ControlHitFalsePositive: confirming a false positive proposed on a
	// sanctions hit inside an application (a wrongly cleared hit lets a
	// listed person in).
	ControlHitFalsePositive Control = "application.hit_false_positive"
	// ControlAMLHitFalsePositive: confirming a false positive proposed on
	// an API check's hit scoring emi.TwoPersonHitScore or more.
	ControlAMLHitFalsePositive Control = "aml_check.hit_false_positive"
	// ControlStaffPrivileged: approving a privileged staff change (a user
	// with, or a grant of, a role holding an emi.PrivilegedPermissions
	// permission, or the credential reset of such a user) that another
	// administrator proposed (so no one administrator alone hands out
	// privileged access).
	ControlStaffPrivileged Control = "staff.privileged_change"
	// ControlStaffPrivilegeRemoval: approving the removal of a privileged
	// role or the disabling of a user who holds one or held one in the last
	// StaffLinkWindow, proposed by another administrator (one administrator
	// alone could lock out the others or strip a colleague before taking
	// them over).
	ControlStaffPrivilegeRemoval Control = "staff.privilege_removal"
	// ControlStaffSuspension: confirming one administrator's suspension of
	// a colleague, so that it outlasts emi.SuspensionTTL.
	ControlStaffSuspension Control = "staff.suspension_confirm"
	// ControlSuspenseAssign: approving the assignment of a suspense item
	// (money received for no usable balance) to a balance (one person alone
	// could credit it to an account of their choosing).
	ControlSuspenseAssign Control = "suspense.assign"
	// ControlProgramRisk: approving a program change that moves risk (an
	// overdraft turned on, the AML check for cards turned off) that another
	// administrator proposed (one administrator alone may not raise a
	// program's risk).
	ControlProgramRisk Control = "program.risk_change"
	// ControlKYCDecision: approving or rejecting a submitted KYC session.
	// One person decides; the partner-facing reason and the internal note
	// are kept apart (the note may say what the partner must not see).
	ControlKYCDecision Control = "kyc.decide"
	// ControlMonitoringRule: applying a change of a transaction
	// monitoring rule (a parameter, the score, on, off or shadow) that
	// another compliance officer proposed: one officer alone could switch
	// off the rule that watches a customer.
	ControlMonitoringRule Control = "monitoring.rule_change"
	// ControlHeldTransfer: releasing or returning a transfer that
	// transaction monitoring held for review. One compliance officer
	// decides, never the transfer's initiator nor anyone linked to them.
	ControlHeldTransfer Control = "monitoring.held_transfer"
	// ControlReport: approving (and so filing) a suspicious transaction
	// report another compliance officer drafted from a case.
	ControlReport Control = "monitoring.report"
)

// ControlPolicy is one row of the decision table: who may propose, who may
// approve, how many distinct people the decision takes (the proposer
// counts), and what an approval is bound to.
type ControlPolicy struct {
	Control Control
	// Propose and Approve are the permissions of the first person and of
	// every further one.
	Propose, Approve emi.Permission
	// People is the number of distinct people (see Controls.Distinct).
	People int
	// BoundTo is what an approval is bound to: a change to it voids the
	// approvals given before.
	BoundTo string
}

// Policies is the decision table: the one place that says who takes each
// sensitive decision. Services check these permissions and the portal's
// routes are guarded by the same ones (PolicyOf).
var Policies = []ControlPolicy{
	{Control: ControlApplicationApproval, Propose: emi.PermDecideApps, Approve: emi.PermDecideApps, People: 2,
		BoundTo: "the application's evidence stamp (company, members, documents, check results)"},
	{Control: ControlAdjustment, Propose: emi.PermManageMoney, Approve: emi.PermManageMoney, People: 2,
		BoundTo: "the request (account, balance, direction, amount, currency); it cannot be edited"},
	{Control: ControlTransferReversal, Propose: emi.PermManageMoney, Approve: emi.PermManageMoney, People: 2,
		BoundTo: "the transfer, which cannot change once completed"},
	{Control: ControlHitFalsePositive, Propose: emi.PermDecideApps, Approve: emi.PermReviewAML, People: 2,
		BoundTo: "the hit: list entry as screened (fingerprint) and the person; a re-screening raises a new hit"},
	{Control: ControlAMLHitFalsePositive, Propose: emi.PermReviewAML, Approve: emi.PermReviewAML, People: 2,
		BoundTo: "the hit of the check: list entry as screened (fingerprint) and the person"},
	{Control: ControlAccountTermination, Propose: emi.PermManageAccounts, Approve: emi.PermManageAccounts, People: 2,
		BoundTo: "the request (account and reason); it cannot be edited"},
	{Control: ControlStaffPrivileged, Propose: emi.PermManageStaff, Approve: emi.PermManageStaff, People: 2,
		BoundTo: "the change (user, roles, the temporary password's hash) and the user's roles when proposed; a change to them voids it, and it lapses after 7 days"},
	{Control: ControlStaffPrivilegeRemoval, Propose: emi.PermManageStaff, Approve: emi.PermManageStaff, People: 2,
		BoundTo: "the change (user, roles or disable) and the user's roles when proposed; a change to them voids it, and it lapses after 7 days"},
	{Control: ControlStaffSuspension, Propose: emi.PermManageStaff, Approve: emi.PermManageStaff, People: 2,
		BoundTo: "the suspension in force (user, suspender, time and reason); lifted or lapsed after 24 h, it cannot be confirmed"},
	{Control: ControlSuspenseAssign, Propose: emi.PermManageMoney, Approve: emi.PermManageMoney, People: 2,
		BoundTo: "the request (item, target balance and account, reason); it cannot be edited"},
	{Control: ControlKYCDecision, Propose: emi.PermReviewKYC, Approve: emi.PermReviewKYC, People: 1,
		BoundTo: "the session as submitted (documents and identity data); a decided session cannot change"},
	{Control: ControlProgramRisk, Propose: emi.PermManagePrograms, Approve: emi.PermManagePrograms, People: 2,
		BoundTo: "the proposed settings and the program's version when proposed: any other change to the program voids it"},
	{Control: ControlMonitoringRule, Propose: emi.PermReviewAML, Approve: emi.PermReviewAML, People: 2,
		BoundTo: "the proposed version and the rule's version in force when proposed: another change of the rule voids it"},
	{Control: ControlHeldTransfer, Propose: emi.PermReviewAML, Approve: emi.PermReviewAML, People: 1,
		BoundTo: "the held transfer and the hits that held it; the decider is never its initiator"},
	{Control: ControlReport, Propose: emi.PermReviewAML, Approve: emi.PermFileReports, People: 2,
		BoundTo: "the draft (narrative, action, transactions) as submitted: an edit of the draft voids it"},
}

// PolicyOf returns the row of c. It panics on an unknown control: the
// table is static, so that is a programming error found by any test.
func PolicyOf(c Control) ControlPolicy {
	i := slices.IndexFunc(Policies, func(p ControlPolicy) bool { return p.Control == c })
	if i < 0 {
		panic("service: no policy for control " + string(c))
	}
	return Policies[i]
}

// StaffLinkWindow is how long a staff user stays linked to the
// administrator who created them, reset their credentials, changed their
// roles, disabled or suspended them: during it, the two never count as two
// people. It is also how long a user who lost a privileged role is still
// treated as privileged.
const StaffLinkWindow = 30 * 24 * time.Hour

// StaffLinkStore answers who set up a staff user's access.
type StaffLinkStore interface {
	// StaffControllers returns, for each of ids that has any, the staff
	// users who created it, reset its credentials, changed its roles,
	// disabled or suspended it at or after since (the audit log's
	// staff.create, staff.reset_credentials, staff.set_roles, staff.disable
	// and staff.suspend rows by staff actors, and their proposers).
	StaffControllers(ctx context.Context, ids []string, since time.Time) (map[string][]string, error)
}

// Controls is the decision engine's check of people: every approval of a
// sensitive decision goes through Approve, which checks the approver's
// permission and that the approver is a person distinct from everyone who
// took part before.
//
// Distinct means more than another user id. An administrator who created a
// staff user, reset their credentials or changed their roles may hold (or
// have held) a working set of that user's credentials, so for
// StaffLinkWindow the two count as one person, and so do two users set up
// by the same administrator: each participant stands for the set of itself
// and the administrators linked to it, and two participants are distinct
// only when their sets do not meet. This is what stops one admin from
// minting money with two users they created.
//
// The engine also runs the lifecycle of the requests these decisions take
// (requests.go): propose, approve, reject, withdraw, lapse, void.
type Controls struct {
	links    StaffLinkStore
	tx       kernel.TxRunner
	requests RequestStore
	audit    *kernel.Auditor
	inbox    *Inbox
	now      kernel.Clock
}

// ControlsDeps is what Controls needs; NewControls checks that none is nil.
type ControlsDeps struct {
	Links    StaffLinkStore
	Tx       kernel.TxRunner
	Requests RequestStore
	Audit    *kernel.Auditor
	Inbox    *Inbox
	Now      kernel.Clock
}

// NewControls returns the engine.
func NewControls(d ControlsDeps) *Controls {
	kernel.MustHave("Controls", d)
	return &Controls{links: d.Links, tx: d.Tx, requests: d.Requests, audit: d.Audit, inbox: d.Inbox, now: d.Now}
}

// Approve checks that the principal may give an approval of c after the
// participants (the proposer and earlier approvers, by staff id): it holds
// c's approve permission (emi.ErrForbidden) and is a person distinct from
// each of them (emi.ErrFourEyes). A nil engine refuses: a control never
// fails open.
func (c *Controls) Approve(ctx context.Context, control Control, participants ...string) error {
	pol := PolicyOf(control)
	if err := kernel.Require(ctx, pol.Approve); err != nil {
		return err
	}
	if c == nil {
		return emi.Internal(errors.New("controls: no decision engine configured"))
	}
	return c.Distinct(ctx, kernel.StaffOf(ctx).ActorID, participants...)
}

// The refusals of Distinct, as the person refused reads them (the public
// sentence of its emi.ErrFourEyes): each says the real reason, so nobody is
// told "you asked for this" when the engine refused them for a link they
// may not know about. The internal detail names the staff ids.
const (
	// RefusedTookPart: the person proposed or already approved this.
	RefusedTookPart = "You already took part in this decision (you proposed it or approved it): another person must take the next step. Nothing was changed."
	// RefusedYouSetThemUp: the person created, reset or changed the roles
	// of someone who took part.
	RefusedYouSetThemUp = "You cannot take this step: you created, reset, changed the roles of, disabled or suspended someone who already took part in this decision within the last 30 days, so the two of you count as one person. Another person must. Nothing was changed."
	// RefusedTheySetYouUp: someone who took part created, reset or changed
	// the roles of the person.
	RefusedTheySetYouUp = "You cannot take this step: someone who already took part in this decision created, reset, changed the roles of, disabled or suspended you within the last 30 days, so the two of you count as one person. Another person must. Nothing was changed."
	// RefusedSameAdministrator: one administrator set up both.
	RefusedSameAdministrator = "You cannot take this step: the same administrator created, reset, changed the roles of, disabled or suspended both you and someone who already took part in this decision within the last 30 days, so the two of you count as one person. Another person must. Nothing was changed."
)

// Distinct returns emi.ErrFourEyes unless me is a person distinct from
// each participant (see Controls). Empty participants are ignored.
func (c *Controls) Distinct(ctx context.Context, me string, participants ...string) error {
	if c == nil {
		return emi.Internal(errors.New("controls: no decision engine configured"))
	}
	others := slices.DeleteFunc(slices.Clone(participants), func(s string) bool { return s == "" })
	if slices.Contains(others, me) {
		return emi.ErrFourEyes.WithDetail("%s took part already", me).WithPublic("%s", RefusedTookPart)
	}
	if len(others) == 0 {
		return nil
	}
	ids := append([]string{me}, others...)
	controllers, err := c.links.StaffControllers(ctx, ids, c.now().Add(-StaffLinkWindow))
	if err != nil {
		return err
	}
	return distinctGiven(me, others, controllers)
}

// distinctGiven is Distinct's rule with the administrators' links read
// (controllers, by staff id); me is not among others.
func distinctGiven(me string, others []string, controllers map[string][]string) error {
	mine := append([]string{me}, controllers[me]...)
	for _, o := range others {
		theirs := append([]string{o}, controllers[o]...)
		for _, x := range mine {
			if slices.Contains(theirs, x) {
				public := RefusedSameAdministrator
				switch x {
				case me:
					public = RefusedYouSetThemUp
				case o:
					public = RefusedTheySetYouUp
				}
				return emi.ErrFourEyes.WithDetail("%s and %s are linked through %s (created, reset, granted, disabled or suspended within %s)",
					me, o, x, StaffLinkWindow).WithPublic("%s", public)
			}
		}
	}
	return nil
}
