package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"emi/internal/emi"
)

// The sandbox outcomes (issue 21, item 6): a partner testing its handling
// of user.kyc_updated, aml_check.reviewed and the application decisions
// needs the human decisions a sandbox has nobody to make. These methods
// make them through the very service methods the back office calls
// (KYC.Decide, AML.Decide, Review.Claim and Review.Decide), as staff
// principals the sandbox plays, so the states, events, audit rows and
// rules (four eyes included) are those of a real decision. The API offers
// them only in EMI_MODE=sandbox.

// SandboxOutcomes makes the sandbox's human decisions. It exists only in a
// sandbox: NewSandboxOutcomes refuses to build it otherwise, so a
// production instance has no object through which the fixed sandbox
// reviewers (who satisfy every two-person rule between them) could
// decide anything, whatever routes are mounted. The API's sandboxOnly
// guard answers 404 before that; this is the second wall.
type SandboxOutcomes struct {
	kyc    *KYC
	aml    *AML
	review *Review
}

// SandboxOutcomesDeps is what NewSandboxOutcomes needs; Sandbox is the
// instance's mode (config.ModeSandbox).
type SandboxOutcomesDeps struct {
	Sandbox bool
	KYC     *KYC
	AML     *AML
	Review  *Review
}

// ErrNotSandbox is NewSandboxOutcomes' refusal outside a sandbox.
var ErrNotSandbox = errors.New("sandbox outcomes exist only in EMI_MODE=sandbox")

// NewSandboxOutcomes returns the sandbox decisions, or ErrNotSandbox
// when d.Sandbox is false.
func NewSandboxOutcomes(d SandboxOutcomesDeps) (*SandboxOutcomes, error) {
	if !d.Sandbox {
		return nil, ErrNotSandbox
	}
	mustHave("SandboxOutcomes", d)
	return &SandboxOutcomes{kyc: d.KYC, aml: d.AML, review: d.Review}, nil
}

// KYCDecide decides the calling partner's user's open identification
// session (sandbox_kyc_decide; see KYC.sandboxDecide).
func (s *SandboxOutcomes) KYCDecide(ctx context.Context, userToken string, in emi.SandboxKYCDecision) (emi.KYCSession, error) {
	return s.kyc.sandboxDecide(ctx, userToken, in)
}

// AMLReview decides the open hits of the calling partner's AML check
// (sandbox_aml_review; see AML.sandboxReview).
func (s *SandboxOutcomes) AMLReview(ctx context.Context, token string, in emi.SandboxAMLReview) (emi.AMLCheck, error) {
	return s.aml.sandboxReview(ctx, token, in)
}

// ApplicationDecide decides the calling partner's application in review
// (sandbox_application_decide; see Review.sandboxDecide).
func (s *SandboxOutcomes) ApplicationDecide(ctx context.Context, token string, in emi.SandboxApplicationDecision) (emi.Application, error) {
	return s.review.sandboxDecide(ctx, token, in)
}

// Sandbox reviewers: the two people the sandbox plays. Two, because a
// false positive on a strong sanctions hit and the approval of a High-risk
// application take two distinct people; they are system principals (no
// staff account, no sign-in), and every row they write names these ids.
const (
	SandboxReviewerID       = "00000000-0000-7000-8000-5a2db0000001"
	SandboxSecondReviewerID = "00000000-0000-7000-8000-5a2db0000002"
)

// sandboxAs returns ctx with a sandbox reviewer as the principal, keeping
// the request's metadata for the audit log.
func sandboxAs(ctx context.Context, id string) context.Context {
	return emi.WithPrincipal(ctx, emi.Principal{Type: emi.ActorSystem, ActorID: id})
}

// sandboxPartner returns the calling partner.
func sandboxPartner(ctx context.Context, notFound *emi.Error) (emi.Principal, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || !p.IsPartner() {
		return emi.Principal{}, notFound
	}
	return p, nil
}

// sandboxDecide decides the user's open identification session as
// compliance would: approved, or rejected with reason (sent to the
// partner in user.kyc_updated). A pending session (the person never
// uploaded) is first marked submitted, as the hosted page does. Returns
// emi.ErrUserNotFound for an unknown or foreign user and
// emi.ErrNoOpenKYCSession when there is no session to decide.
func (k *KYC) sandboxDecide(ctx context.Context, userToken string, in emi.SandboxKYCDecision) (emi.KYCSession, error) {
	p, err := sandboxPartner(ctx, emi.ErrUserNotFound)
	if err != nil {
		return emi.KYCSession{}, err
	}
	var bad problems
	checkOutcome(&bad, in.Outcome, "approved", "rejected")
	reason := sandboxText(&bad, "reason", in.Reason, "Sandbox decision: "+in.Outcome, 2000)
	if len(bad) > 0 {
		return emi.KYCSession{}, emi.ErrValidation.WithFields(bad...)
	}
	approve := in.Outcome == "approved"
	var out emi.KYCSession
	err = k.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := k.users.UserForUpdate(ctx, p.PartnerID, userToken)
		if err != nil {
			return err
		}
		s, _, err := k.store.OpenKYCSession(ctx, u.Token)
		if errors.Is(err, emi.ErrKYCSessionNotFound) {
			return emi.ErrNoOpenKYCSession
		}
		if err != nil {
			return err
		}
		if err := k.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.kyc_decide", ResourceType: "kyc_session", ResourceToken: s.Token,
			PartnerID: p.PartnerID, Changes: map[string]any{"user": u.Token, "approve": approve}}); err != nil {
			return err
		}
		if s.Status == emi.KYCPending {
			if err := k.setStatus(ctx, &s, emi.KYCSubmitted, k.now().UTC()); err != nil {
				return err
			}
		}
		note := ""
		if !approve {
			note = "sandbox decision requested by partner API key " + p.ActorID
		}
		out, err = k.Decide(sandboxAs(ctx, SandboxReviewerID), s.Token, emi.KYCDecision{Approve: approve, Reason: reason, InternalNote: note})
		return err
	})
	return out, err
}

// sandboxReview decides every open hit of an AML check as compliance
// would: "cleared" (each a false positive; a strong hit takes the
// sandbox's two reviewers, as the two-person rule wants) or "confirmed"
// (each a true match). aml_check.reviewed follows. Returns
// emi.ErrAPIAMLNotFound for an unknown or foreign check and
// emi.ErrAMLNothingToReview when no hit waits.
func (a *AML) sandboxReview(ctx context.Context, token string, in emi.SandboxAMLReview) (emi.AMLCheck, error) {
	p, err := sandboxPartner(ctx, emi.ErrAPIAMLNotFound)
	if err != nil {
		return emi.AMLCheck{}, err
	}
	var bad problems
	checkOutcome(&bad, in.Outcome, "cleared", "confirmed")
	reason := sandboxText(&bad, "reason", in.Reason, "Sandbox review: "+in.Outcome, 2000)
	if len(bad) > 0 {
		return emi.AMLCheck{}, emi.ErrValidation.WithFields(bad...)
	}
	outcome := in.Outcome
	decision := emi.HitFalsePositive
	if outcome == "confirmed" {
		decision = emi.HitTrueMatch
	}
	var out emi.AMLCheck
	err = a.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := a.store.AMLCheck(ctx, p.PartnerID, token)
		if errors.Is(err, emi.ErrAMLCheckNotFound) {
			return emi.ErrAPIAMLNotFound
		}
		if err != nil {
			return err
		}
		if c.Status != emi.AMLMatch || c.OpenHits() == 0 {
			return emi.ErrAMLNothingToReview.WithDetail("check is %s", c.Status)
		}
		if err := a.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.aml_review", ResourceType: "aml_check", ResourceToken: c.Token,
			PartnerID: p.PartnerID, Changes: map[string]any{"outcome": outcome}}); err != nil {
			return err
		}
		for _, h := range c.Hits {
			if h.Suppressed || !h.Open() {
				continue
			}
			d := emi.HitDecision{N: h.N, Decision: decision, Reason: reason}
			if out, err = a.Decide(sandboxAs(ctx, SandboxReviewerID), c.Token, d); err != nil {
				return err
			}
			if decision == emi.HitFalsePositive && h.NeedsSecondPerson() {
				if out, err = a.Decide(sandboxAs(ctx, SandboxSecondReviewerID), c.Token, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

// sandboxDecide decides an application waiting for an underwriter as one
// would: it claims it and decides on the evidence it sees (approve,
// reject with reason code and text, or request_information with the
// message); an approval that takes two people gets the sandbox's second
// reviewer. The rules of Review.Decide hold: a sanctions hit without a
// final decision, or one confirmed, blocks approval. Returns
// emi.ErrApplicationNotFound for an unknown or foreign application and
// emi.ErrNotInReview when it is not in_review.
func (r *Review) sandboxDecide(ctx context.Context, token string, in emi.SandboxApplicationDecision) (emi.Application, error) {
	p, err := sandboxPartner(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Application{}, err
	}
	var bad problems
	checkOutcome(&bad, in.Outcome, "approved", "rejected", "information_requested")
	d := emi.ReviewDecision{Action: map[string]string{"approved": "approve", "rejected": "reject",
		"information_requested": "request_information"}[in.Outcome], ReasonCode: in.ReasonCode}
	d.Text = sandboxText(&bad, "text", in.Text, "Sandbox decision: "+in.Outcome, 5000)
	switch {
	case in.Outcome == "rejected" && d.ReasonCode == "":
		d.ReasonCode = "other"
	case in.Outcome == "rejected" && !slices.Contains(emi.RejectReasons, d.ReasonCode):
		bad.add("reason_code", "must be one of: "+strings.Join(emi.RejectReasons, ", "))
	case in.Outcome != "rejected" && d.ReasonCode != "":
		bad.add("reason_code", "is for a rejection only")
	}
	if len(bad) > 0 {
		return emi.Application{}, emi.ErrValidation.WithFields(bad...)
	}
	var out emi.Application
	err = r.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := r.store.Application(ctx, p.PartnerID, token, true)
		if err != nil {
			return err
		}
		if a.Status != emi.AppInReview {
			return emi.ErrNotInReview.WithDetail("application is %s", a.Status)
		}
		if err := r.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.application_decide", ResourceType: "application",
			ResourceToken: a.Token, PartnerID: p.PartnerID, Changes: map[string]any{"action": d.Action}}); err != nil {
			return err
		}
		for _, id := range []string{SandboxReviewerID, SandboxSecondReviewerID} {
			sctx := sandboxAs(ctx, id)
			if a.Review.Assignee != "" && a.Review.Assignee != id {
				if err := r.store.Assign(sctx, a.Token, "", r.now().UTC()); err != nil {
					return err
				}
			}
			if err := r.Claim(sctx, a.Token); err != nil {
				return err
			}
			stamp, err := r.store.EvidenceStamp(sctx, a.Token)
			if err != nil {
				return err
			}
			d.Stamp = stamp
			if out, err = r.Decide(sctx, a.Token, d); err != nil {
				return err
			}
			if out.Status != emi.AppInReview || d.Action != "approve" {
				return nil
			}
			// The first of two approvals: the second reviewer follows.
			if a, err = r.store.Application(ctx, p.PartnerID, token, true); err != nil {
				return err
			}
		}
		return fmt.Errorf("sandbox: application %s still in review after two approvals", token)
	})
	if err != nil {
		return emi.Application{}, sandboxReviewError(err)
	}
	return r.store.Application(ctx, p.PartnerID, token, false)
}

// sandboxReviewError turns the back office's refusals, which a partner's
// catalogue does not have, into the sandbox's: a decision the rules refuse
// (a sanctions hit open or confirmed) is a conflict the partner can read.
func sandboxReviewError(err error) error {
	switch {
	case errors.Is(err, emi.ErrSanctionsBlocked), errors.Is(err, emi.ErrSanctionsUndecided):
		return emi.ErrNotInReview.Field("action", "a sanctions hit of the application blocks approval: reject it, or request information").Wrap(err)
	case errors.Is(err, emi.ErrReviewValidation):
		e := emi.AsError(err)
		return emi.ErrValidation.WithFields(e.Fields...)
	case errors.Is(err, emi.ErrReviewClosed), errors.Is(err, emi.ErrReviewStale), errors.Is(err, emi.ErrNotAssignee):
		return emi.ErrNotInReview.Wrap(err)
	}
	return err
}

// checkOutcome adds a problem unless outcome is one of allowed.
func checkOutcome(p *problems, outcome string, allowed ...string) {
	if !slices.Contains(allowed, outcome) {
		p.add("outcome", "must be one of: "+strings.Join(allowed, ", "))
	}
}

// sandboxText returns the trimmed text, or def when it is empty; a text
// of 1 or 2 characters, or over max, is a problem (the back office's
// decisions take at least 3).
func sandboxText(p *problems, field, text, def string, limit int) string {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return def
	case len(t) < 3 || len(t) > limit:
		p.add(field, fmt.Sprintf("must be 3 to %d characters", limit))
	}
	return t
}
