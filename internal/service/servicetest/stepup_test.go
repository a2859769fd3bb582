package servicetest_test

import (
	"errors"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/staff"
)

// TestStepUp: the re-authentication before a card number reveal takes the
// staff member's password or a current TOTP code, only for themself; wrong
// secrets count like failed sign-ins and every attempt is audited.
func TestStepUp(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	u := e.createStaff(t, "stepup@x.test", emi.RoleCustomerService)
	other := e.createStaff(t, "other@x.test", emi.RoleCustomerService)
	ctx := as(u)
	audit := func(outcome, factor string) int {
		return e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.step_up' AND resource_token = $1
			AND outcome = $2 AND changes->>'factor' = $3`, u.ID, outcome, factor)
	}

	t.Run("the right password", func(t *testing.T) {
		if err := e.svc.StepUp(ctx, u.ID, testPassword); err != nil {
			t.Fatalf("right password: %v", err)
		}
		if n := audit("success", "password"); n != 1 {
			t.Fatalf("%d success audit rows", n)
		}
	})

	t.Run("a wrong password is refused on the secret field and counted", func(t *testing.T) {
		err := e.svc.StepUp(ctx, u.ID, "wrong-horse-7-battery")
		if !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "secret") {
			t.Fatalf("wrong password: %v", err)
		}
		if n := audit("failure", "password"); n != 1 {
			t.Fatalf("%d failure audit rows", n)
		}
		if n := e.count(t, `SELECT failed_attempts FROM staff_users WHERE id = $1`, u.ID); n != 1 {
			t.Fatalf("failed attempts %d, want 1", n)
		}
		if n := e.count(t, `SELECT count(*) FROM signin_attempts WHERE staff_id = $1 AND NOT success AND reason = 'bad_password'`, u.ID); n != 1 {
			t.Fatalf("%d failed sign-in attempt rows", n)
		}
		if err := e.svc.StepUp(ctx, u.ID, ""); !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "secret") {
			t.Fatalf("empty secret: %v", err)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE strpos(changes::text, 'wrong-horse') > 0 OR strpos(changes::text, $1) > 0`,
			testPassword); n != 0 {
			t.Fatalf("%d audit rows hold a password", n)
		}
	})

	t.Run("six digits without TOTP enrolled are a failure", func(t *testing.T) {
		if err := e.svc.StepUp(ctx, u.ID, "123456"); !errors.Is(err, emi.ErrStaffValidation) {
			t.Fatalf("code without TOTP: %v", err)
		}
	})

	t.Run("another staff member cannot be checked", func(t *testing.T) {
		err := e.svc.StepUp(ctx, other.ID, testPassword)
		if !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("other staff id: %v", err)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.step_up' AND resource_token = $1 AND outcome = 'denied'`,
			other.ID); n != 1 {
			t.Fatalf("%d denied rows", n)
		}
		if err := e.svc.StepUp(sys(), u.ID, testPassword); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("system principal: %v", err)
		}
	})

	t.Run("a TOTP code works once; the password still works", func(t *testing.T) {
		secret, _ := e.enroll(t, u)
		e.clock.Advance(30 * time.Second)
		code := e.code(t, secret)
		if err := e.svc.StepUp(ctx, u.ID, code); err != nil {
			t.Fatalf("TOTP code: %v", err)
		}
		if n := audit("success", "totp"); n != 1 {
			t.Fatalf("%d TOTP success rows", n)
		}
		if err := e.svc.StepUp(ctx, u.ID, code); !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "secret") {
			t.Fatalf("the same code again: %v", err)
		}
		if err := e.svc.StepUp(ctx, u.ID, "000 000"); !errors.Is(err, emi.ErrStaffValidation) {
			t.Fatalf("wrong code: %v", err)
		}
		if err := e.svc.StepUp(ctx, u.ID, testPassword); err != nil {
			t.Fatalf("password with TOTP enrolled: %v", err)
		}
	})

	t.Run("wrong secrets throttle like sign-in", func(t *testing.T) {
		v := e.createStaff(t, "throttle@x.test", emi.RoleCustomerService)
		vctx := as(v)
		for i := 0; i < staff.MaxAccountFailures; i++ {
			if err := e.svc.StepUp(vctx, v.ID, "wrong-horse-7-battery"); !errors.Is(err, emi.ErrStaffValidation) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
		if err := e.svc.StepUp(vctx, v.ID, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("after %d failures: %v", staff.MaxAccountFailures, err)
		}
		if _, err := e.svc.SignIn(fromIP("192.0.2.9"), v.Email, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("sign-in after step-up failures: %v", err)
		}
	})
}
