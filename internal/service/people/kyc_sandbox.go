package people

import (
	"context"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"errors"
)

// SandboxDecide decides the user's open identification session as
// compliance would: approved, or rejected with reason (sent to the
// partner in user.kyc_updated). A pending session (the person never
// uploaded) is first marked submitted, as the hosted page does. Returns
// emi.ErrUserNotFound for an unknown or foreign user and
// emi.ErrNoOpenKYCSession when there is no session to decide.
func (k *KYC) SandboxDecide(ctx context.Context, userToken string, in emi.SandboxKYCDecision) (emi.KYCSession, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrUserNotFound)
	if err != nil {
		return emi.KYCSession{}, err
	}
	var bad kernel.Problems
	kernel.CheckOutcome(&bad, in.Outcome, "approved", "rejected")
	reason := kernel.SandboxText(&bad, "reason", in.Reason, "Sandbox decision: "+in.Outcome, 2000)
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
			if err := k.setStatus(ctx, &s, emi.KYCSubmitted, k.now.At(ctx).UTC()); err != nil {
				return err
			}
		}
		note := ""
		if !approve {
			note = "sandbox decision requested by partner API key " + p.ActorID
		}
		out, err = k.Decide(kernel.SandboxAs(ctx, kernel.SandboxReviewerID), s.Token, emi.KYCDecision{Approve: approve, Reason: reason, InternalNote: note})
		return err
	})
	return out, err
}
