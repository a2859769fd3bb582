package staff

import (
	"context"
	"errors"

	"github.com/pquerna/otp/totp"

	"emi/internal/emi"
)

// SandboxStaffPassword is the password of every sandbox staff user. It is
// published on purpose (README, the guides, `make run`): sandbox users exist only in
// databases seeded with EMI_MODE=sandbox, never in production (ASVS 6.3.2).
const SandboxStaffPassword = "Sandbox-Staff-2026" // #nosec G101 -- the sandbox's published demo password

// SandboxStaff returns the sandbox staff users: one per role, e-mail
// <role>@sandbox.emi (cs@ for customer service), all with
// SandboxStaffPassword.
func SandboxStaff() []emi.StaffCreate {
	users := []struct {
		email, name string
		role        emi.Role
	}{
		{"admin@sandbox.emi", "Sandbox Admin", emi.RoleAdmin},
		{"underwriter@sandbox.emi", "Sandbox Underwriter", emi.RoleUnderwriter},
		{"compliance@sandbox.emi", "Sandbox Compliance Officer", emi.RoleCompliance},
		{"cs@sandbox.emi", "Sandbox Customer Service", emi.RoleCustomerService},
		{"auditor@sandbox.emi", "Sandbox Auditor", emi.RoleAuditor},
	}
	out := make([]emi.StaffCreate, len(users))
	for i, u := range users {
		out[i] = emi.StaffCreate{Email: u.email, Name: u.name, Roles: []emi.Role{u.role}, Password: SandboxStaffPassword}
	}
	return out
}

// SeedSandbox creates the SandboxStaff users that do not exist yet, each with
// a TOTP secret already enrolled (random, readable with SandboxTOTPCode) and
// no recovery codes. Existing users are left as they are. It returns how many
// users it created. Returns emi.ErrForbidden outside the sandbox or when the
// principal may not manage staff.
func (s *Staff) SeedSandbox(ctx context.Context) (int, error) {
	if !s.cfg.Sandbox {
		return 0, emi.ErrForbidden.WithDetail("sandbox staff outside the sandbox")
	}
	if err := s.authorize(ctx, emi.PermManageStaff, "", "staff.seed", ""); err != nil {
		return 0, err
	}
	created := 0
	for _, in := range SandboxStaff() {
		if _, err := s.store.StaffByEmail(ctx, emailLookup(in.Email)); err == nil {
			continue
		} else if !errors.Is(err, emi.ErrStaffNotFound) {
			return created, err
		}
		u, hash, err := s.prepare(in)
		if err != nil {
			return created, err
		}
		_, enc, err := s.newTOTPSecret(u.ID)
		if err != nil {
			return created, err
		}
		err = s.tx.InTx(ctx, func(ctx context.Context) error {
			if err := s.store.InsertStaff(ctx, StoredStaff{StaffUser: u, PasswordHash: hash}); err != nil {
				return err
			}
			if err := s.store.EnrollTOTP(ctx, u.ID, enc, u.CreatedAt); err != nil {
				return err
			}
			return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.create", ResourceType: "staff_user", ResourceToken: u.ID,
				Changes: map[string]any{"email": u.Email, "name": u.Name, "roles": u.Roles, "sandbox": true}})
		})
		if errors.Is(err, emi.ErrDuplicateStaff) {
			continue // seeded at the same moment by another process
		}
		if err != nil {
			return created, err
		}
		created++
	}
	return created, nil
}

// SandboxTOTPCode returns a TOTP code that the enrolled staff user with that
// e-mail address can sign in with now, so sandbox users need no
// authenticator app: the code of the current time step or, when that step
// was used already, of the next one (accepted thanks to the skew). Returns
// emi.ErrForbidden outside the sandbox, emi.ErrStaffNotFound for an unknown
// or not enrolled user, and emi.ErrTOTPInvalid when both steps were used
// (wait 30 seconds).
func (s *Staff) SandboxTOTPCode(ctx context.Context, email string) (string, error) {
	if !s.cfg.Sandbox {
		return "", emi.ErrForbidden.WithDetail("TOTP codes are readable only in the sandbox")
	}
	u, err := s.store.StaffByEmail(ctx, emailLookup(email))
	if err != nil {
		return "", err
	}
	if !u.TOTPEnrolled {
		return "", emi.ErrStaffNotFound.WithDetail("staff user has no enrolled TOTP secret")
	}
	secret, err := s.openTOTPSecret(u)
	if err != nil {
		return "", err
	}
	step := max(totpStep(s.now()), u.TOTPLastStep+1)
	if step > totpStep(s.now())+totpSkew {
		return "", emi.ErrTOTPInvalid.WithDetail("the codes of this step were used; try again in 30 seconds")
	}
	code, err := totp.GenerateCodeCustom(secret, timeOfStep(step), totpOpts())
	if err != nil {
		return "", emi.Internal(err)
	}
	return code, nil
}
