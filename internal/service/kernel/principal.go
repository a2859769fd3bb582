package kernel

import (
	"context"
	"strings"

	"emi/internal/emi"
)

// PartnerCtx returns the calling partner, or not-found for anyone else.
func PartnerCtx(ctx context.Context, notFound *emi.Error) (emi.Principal, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return p, notFound
	}
	return p, nil
}

// Require returns emi.ErrForbidden unless the principal in ctx may do perm
// (the operations an area declares, emi.Op, check the same way).
// System principals (commands, workers) may do everything.
func Require(ctx context.Context, perm emi.Permission) error {
	if p, ok := emi.PrincipalFrom(ctx); ok && p.Can(perm) {
		return nil // every service call passes here: no allocation when allowed
	}
	return emi.NewOp(string(perm), perm).Refusal()
}

// StaffOf returns the calling staff user (zero when none).
func StaffOf(ctx context.Context) emi.Principal {
	p, _ := emi.PrincipalFrom(ctx)
	return p
}

// StaffReason checks the reason a staff user gives for an action
// (required, trimmed, bounded) and returns it trimmed.
func StaffReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if len(reason) < 3 || len(reason) > 2000 {
		return "", emi.ErrReviewValidation.Field("reason", "give a reason (3 to 2,000 characters)")
	}
	return reason, nil
}
