package onboarding

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// ReviewStore is what the underwriters' queue needs beyond applications.
type ReviewStore interface {
	ApplicationStore
	Claim(ctx context.Context, token, staff string, now time.Time) (bool, error)
	Assign(ctx context.Context, token, staff string, now time.Time) error
	TouchClaim(ctx context.Context, token, staff string, now time.Time) error
	NextUnclaimed(ctx context.Context, f emi.QueueFilter, staff string, now time.Time) (string, error)
	Queue(ctx context.Context, f emi.QueueFilter, staff string, now time.Time) (emi.QueuePage, error)
	EvidenceStamp(ctx context.Context, token string) (string, error)
	SetFirstApproval(ctx context.Context, token, staff, reason string, at time.Time) error
	InsertDecision(ctx context.Context, d emi.DecisionRecord) error
	Decisions(ctx context.Context, token string) ([]emi.DecisionRecord, error)
	InsertNote(ctx context.Context, n emi.Note) (int64, error)
	Notes(ctx context.Context, token string) ([]emi.Note, error)
	NoteExists(ctx context.Context, token string, id int64) (bool, error)
	PauseSLA(ctx context.Context, token string, left time.Duration) error
	InsertApplicationFalsePositive(ctx context.Context, partnerID string, key []byte, list, entry, fingerprint, application, reason, by, confirmedBy string, at time.Time) error
	InsertHitDecision(ctx context.Context, application, key, decision, reason, by string, at time.Time) error
	// ConfirmHitDecision and OverrideHitDecision settle a proposed false
	// positive; emi.ErrReviewClosed when none waits.
	ConfirmHitDecision(ctx context.Context, application, key, by string, at time.Time) error
	OverrideHitDecision(ctx context.Context, application, key, decision, reason, by string, at time.Time) error
	// AllDecisions returns decisions made in [from, to), oldest first.
	AllDecisions(ctx context.Context, from, to time.Time, limit int) ([]emi.DecisionRecord, error)
	HitDecisions(ctx context.Context, application string) (map[string]emi.HitDecisionRecord, error)
}

// StaffDirectory finds staff users (assignment targets, mentions).
type StaffDirectory interface {
	StaffByID(ctx context.Context, id string) (staffsvc.StoredStaff, error)
	StaffByEmail(ctx context.Context, email string) (staffsvc.StoredStaff, error)
	ListStaff(ctx context.Context) ([]emi.StaffUser, error)
}

// Review is the underwriters' queue: claims, assignment, decisions with
// four-eyes, information requests and notes.
type Review struct {
	tx       kernel.TxRunner
	store    ReviewStore
	staff    StaffDirectory
	controls *staffsvc.Controls
	checks   *Checks
	events   *kernel.Events
	audit    *kernel.Auditor
	inbox    *staffsvc.Inbox
	now      kernel.Clock

	views   SavedViewStore
	metrics MetricsStore
}

// ReviewDeps is what the review service needs.
type ReviewDeps struct {
	Tx       kernel.TxRunner
	Store    ReviewStore
	Staff    StaffDirectory
	Controls *staffsvc.Controls
	// Checks keeps the review SLA's calendar.
	Checks *Checks
	Events *kernel.Events
	Audit  *kernel.Auditor
	// Inbox is where mentions and assignments reach the person.
	Inbox *staffsvc.Inbox
	// Views keeps saved queue views; Metrics reads the queue's figures.
	Views   SavedViewStore
	Metrics MetricsStore
	Now     kernel.Clock
}

// NewReview returns the review service.
func NewReview(d ReviewDeps) *Review {
	kernel.MustHave("Review", d)
	return &Review{tx: d.Tx, store: d.Store, staff: d.Staff, controls: d.Controls, checks: d.Checks, events: d.Events,
		audit: d.Audit, inbox: d.Inbox, views: d.Views, metrics: d.Metrics, now: d.Now}
}

// Queue returns a page of the queue (emi.PermViewApps).
func (r *Review) Queue(ctx context.Context, f emi.QueueFilter) (emi.QueuePage, error) {
	if err := View.Require(ctx); err != nil {
		return emi.QueuePage{}, err
	}
	switch f.Tab {
	case "", emi.AppInReview, emi.AppInfoRequested, emi.AppChecking:
	default:
		return emi.QueuePage{}, emi.ErrReviewValidation.Field("tab", "must be in_review, information_requested or checking")
	}
	if f.Risk != "" && !slices.Contains(emi.RiskScores, f.Risk) {
		return emi.QueuePage{}, emi.ErrReviewValidation.Field("risk", "must be Low, Medium or High")
	}
	if f.Product != "" && !slices.Contains(emi.Products, f.Product) {
		return emi.QueuePage{}, emi.ErrReviewValidation.Field("product", "is not a product")
	}
	if f.Assignee != "" && f.Assignee != "me" && f.Assignee != "none" && !kernel.ValidToken(f.Assignee) {
		return emi.QueuePage{}, emi.ErrReviewValidation.Field("assignee", "must be me, none or a staff id")
	}
	if f.Sort != "" && f.Sort != "age" && f.Sort != "risk" {
		return emi.QueuePage{}, emi.ErrReviewValidation.Field("sort", "must be age or risk")
	}
	return r.store.Queue(ctx, f, kernel.StaffOf(ctx).ActorID, r.now().UTC())
}

// Claim takes an application for the caller (emi.PermDecideApps): refused
// (emi.ErrReviewClosed, its public detail naming the colleague) while a
// colleague holds a live claim.
func (r *Review) Claim(ctx context.Context, token string) error {
	if err := Decide.Require(ctx); err != nil {
		return err
	}
	me := kernel.StaffOf(ctx).ActorID
	return r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, false)
		if err != nil {
			return err
		}
		ok, err := r.store.Claim(ctx, a.Token, me, r.now().UTC())
		if err != nil {
			return err
		}
		if !ok {
			if a.Status.Decided() {
				return emi.ErrReviewClosed.WithDetail("application is %s", a.Status)
			}
			// Read again: the colleague may have claimed it since a was read.
			if cur, err := r.store.Application(ctx, "", token, false); err == nil {
				a = cur
			}
			e := emi.ErrReviewClosed.WithDetail("claimed by %s", a.Review.Assignee)
			if a.Review.Assignee == "" {
				return e
			}
			return e.WithPublic("%s holds this application, so it was not claimed. "+
				"It is free again when they release it or after 30 minutes without activity.",
				staffName(a.Review.AssigneeName, a.Review.Assignee))
		}
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.claim", ResourceType: "application", ResourceToken: a.Token, PartnerID: a.PartnerID})
	})
}

// Release gives a claim back (the assignee, or an admin with
// emi.PermManageStaff).
func (r *Review) Release(ctx context.Context, token string) error {
	if err := Oversee.Require(ctx); err != nil {
		return err
	}
	me := kernel.StaffOf(ctx)
	return r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		if !mayRelease(me, a.Review.Assignee) {
			return emi.ErrForbidden.WithDetail("only the assignee or an admin releases")
		}
		if err := r.store.Assign(ctx, a.Token, "", r.now().UTC()); err != nil {
			return err
		}
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.release", ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: map[string]any{"from": a.Review.Assignee}})
	})
}

// Assign gives an application to a colleague who may decide, with a
// mandatory reason (an underwriter or an admin).
func (r *Review) Assign(ctx context.Context, token, to, reason string) error {
	if err := Oversee.Require(ctx); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	var bad kernel.Problems
	if len(reason) < 3 {
		bad.Add("reason", "say why you assign it (3 characters or more)")
	}
	target, err := r.staff.StaffByID(ctx, to)
	if err != nil || target.Disabled || !Decide.AllowedForRoles(target.Roles) {
		bad.Add("to", "must be an active colleague who may decide applications")
	}
	if len(bad) > 0 {
		return emi.ErrReviewValidation.WithFields(bad...)
	}
	return r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		if a.Status.Decided() {
			return emi.ErrReviewClosed
		}
		if err := r.store.Assign(ctx, a.Token, target.ID, r.now().UTC()); err != nil {
			return err
		}
		if err := r.inbox.Notify(ctx, target.ID, "assignment", "/backoffice/applications/"+a.Token,
			"Application of "+a.PartnerName+" assigned to you: "+reason); err != nil {
			return err
		}
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.assign", ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: map[string]any{"from": a.Review.Assignee, "to": target.ID, "reason": reason}})
	})
}

// Next claims the oldest matching application nobody holds and returns
// its token ("" when there is none). Two underwriters asking at once get
// different applications, and nobody is handed an application whose first
// approval is theirs (the second must be another person's).
func (r *Review) Next(ctx context.Context, f emi.QueueFilter) (string, error) {
	if err := Decide.Require(ctx); err != nil {
		return "", err
	}
	me := kernel.StaffOf(ctx).ActorID
	var token string
	err := r.tx.InTx(ctx, func(ctx context.Context) error {
		now := r.now().UTC()
		t, err := r.store.NextUnclaimed(ctx, f, me, now)
		if err != nil || t == "" {
			return err
		}
		if _, err := r.store.Claim(ctx, t, me, now); err != nil {
			return err
		}
		token = t
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.claim", ResourceType: "application", ResourceToken: t,
			Changes: map[string]any{"next": true}})
	})
	return token, err
}

// Evidence returns the application as an underwriter sees it, its
// evidence stamp, decisions and notes; the assignee's view keeps the claim
// alive (emi.PermViewApps).
func (r *Review) Evidence(ctx context.Context, token string) (emi.Application, string, []emi.DecisionRecord, []emi.Note, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Application{}, "", nil, nil, err
	}
	a, err := r.store.Application(ctx, "", token, false)
	if err != nil {
		return a, "", nil, nil, err
	}
	stamp, err := r.store.EvidenceStamp(ctx, token)
	if err != nil {
		return a, "", nil, nil, err
	}
	ds, err := r.store.Decisions(ctx, token)
	if err != nil {
		return a, "", nil, nil, err
	}
	ns, err := r.store.Notes(ctx, token)
	if err != nil {
		return a, "", nil, nil, err
	}
	_ = r.store.TouchClaim(ctx, token, kernel.StaffOf(ctx).ActorID, r.now().UTC())
	return a, stamp, ds, ns, nil
}

// NeedsFourEyes reports whether an approval needs two underwriters: a
// High-risk application, or one whose sanctions hits a reviewer cleared.
func NeedsFourEyes(a emi.Application) bool {
	return a.RiskScore == "High" || a.Review.HasSanctionsHit
}

// Decide records an underwriter's decision (emi.PermDecideApps). Only the
// assignee with a live claim decides, on an application in review, and only
// on the evidence it saw (stamp; otherwise emi.ErrReviewStale). Approval of
// a four-eyes application takes two different underwriters; reject needs a
// reason code and text; request_information needs the message for the
// partner. Each decision stores a snapshot of the evidence.
func (r *Review) Decide(ctx context.Context, token string, d emi.ReviewDecision) (emi.Application, error) {
	if err := Decide.Require(ctx); err != nil {
		return emi.Application{}, err
	}
	d.Text, d.ReasonCode = strings.TrimSpace(d.Text), strings.TrimSpace(d.ReasonCode)
	var bad kernel.Problems
	switch d.Action {
	case "approve":
	case "reject":
		if !slices.Contains(emi.RejectReasons, d.ReasonCode) {
			bad.Add("reason_code", "choose a reason from the list")
		}
		if len(d.Text) < 3 {
			bad.Add("text", "explain the rejection")
		}
	case "request_information":
		if len(d.Text) < 3 {
			bad.Add("text", "write the message to the partner")
		}
	default:
		bad.Add("action", "must be approve, reject or request_information")
	}
	if len(d.Text) > 5000 {
		bad.Add("text", "must be at most 5,000 characters")
	}
	if len(bad) > 0 {
		return emi.Application{}, emi.ErrReviewValidation.WithFields(bad...)
	}
	me := kernel.StaffOf(ctx).ActorID
	var out emi.Application
	err := r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		now := r.now().UTC()
		if a.Status != emi.AppInReview {
			e := emi.ErrReviewClosed.WithDetail("application is %s", a.Status)
			if !a.Status.Decided() {
				e = e.WithPublic("The application is %s, not waiting for a decision: nothing was recorded.",
					strings.ReplaceAll(string(a.Status), "_", " "))
			}
			return e
		}
		if !a.Review.ClaimedBy(me, now) {
			return emi.ErrNotAssignee
		}
		stamp, err := r.store.EvidenceStamp(ctx, a.Token)
		if err != nil {
			return err
		}
		if stamp != d.Stamp {
			return emi.ErrReviewStale
		}
		snapshot, err := json.Marshal(map[string]any{"status": a.Status, "risk_score": a.RiskScore, "risk_points": a.RiskPoints,
			"risk_factors": a.RiskFactors, "company": a.Company, "members": a.Members, "checks": a.Checks, "stamp": stamp,
			"first_approval_by": a.Review.FirstApprovalBy})
		if err != nil {
			return emi.Internal(err)
		}
		rec := emi.DecisionRecord{Application: a.Token, ReasonCode: d.ReasonCode, Text: d.Text, StaffID: me, At: now, Snapshot: snapshot}
		switch d.Action {
		case "approve":
			// A hit confirmed as a true match leaves reject (or a
			// compliance decision on the hit) as the only outcomes.
			hits, err := r.store.HitDecisions(ctx, a.Token)
			if err != nil {
				return err
			}
			for key, h := range hits {
				if h.Decision == emi.HitTrueMatch {
					return emi.ErrSanctionsBlocked.WithDetail("hit %s is a true match", key)
				}
			}
			// Every hit waits for its two-person decision first.
			if open := OpenHits(a, hits); len(open) > 0 {
				return emi.ErrSanctionsUndecided.WithDetail("%d hit(s) without a final decision", len(open))
			}
			// An approval is bound to the evidence it was given on; a
			// material change since the first approval voids it, and this
			// approval becomes the first of two.
			if a.Review.FirstApprovalBy != "" {
				void, err := r.firstApprovalVoid(ctx, a.Token, stamp)
				if err != nil {
					return err
				}
				if void {
					if err := r.audit.Record(ctx, emi.AuditEntry{Action: "application.first_approval_voided", ResourceType: "application",
						ResourceToken: a.Token, PartnerID: a.PartnerID, Changes: map[string]any{"first_approval_by": a.Review.FirstApprovalBy,
							"stamp": stamp}}); err != nil {
						return err
					}
					a.Review.FirstApprovalBy = ""
					rec.Text = strings.TrimSpace(d.Text + " (the earlier first approval was void: the evidence changed after it)")
				}
			}
			if NeedsFourEyes(a) && a.Review.FirstApprovalBy == "" {
				rec.Action = "first_approval"
				rec.Text = strings.TrimSpace(rec.Text + "\n\nGrounds: " + ApprovalGrounds(a, hits))
				if err := r.store.SetFirstApproval(ctx, a.Token, me, d.Text, now); err != nil {
					return err
				}
				// The second approval is someone else's: the claim is freed.
				if err := r.store.Assign(ctx, a.Token, "", now); err != nil {
					return err
				}
				break
			}
			if NeedsFourEyes(a) || a.Review.FirstApprovalBy != "" {
				if err := r.controls.Approve(ctx, staffsvc.ControlApplicationApproval, a.Review.FirstApprovalBy); err != nil {
					return err
				}
			}
			rec.Action = "approved"
			grounds := ApprovalGrounds(a, hits)
			rec.Text = strings.TrimSpace(rec.Text + "\n\nGrounds: " + grounds)
			if err := r.checks.approve(ctx, a, me, grounds); err != nil {
				return err
			}
		case "reject":
			rec.Action = "rejected"
			reason := d.ReasonCode + ": " + d.Text
			if err := r.store.SetApplicationStatus(ctx, a.Token, emi.AppRejected, a.Revision, reason, ""); err != nil {
				return err
			}
			if _, err := r.events.Emit(ctx, a.PartnerID, emi.EventApplicationRejected, "application", a.Token,
				map[string]any{"status": emi.AppRejected, "reason": reason}); err != nil {
				return err
			}
		case "request_information":
			rec.Action = "information_requested"
			if err := r.store.SetApplicationStatus(ctx, a.Token, emi.AppInfoRequested, a.Revision, "", ""); err != nil {
				return err
			}
			if err := r.store.SetReviewFlags(ctx, a.Token, true, a.Review.HasSanctionsHit); err != nil {
				return err
			}
			left := time.Duration(0)
			if a.Review.SLADueAt != nil {
				left = r.checks.slaLeft(now, *a.Review.SLADueAt)
			}
			if err := r.store.PauseSLA(ctx, a.Token, left); err != nil {
				return err
			}
			if _, err := r.events.Emit(ctx, a.PartnerID, emi.EventApplicationInfoRequested, "application", a.Token,
				map[string]any{"status": emi.AppInfoRequested, "message": d.Text}); err != nil {
				return err
			}
		}
		if err := r.store.InsertDecision(ctx, rec); err != nil {
			return err
		}
		if err := r.audit.Record(ctx, emi.AuditEntry{Action: "application." + rec.Action, ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: map[string]any{"reason_code": d.ReasonCode, "text": d.Text, "stamp": stamp}}); err != nil {
			return err
		}
		out, err = r.store.Application(ctx, "", a.Token, false)
		return err
	})
	return out, err
}

// firstApprovalVoid reports whether the evidence changed materially since
// the application's latest first approval: its revision (any change by the
// partner: company, members, documents) or its check results (a new row of
// check history). stamp is the current evidence stamp
// (revision.history.first-approval-time); the first approval's decision
// record holds the stamp it was given on.
func (r *Review) firstApprovalVoid(ctx context.Context, token, stamp string) (bool, error) {
	ds, err := r.store.Decisions(ctx, token)
	if err != nil {
		return false, err
	}
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Action != "first_approval" {
			continue
		}
		var snap struct {
			Stamp string `json:"stamp"`
		}
		if err := json.Unmarshal(ds[i].Snapshot, &snap); err != nil {
			return false, emi.Internal(err)
		}
		return evidencePart(snap.Stamp) != evidencePart(stamp), nil
	}
	// A first approval without its record: treat it as void rather than
	// let it count.
	return true, nil
}

// evidencePart is the revision and check-history part of an evidence
// stamp, without the first approval's time.
func evidencePart(stamp string) string {
	if i := strings.LastIndexByte(stamp, '.'); i >= 0 {
		return stamp[:i]
	}
	return stamp
}

var mentionRe = regexp.MustCompile(`@([A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,})`)

// AddNote adds an internal note (a reply when parent is not 0); @e-mail
// addresses of colleagues are recorded as mentions (emi.PermViewApps, staff
// who may decide or review).
func (r *Review) AddNote(ctx context.Context, token string, parent int64, body string) (emi.Note, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Note{}, err
	}
	if err := Annotate.Require(ctx); err != nil {
		return emi.Note{}, err
	}
	p := kernel.StaffOf(ctx)
	body = strings.TrimSpace(body)
	if body == "" || len(body) > 5000 {
		return emi.Note{}, emi.ErrReviewValidation.Field("body", "write 1 to 5,000 characters")
	}
	n := emi.Note{Application: token, Author: p.ActorID, Body: body, CreatedAt: r.now().UTC(), Mentions: []string{}}
	for _, m := range mentionRe.FindAllStringSubmatch(body, -1) {
		if u, err := r.staff.StaffByEmail(ctx, strings.ToLower(m[1])); err == nil && !slices.Contains(n.Mentions, u.ID) {
			n.Mentions = append(n.Mentions, u.ID)
		}
	}
	err := r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, false)
		if err != nil {
			return err
		}
		n.Application = a.Token
		if parent != 0 {
			ok, err := r.store.NoteExists(ctx, a.Token, parent)
			if err != nil {
				return err
			}
			if !ok {
				return emi.ErrReviewValidation.Field("parent", "is not a note of this application")
			}
			n.ParentID = &parent
		}
		if n.ID, err = r.store.InsertNote(ctx, n); err != nil {
			return err
		}
		_ = r.store.TouchClaim(ctx, a.Token, p.ActorID, n.CreatedAt)
		for _, m := range n.Mentions {
			if err := r.inbox.Notify(ctx, m, "mention", fmt.Sprintf("/backoffice/applications/%s#note-%d", a.Token, n.ID),
				"Mentioned in a note on the application of "+a.PartnerName+": "+n.Body); err != nil {
				return err
			}
		}
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.note", ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: map[string]any{"note": n.ID, "mentions": n.Mentions}})
	})
	return n, err
}

// HitKey identifies a sanctions hit of an application's check.
func HitKey(h map[string]any) string {
	subject, _ := h["member"].(string)
	if subject == "" {
		subject = "company"
	}
	return fmt.Sprint(h["list"]) + "|" + fmt.Sprint(h["entry_id"]) + "|" + subject + "|" + fmt.Sprint(h["fingerprint"])
}

// HitDecisions returns the decisions on an application's sanctions hits by
// hit key (emi.PermViewApps).
func (r *Review) HitDecisions(ctx context.Context, token string) (map[string]emi.HitDecisionRecord, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return r.store.HitDecisions(ctx, token)
}

// DecideHit records a decision on one sanctions hit of an application's
// check, with a mandatory reason (underwriters and compliance). A true
// match is one person's decision, and blocks approval; a false positive
// takes two people (ControlHitFalsePositive): the first decision proposes
// it, and the hit stays undecided until a second, distinct person with the
// compliance permission confirms it (the same call with decision
// false_positive) or contradicts it (true_match). Only a confirmed false
// positive is remembered for that person and list entry, so a remembered
// decision never stands in for a second person.
func (r *Review) DecideHit(ctx context.Context, token, key, decision, reason string) error {
	p := kernel.StaffOf(ctx)
	if err := staffsvc.DecideOp(staffsvc.ControlHitFalsePositive).Require(ctx); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	var bad kernel.Problems
	if decision != emi.HitFalsePositive && decision != emi.HitTrueMatch {
		bad.Add("decision", "must be false_positive or true_match")
	}
	if len(reason) < 3 || len(reason) > 2000 {
		bad.Add("reason", "every decision needs a reason (3 to 2,000 characters)")
	}
	if len(bad) > 0 {
		return emi.ErrReviewValidation.WithFields(bad...)
	}
	return r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, "", token, true)
		if err != nil {
			return err
		}
		if a.Status.Decided() {
			return emi.ErrReviewClosed
		}
		var hit map[string]any
		for _, c := range a.Checks {
			if c.Name != emi.CheckSanctions {
				continue
			}
			hs, _ := c.Details["hits"].([]any)
			for _, x := range hs {
				if h, ok := x.(map[string]any); ok && HitKey(h) == key {
					hit = h
				}
			}
		}
		if hit == nil {
			return emi.ErrReviewValidation.Field("hit", "is not a hit of this application's sanctions check")
		}
		decided, err := r.store.HitDecisions(ctx, a.Token)
		if err != nil {
			return err
		}
		now := r.now().UTC()
		changes := map[string]any{"hit": key, "decision": decision, "reason": reason}
		subject := hitSubject(a.Token, key)
		audited := false
		switch prev, found := decided[key]; {
		case !found:
			if err := r.store.InsertHitDecision(ctx, a.Token, key, decision, reason, p.ActorID, now); err != nil {
				return err
			}
			if decision == emi.HitFalsePositive {
				// Proposed: the lifecycle records it (HitFlow).
				if _, err := r.controls.ProposeRequest(ctx, HitFlow, staffsvc.Proposal{Subject: subject, ResourceType: "application",
					ResourceToken: a.Token, PartnerID: a.PartnerID, Reason: reason,
					Changes: map[string]any{"hit": key, "decision": decision}}); err != nil {
					return err
				}
				audited = true
			}
		case prev.Final():
			return emi.ErrReviewClosed.WithDetail("hit already decided")
		case decision == emi.HitFalsePositive:
			// The second person of a proposed false positive.
			if _, err := r.controls.ApproveRequest(ctx, HitFlow, subject, staffsvc.Approval{Note: reason,
				Apply: func(ctx context.Context, req staffsvc.Request) (map[string]any, error) {
					if err := r.store.ConfirmHitDecision(ctx, a.Token, key, p.ActorID, now); err != nil {
						return nil, err
					}
					if kernel.SandboxPlayed(prev.StaffID, p.ActorID) {
						// The sandbox's played reviewers answer this
						// application only (kernel.SandboxPlayed).
						return map[string]any{"hit": key, "decision": decision, "confirmation": reason}, nil
					}
					pk, _ := hit["person_key"].(string)
					raw, _ := hexDecode(pk)
					if err := r.store.InsertApplicationFalsePositive(ctx, a.PartnerID, raw, fmt.Sprint(hit["list"]), fmt.Sprint(hit["entry_id"]),
						fmt.Sprint(hit["fingerprint"]), a.Token, prev.Reason, prev.StaffID, p.ActorID, now); err != nil {
						return nil, err
					}
					return map[string]any{"hit": key, "decision": decision, "confirmation": reason}, nil
				}}); err != nil {
				return err
			}
			audited = true
		default:
			// A true match contradicts the proposal: the stricter outcome
			// needs no second person, and voids the proposal.
			if err := r.controls.VoidRequest(ctx, HitFlow, subject); err != nil {
				return err
			}
			if err := r.store.OverrideHitDecision(ctx, a.Token, key, decision, reason, p.ActorID, now); err != nil {
				return err
			}
			changes["proposed_false_positive_by"] = prev.StaffID
		}
		if err := r.store.SetReviewFlags(ctx, a.Token, a.Review.ManualReview, true); err != nil {
			return err
		}
		// The risk includes the screening: recompute it with this decision.
		if err := r.checks.Rescore(ctx, a); err != nil {
			return err
		}
		_ = r.store.TouchClaim(ctx, a.Token, p.ActorID, now)
		if audited {
			return nil
		}
		return r.audit.Record(ctx, emi.AuditEntry{Action: "application.hit_decided", ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: changes})
	})
}

// HitFlow is a false positive on a sanctions hit of an application
// (staff.ControlHitFalsePositive): the first person proposes it, a second,
// distinct one with the compliance permission confirms it, and only a
// confirmed false positive is remembered. A true match, one person's
// decision, voids a proposal waiting on the hit.
var HitFlow = staffsvc.DeclareFlow(staffsvc.Flow{
	Control:   staffsvc.ControlHitFalsePositive,
	Asked:     "a false positive on this hit",
	Changed:   "the hit's decision",
	Proposed:  "application.hit_false_positive_proposed",
	Approved:  "application.hit_false_positive_confirmed",
	Rejected:  "application.hit_false_positive_rejected",
	Withdrawn: "application.hit_false_positive_withdrawn",
	Voided:    "application.hit_false_positive_overridden",
	// The code the back office knew before the lifecycle.
	Codes: staffsvc.RequestCodes{Pending: emi.ErrReviewClosed, Closed: emi.ErrReviewClosed},
	Href:  func(r staffsvc.Request) string { return "/backoffice/applications/" + r.ResourceToken },
})

func hitSubject(application, key string) string {
	return staffsvc.SubjectOf("hit", application+":"+key)
}

// HitCapability answers what the signed-in person may record on one
// sanctions hit of an application, now, and why not.
type HitCapability struct {
	// Decide: they may record a decision (a true match at least).
	Decide bool
	// FalsePositive: they may record a false positive: propose it (no
	// decision yet) or confirm one proposed by a distinct person.
	FalsePositive bool
	// Pending: a proposed false positive waits for a second person.
	Pending bool
	// WhyNot says why a decision, or the false positive, is refused.
	WhyNot string
}

// HitCapabilities answers for each sanctions hit of application a (by hit
// key), with decided the hits' decisions (HitDecisions): the rules of
// DecideHit, the decision engine's distinct-people rule included, so the
// back office offers exactly what DecideHit accepts.
func (r *Review) HitCapabilities(ctx context.Context, a emi.Application, decided map[string]emi.HitDecisionRecord) map[string]HitCapability {
	p, pol := kernel.StaffOf(ctx), staffsvc.PolicyOf(staffsvc.ControlHitFalsePositive)
	out := map[string]HitCapability{}
	for _, c := range a.Checks {
		if c.Name != emi.CheckSanctions {
			continue
		}
		hs, _ := c.Details["hits"].([]any)
		for _, x := range hs {
			h, ok := x.(map[string]any)
			if !ok {
				continue
			}
			key := HitKey(h)
			prev, found := decided[key]
			var hc HitCapability
			switch {
			case a.Status.Decided():
				hc.WhyNot = "the application is decided"
			case !p.Can(pol.Propose) && !p.Can(pol.Approve):
				hc.WhyNot = "your role does not decide sanctions hits"
			case !found:
				hc.Decide, hc.FalsePositive = true, p.Can(pol.Propose)
				if !hc.FalsePositive {
					hc.WhyNot = "Proposing a false positive needs an underwriter (" + string(pol.Propose) + "); you may record a true match."
				}
			case prev.Final():
				hc.WhyNot = "the hit is decided"
			default:
				// A proposed false positive: a true match overrides it
				// (the stricter outcome needs no second person); the
				// confirmation is the decision engine's to allow.
				hc.Decide, hc.Pending = true, true
				req, pending, err := r.controls.PendingRequest(ctx, hitSubject(a.Token, key))
				can := staffsvc.RequestCapability{}
				if err == nil && pending {
					can = r.controls.RequestCapabilities(ctx, req)
				}
				switch {
				case err != nil || !pending:
					hc.WhyNot = "Whether you may confirm it could not be checked now: try again."
				case can.WhyNotApprove != "":
					hc.WhyNot = can.WhyNotApprove
				case !can.Approve:
					hc.WhyNot = "Confirming a false positive needs a compliance officer (" + string(pol.Approve) + ")."
				default:
					hc.FalsePositive = true
				}
			}
			out[key] = hc
		}
	}
	return out
}

// OpenHits returns the keys of the application's current sanctions hits
// that have no final decision (a true match, or a confirmed false
// positive).
func OpenHits(a emi.Application, decided map[string]emi.HitDecisionRecord) []string {
	var open []string
	for _, c := range a.Checks {
		if c.Name != emi.CheckSanctions {
			continue
		}
		hs, _ := c.Details["hits"].([]any)
		for _, x := range hs {
			if h, ok := x.(map[string]any); ok {
				if d, found := decided[HitKey(h)]; !found || !d.Final() {
					open = append(open, HitKey(h))
				}
			}
		}
	}
	return open
}

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

// Assignees returns the active colleagues who may decide applications, for
// the assign form (underwriters and admins).
func (r *Review) Assignees(ctx context.Context) ([]emi.StaffUser, error) {
	if err := Oversee.Require(ctx); err != nil {
		return nil, err
	}
	return ActiveStaffWith(ctx, r.staff, emi.PermDecideApps)
}

// ActiveStaffWith returns the active staff users holding perm (id, name,
// e-mail, roles): the colleagues a case may be assigned to.
func ActiveStaffWith(ctx context.Context, dir StaffDirectory, perm emi.Permission) ([]emi.StaffUser, error) {
	all, err := dir.ListStaff(ctx)
	if err != nil {
		return nil, err
	}
	var out []emi.StaffUser
	for _, u := range all {
		if !u.Disabled && emi.Can(u.Roles, perm) {
			out = append(out, emi.StaffUser{ID: u.ID, Name: u.Name, Email: u.Email, Roles: u.Roles})
		}
	}
	return out, nil
}

// Decisions returns the decisions made between from and to, oldest first,
// at most limit (1..100,000), for the decisions export (emi.PermViewApps).
func (r *Review) Decisions(ctx context.Context, from, to time.Time, limit int) ([]emi.DecisionRecord, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 100000 {
		limit = 100000
	}
	return r.store.AllDecisions(ctx, from, to, limit)
}

// AuditTrail returns the audit rows of an application, newest first, for
// the staff who review applications (emi.PermViewApps).
func (r *Review) AuditTrail(ctx context.Context, token string) ([]emi.AuditEntry, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return r.audit.Trail(ctx, emi.AuditFilter{ResourceType: "application", ResourceToken: token, Limit: 200})
}
