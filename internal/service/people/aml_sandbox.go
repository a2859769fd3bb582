package people

import (
	"context"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"errors"
)

// SandboxReview decides every open hit of an AML check as compliance
// would: "cleared" (each a false positive; a strong hit takes the
// sandbox's two reviewers, as the two-person rule wants) or "confirmed"
// (each a true match). aml_check.reviewed follows. Returns
// emi.ErrAPIAMLNotFound for an unknown or foreign check and
// emi.ErrAMLNothingToReview when no hit waits.
func (a *AML) SandboxReview(ctx context.Context, token string, in emi.SandboxAMLReview) (emi.AMLCheck, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrAPIAMLNotFound)
	if err != nil {
		return emi.AMLCheck{}, err
	}
	var bad kernel.Problems
	kernel.CheckOutcome(&bad, in.Outcome, "cleared", "confirmed")
	reason := kernel.SandboxText(&bad, "reason", in.Reason, "Sandbox review: "+in.Outcome, 2000)
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
			if out, err = a.Decide(kernel.SandboxAs(ctx, kernel.SandboxReviewerID), c.Token, d); err != nil {
				return err
			}
			if decision == emi.HitFalsePositive && h.NeedsSecondPerson() {
				if out, err = a.Decide(kernel.SandboxAs(ctx, kernel.SandboxSecondReviewerID), c.Token, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}
