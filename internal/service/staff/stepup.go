package staff

import (
	"context"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// stepUpAction is the audit action of a re-authentication before a
// sensitive action (a card number reveal).
const stepUpAction = "staff.step_up"

// StepUp re-checks the signed-in staff member before a sensitive action
// (the back office's card number reveal): secret is their password, or,
// when they have TOTP enrolled, a current TOTP code (6 digits; each code
// works once, as at sign-in). It implements the StepUp interface of
// Cards.StaffReveal.
//
// Only the staff member themself can be checked: another staff id returns
// emi.ErrForbidden (audited as denied). A wrong secret returns
// emi.ErrStaffValidation with a field error on "secret" and counts as a
// failed sign-in attempt (throttling and lockout, like SignIn); while
// throttled it returns emi.ErrSignInThrottled, and emi.ErrSignInFailed for
// a disabled or locked account. Every attempt writes a signin_attempts row
// and a "staff.step_up" audit row naming the factor, never the secret.
func (s *Staff) StepUp(ctx context.Context, staffID, secret string) error {
	if !isSelf(ctx, staffID) {
		s.deny(ctx, stepUpAction, staffID, "not own account")
		return emi.ErrForbidden.WithDetail("step-up of another staff user")
	}
	bad := emi.ErrStaffValidation.Field("secret", "is not correct")
	if secret == "" {
		return emi.ErrStaffValidation.Field("secret", "is required: your password or a current TOTP code")
	}
	if code := strings.ReplaceAll(strings.TrimSpace(secret), " ", ""); len(code) == 6 && kernel.AllDigits(code) {
		// Six digits can only be a TOTP code: a password has at least 12
		// characters, letters among them. A user without TOTP gets "not
		// correct" and a counted failure, as for a wrong password.
		return s.secondFactor(ctx, staffID, factor{action: stepUpAction, name: "totp", reasonOK: reasonTOTP,
			reasonBad: reasonBadTOTP, bad: bad, check: s.consumeTOTP(code)})
	}
	check := func(ctx context.Context, u StoredStaff, _ time.Time) (bool, error) {
		ok, _, err := s.cfg.PasswordCost.verifyPassword(secret, u.PasswordHash)
		return ok, err
	}
	return s.secondFactor(ctx, staffID, factor{action: stepUpAction, name: "password", reasonOK: reasonPassword,
		reasonBad: reasonBadPassword, bad: bad, check: check})
}
