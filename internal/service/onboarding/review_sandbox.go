package onboarding

import (
	"context"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"fmt"
	"slices"
	"strings"
)

// SandboxDecide decides an application waiting for an underwriter as one
// would: it claims it and decides on the evidence it sees (approve,
// reject with reason code and text, or request_information with the
// message); an approval that takes two people gets the sandbox's second
// reviewer. The rules of Review.Decide hold: a sanctions hit without a
// final decision, or one confirmed, blocks approval. Returns
// emi.ErrApplicationNotFound for an unknown or foreign application and
// emi.ErrNotInReview when it is not in_review.
func (r *Review) SandboxDecide(ctx context.Context, token string, in emi.SandboxApplicationDecision) (emi.Application, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Application{}, err
	}
	var bad kernel.Problems
	kernel.CheckOutcome(&bad, in.Outcome, "approved", "rejected", "information_requested")
	d := emi.ReviewDecision{Action: map[string]string{"approved": "approve", "rejected": "reject",
		"information_requested": "request_information"}[in.Outcome], ReasonCode: in.ReasonCode}
	d.Text = kernel.SandboxText(&bad, "text", in.Text, "Sandbox decision: "+in.Outcome, 5000)
	switch {
	case in.Outcome == "rejected" && d.ReasonCode == "":
		d.ReasonCode = "other"
	case in.Outcome == "rejected" && !slices.Contains(emi.RejectReasons, d.ReasonCode):
		bad.Add("reason_code", "must be one of: "+strings.Join(emi.RejectReasons, ", "))
	case in.Outcome != "rejected" && d.ReasonCode != "":
		bad.Add("reason_code", "is for a rejection only")
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
		for _, id := range []string{kernel.SandboxReviewerID, kernel.SandboxSecondReviewerID} {
			sctx := kernel.SandboxAs(ctx, id)
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
				// The answer is read in this transaction, never after the
				// commit on another connection (a failover in between would
				// report a committed decision as failed).
				out, err = r.store.Application(ctx, p.PartnerID, token, false)
				return err
			}
			// The first of two approvals: the second reviewer follows.
			if a, err = r.store.Application(ctx, p.PartnerID, token, true); err != nil {
				return err
			}
		}
		return fmt.Errorf("sandbox: application %s still in review after two approvals", token)
	})
	if err != nil {
		return emi.Application{}, kernel.SandboxReviewError(err)
	}
	return out, nil
}
