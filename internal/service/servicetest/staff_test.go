package servicetest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
	"emi/internal/service/staff"
)

var fieldOf = servicetest.HasField

func TestPasswordPolicy(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	cases := []struct {
		name, email, password string
		ok                    bool
	}{
		{"11 characters are refused", "p1@x.test", "abcdefghij1", false},
		{"12 characters with a letter and a digit are accepted", "p2@x.test", "abcdefghijk1", true},
		{"a password without a digit is refused", "p3@x.test", "abcdefghijklmnop", false},
		{"a password without a letter is refused", "p4@x.test", "1234567890123456", false},
		{"64 characters are accepted", "p5@x.test", strings.Repeat("ab1", 21) + "c", true},
		{"128 characters are accepted", "p6@x.test", strings.Repeat("x9", 64), true},
		{"129 characters are refused", "p7@x.test", strings.Repeat("x9", 64) + "z", false},
		{"a common password is refused", "p8@x.test", "1qaz2wsx3edc", false},
		{"the upper-case variant of a common password is refused", "p9@x.test", "1QAZ2WSX3EDC", false},
		{"a password containing the e-mail's name part is refused", "margaret@x.test", "Margaret-2026-xyz", false},
		{"a passphrase in another script with a digit is accepted", "p10@x.test", "Blåbærsyltetøy 7 ganger", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Create(sys(), emi.StaffCreate{Email: tc.email, Name: "P", Roles: []emi.Role{emi.RoleAuditor}, Password: tc.password})
			if tc.ok && err != nil {
				t.Fatalf("want accepted, got %v", err)
			}
			if !tc.ok && (!errors.Is(err, emi.ErrPasswordPolicy) || !fieldOf(err, "password")) {
				t.Fatalf("want %v with a field error on password, got %v", emi.ErrPasswordPolicy, err)
			}
		})
	}
}

// A hash made at another cost (the test fixtures' cheap one, or a future
// change of the standard) is replaced at the standard cost by the next
// successful sign-in, and the old hash still signs the user in once.
func TestASignInUpgradesAHashMadeAtAnotherCost(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	out, err := e.withCost(staff.PasswordCostTestFixture).Create(sys(), emi.StaffCreate{Email: "upgrade@x.test", Name: "U", Password: testPassword, Roles: []emi.Role{emi.RoleAuditor}})
	if err != nil {
		t.Fatal(err)
	}
	hashOf := func() string {
		var h string
		if err := e.db.GetContext(context.Background(), &h, `SELECT password_hash FROM staff_users WHERE id = $1`, out.User.ID); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := hashOf(); !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("the fixture cost stored %q", h)
	}
	if _, err := e.svc.SignIn(fromIP("192.0.2.80"), "upgrade@x.test", testPassword); err != nil {
		t.Fatalf("sign-in with the cheap hash: %v", err)
	}
	if h := hashOf(); !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("after a sign-in at the standard cost the hash is %q", h)
	}
	if _, err := e.svc.SignIn(fromIP("192.0.2.80"), "upgrade@x.test", testPassword); err != nil {
		t.Fatalf("sign-in with the upgraded hash: %v", err)
	}
}

func TestStoredPasswordHashIsAnArgon2idPHCStringAtTheOWASPFloor(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	u := e.createStaff(t, "hash@x.test", emi.RoleAuditor)
	var hash string
	if err := e.db.GetContext(context.Background(), &hash, `SELECT password_hash FROM staff_users WHERE id = $1`, u.ID); err != nil {
		t.Fatal(err)
	}
	phc := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !phc.MatchString(hash) {
		t.Fatalf("stored hash %q is not $argon2id$v=19$m=19456,t=2,p=1$<16-byte salt>$<32-byte key>", hash)
	}
	if strings.Contains(hash, testPassword) {
		t.Fatal("the hash contains the password")
	}
}

func TestCreateStaff(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	admin := e.createStaff(t, "Admin@X.test", emi.RoleAdmin)
	cs := e.createStaff(t, "cs@x.test", emi.RoleCustomerService)

	t.Run("the system creates a user with its roles, deduplicated and in display order", func(t *testing.T) {
		out, err := e.svc.Create(sys(), emi.StaffCreate{Email: " new@x.test ", Name: " New ", Password: testPassword,
			Roles: []emi.Role{emi.RoleAuditor, emi.RoleCompliance, emi.RoleAuditor}})
		if err != nil {
			t.Fatal(err)
		}
		u := out.User
		if u.Email != "new@x.test" || u.Name != "New" || !slices.Equal(u.Roles, []emi.Role{emi.RoleCompliance, emi.RoleAuditor}) ||
			u.TOTPEnrolled || u.PasswordTemporary || out.Secret != "" || out.Change.Status != emi.StaffChangeApplied {
			t.Fatalf("created %+v", out)
		}
		got, err := e.svc.Get(as(admin), u.ID)
		if err != nil || got.Email != u.Email || !slices.Equal(got.Roles, u.Roles) {
			t.Fatalf("get: %+v %v", got, err)
		}
	})
	t.Run("an e-mail address taken in another case is a duplicate", func(t *testing.T) {
		_, err := e.svc.Create(sys(), emi.StaffCreate{Email: "admin@x.TEST", Name: "Again", Roles: []emi.Role{emi.RoleAdmin}, Password: testPassword})
		if !errors.Is(err, emi.ErrDuplicateStaff) {
			t.Fatalf("want %v, got %v", emi.ErrDuplicateStaff, err)
		}
	})
	t.Run("an unknown role and a bad e-mail are validation errors naming the fields", func(t *testing.T) {
		_, err := e.svc.Create(sys(), emi.StaffCreate{Email: "not-an-email", Name: "X", Roles: []emi.Role{"root"}, Password: testPassword})
		if !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "roles[0]") || !fieldOf(err, "email") {
			t.Fatalf("want %v on roles[0] and email, got %v %+v", emi.ErrStaffValidation, err, emi.AsError(err).Fields)
		}
	})
	t.Run("an admin does not choose a colleague's password", func(t *testing.T) {
		_, err := e.svc.Create(as(admin), emi.StaffCreate{Email: "chosen@x.test", Name: "C", Roles: []emi.Role{emi.RoleAuditor}, Password: testPassword})
		if !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "password") {
			t.Fatalf("want %v on password, got %v", emi.ErrStaffValidation, err)
		}
	})
	t.Run("an admin creates an auditor at once, on a temporary password shown once", func(t *testing.T) {
		out, err := e.svc.Create(as(admin), emi.StaffCreate{Email: "aud@x.test", Name: "Aud", Roles: []emi.Role{emi.RoleAuditor}})
		if err != nil || out.Change.Status != emi.StaffChangeApplied || !out.User.PasswordTemporary || len(out.Secret) < 20 {
			t.Fatalf("auditor: %+v %v", out, err)
		}
		res, err := e.svc.SignIn(fromIP("192.0.2.70"), "aud@x.test", out.Secret)
		if err != nil || !res.MustChangePassword || !res.NeedsEnrollment {
			t.Fatalf("sign-in with the temporary password: %+v %v", res, err)
		}
	})
	t.Run("customer service may not create staff, and the refusal is audited", func(t *testing.T) {
		_, err := e.svc.Create(as(cs), emi.StaffCreate{Email: "x@x.test", Name: "X", Roles: []emi.Role{emi.RoleAdmin}, Password: testPassword})
		if !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("want %v, got %v", emi.ErrForbidden, err)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.create' AND outcome = 'denied' AND actor_id = $1`, cs.ID); n != 1 {
			t.Fatalf("%d denied audit rows, want 1", n)
		}
	})
	t.Run("without a principal creating staff is refused", func(t *testing.T) {
		_, err := e.svc.Create(context.Background(), emi.StaffCreate{Email: "y@x.test", Name: "Y", Roles: []emi.Role{emi.RoleAdmin}, Password: testPassword})
		if !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("want %v, got %v", emi.ErrForbidden, err)
		}
	})
	t.Run("the audit row names the user and never holds the password", func(t *testing.T) {
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.create' AND outcome = 'success' AND resource_token = $1
			AND changes->>'email' = 'Admin@X.test'`, admin.ID); n != 1 {
			t.Fatalf("%d staff.create rows for the admin, want 1", n)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE strpos(changes::text, $1) > 0`, testPassword); n != 0 {
			t.Fatalf("%d audit rows hold the password", n)
		}
	})
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	admin := e.createStaff(t, "admin@x.test", emi.RoleAdmin)
	u := e.createStaff(t, "Ursula@X.test", emi.RoleUnderwriter)
	gone := e.createStaff(t, "gone@x.test", emi.RoleAuditor)
	if _, err := e.svc.Disable(as(admin), gone.ID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, email, password string
		want                  error
		actor                 string // audit actor id
	}{
		{"the right password passes the first factor", "ursula@x.test", testPassword, nil, u.ID},
		{"the e-mail address matches in any case and with spaces around", "  URSULA@x.test ", testPassword, nil, u.ID},
		{"a wrong password fails", "ursula@x.test", "wrong-password-1", emi.ErrSignInFailed, u.ID},
		{"an unknown e-mail address fails with the same error", "nobody@x.test", testPassword, emi.ErrSignInFailed, "signin"},
		{"a disabled user cannot sign in, even with the right password", "gone@x.test", testPassword, emi.ErrSignInFailed, gone.ID},
		{"an overlong password fails without being hashed in full", "ursula@x.test", strings.Repeat("a1", 1000), emi.ErrSignInFailed, u.ID},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attempts := e.count(t, `SELECT count(*) FROM signin_attempts`)
			audits := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.signin'`)
			res, err := e.svc.SignIn(fromIP(fmt.Sprintf("192.0.2.%d", i+1)), tc.email, tc.password)
			if tc.want == nil {
				if err != nil || res.Staff.ID != u.ID || !res.NeedsEnrollment || !res.At.Equal(e.clock.Now()) {
					t.Fatalf("want the first factor passed for %s, got %+v %v", u.ID, res, err)
				}
			} else {
				got := emi.AsError(err)
				if !errors.Is(err, tc.want) || len(got.Fields) != 0 || res.Staff.ID != "" {
					t.Fatalf("want exactly %v, got %v %+v", tc.want, err, res)
				}
			}
			if n := e.count(t, `SELECT count(*) FROM signin_attempts`); n != attempts+1 {
				t.Errorf("%d new signin_attempts rows, want 1", n-attempts)
			}
			if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.signin'`); n != audits+1 {
				t.Errorf("%d new audit rows, want 1", n-audits)
			}
			var row struct {
				ActorType string `db:"actor_type"`
				ActorID   string `db:"actor_id"`
				Outcome   string `db:"outcome"`
				Email     string `db:"email"`
				IP        string `db:"ip"`
			}
			err = e.db.GetContext(context.Background(), &row, `SELECT actor_type, actor_id, outcome, changes->>'email' AS email, host(ip) AS ip
				FROM audit_log WHERE action = 'staff.signin' ORDER BY id DESC LIMIT 1`)
			if err != nil {
				t.Fatal(err)
			}
			wantOutcome := "success"
			if tc.want != nil {
				wantOutcome = "failure"
			}
			if row.ActorID != tc.actor || row.Outcome != wantOutcome || row.Email != strings.ToLower(strings.TrimSpace(tc.email)) ||
				row.IP != fmt.Sprintf("192.0.2.%d", i+1) {
				t.Errorf("audit row %+v; want actor %s, outcome %s", row, tc.actor, wantOutcome)
			}
		})
	}
	t.Run("an overlong e-mail address fails like an unknown one", func(t *testing.T) {
		_, err := e.svc.SignIn(fromIP("192.0.2.99"), strings.Repeat("é", 300)+"@x.test", testPassword)
		if !errors.Is(err, emi.ErrSignInFailed) {
			t.Fatalf("want %v, got %v", emi.ErrSignInFailed, err)
		}
	})
	t.Run("no audit row or attempt row holds a password", func(t *testing.T) {
		for _, pw := range []string{testPassword, "wrong-password-1"} {
			if n := e.count(t, `SELECT count(*) FROM audit_log WHERE strpos(changes::text, $1) > 0`, pw); n != 0 {
				t.Errorf("%d audit rows hold %q", n, pw)
			}
		}
	})
}

func TestSignInThrottling(t *testing.T) {
	t.Parallel()
	t.Run("five failures for an account make further attempts wait, also with the right password, for 15 minutes", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "t1@x.test", emi.RoleAuditor)
		for i := range staff.MaxAccountFailures {
			if _, err := e.svc.SignIn(fromIP(fmt.Sprintf("198.51.100.%d", i+1)), u.Email, "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
		if _, err := e.svc.SignIn(fromIP("198.51.100.99"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("sixth attempt: want %v, got %v", emi.ErrSignInThrottled, err)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.signin' AND outcome = 'denied'`); n != 1 {
			t.Fatalf("%d denied audit rows for the throttled attempt, want 1", n)
		}
		e.clock.Advance(staff.ThrottleWindow - time.Second)
		if _, err := e.svc.SignIn(fromIP("198.51.100.99"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("within the window: want %v, got %v", emi.ErrSignInThrottled, err)
		}
		e.clock.Advance(2 * time.Second)
		if _, err := e.svc.SignIn(fromIP("198.51.100.99"), u.Email, testPassword); err != nil {
			t.Fatalf("after the window (throttled attempts do not extend it): %v", err)
		}
	})
	t.Run("an unknown e-mail address is throttled after five failures with the same error", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		for i := range staff.MaxAccountFailures {
			if _, err := e.svc.SignIn(fromIP(fmt.Sprintf("198.51.100.%d", i+1)), "ghost@x.test", "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
		_, err := e.svc.SignIn(fromIP("198.51.100.99"), "GHOST@x.test", "wrong-password-1")
		if !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("sixth attempt: want %v, got %v", emi.ErrSignInThrottled, err)
		}
	})
	t.Run("twenty failures from one IP make further attempts from it wait, for any address", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "t3@x.test", emi.RoleAuditor)
		for i := range staff.MaxIPFailures {
			if _, err := e.svc.SignIn(fromIP("203.0.113.7"), fmt.Sprintf("nobody%d@x.test", i), "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
		if _, err := e.svc.SignIn(fromIP("203.0.113.7"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("from the same IP: want %v, got %v", emi.ErrSignInThrottled, err)
		}
		if _, err := e.svc.SignIn(fromIP("203.0.113.8"), u.Email, testPassword); err != nil {
			t.Fatalf("from another IP: %v", err)
		}
	})
}

func TestLockoutAfterTenConsecutiveFailuresLastsThirtyMinutes(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	admin := e.createStaff(t, "admin@x.test", emi.RoleAdmin)
	u := e.createStaff(t, "lock@x.test", emi.RoleAuditor)
	fail := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := e.svc.SignIn(fromIP(fmt.Sprintf("198.51.100.%d", i+1)), u.Email, "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
	}
	fail(5)
	e.clock.Advance(staff.ThrottleWindow + time.Second)
	fail(4)
	if got, _ := e.svc.Get(as(admin), u.ID); got.LockedUntil != nil {
		t.Fatalf("locked after 9 failures: %v", got.LockedUntil)
	}
	fail(1)
	lockedAt := e.clock.Now()
	got, _ := e.svc.Get(as(admin), u.ID)
	if got.LockedUntil == nil || !got.LockedUntil.Equal(lockedAt.Add(staff.LockoutDuration)) {
		t.Fatalf("after 10 failures: locked until %v, want %v", got.LockedUntil, lockedAt.Add(staff.LockoutDuration))
	}
	if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.signin' AND changes ? 'locked_until'`); n != 1 {
		t.Fatalf("%d audit rows record the lockout, want 1", n)
	}

	e.clock.Advance(staff.ThrottleWindow + time.Second) // past the throttle, still locked
	if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInFailed) {
		t.Fatalf("locked account with the right password: want %v, got %v", emi.ErrSignInFailed, err)
	}
	e.clock.Advance(staff.LockoutDuration - staff.ThrottleWindow)
	if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, testPassword); err != nil {
		t.Fatalf("30 minutes after the lockout: %v", err)
	}
	if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
		t.Fatal(err)
	}
	if got, _ := e.svc.Get(as(admin), u.ID); got.LockedUntil != nil && got.LockedUntil.After(e.clock.Now()) {
		t.Fatal("one failure after the lockout ran out locked the account again")
	}
}

func TestTOTP(t *testing.T) {
	t.Parallel()
	t.Run("enrolment, confirmation and verification", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "totp@x.test", emi.RoleCompliance)
		res, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, testPassword)
		if err != nil || !res.NeedsEnrollment {
			t.Fatalf("first sign-in: %+v %v", res, err)
		}
		en, err := e.svc.BeginEnrollment(context.Background(), u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(en.URL, "otpauth://totp/emi:totp@x.test?") || !strings.Contains(en.URL, "secret="+en.Secret) ||
			!strings.Contains(en.URL, "algorithm=SHA1") || !strings.Contains(en.URL, "digits=6") || !strings.Contains(en.URL, "period=30") {
			t.Fatalf("otpauth URL %q", en.URL)
		}
		img, err := png.Decode(bytes.NewReader(en.QRPNG))
		if err != nil || img.Bounds().Dx() != 240 || img.Bounds().Dy() != 240 {
			t.Fatalf("QR code: %v %v", err, img)
		}
		again, err := e.svc.BeginEnrollment(context.Background(), u.ID)
		if err != nil || again.Secret != en.Secret {
			t.Fatalf("a second BeginEnrollment while pending: want the same secret, got %v", err)
		}
		if n := e.count(t, `SELECT count(*) FROM staff_users WHERE strpos(encode(totp_secret_enc, 'escape'), $1) > 0`, en.Secret); n != 0 {
			t.Fatal("the TOTP secret is stored in clear")
		}
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, e.code(t, en.Secret)); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("VerifyTOTP before the enrolment is confirmed: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		e.clock.Advance(30 * time.Second)
		if _, err := e.svc.ConfirmEnrollment(context.Background(), u.ID, "000000"); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("wrong enrolment code: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		enrolCode := e.code(t, en.Secret)
		codes, err := e.svc.ConfirmEnrollment(context.Background(), u.ID, enrolCode)
		if err != nil {
			t.Fatal(err)
		}
		recovery := regexp.MustCompile(`^[a-z2-7]{5}-[a-z2-7]{5}$`)
		seen := map[string]bool{}
		for _, c := range codes {
			if !recovery.MatchString(c) || seen[c] {
				t.Fatalf("recovery codes %v", codes)
			}
			seen[c] = true
		}
		if len(codes) != 10 {
			t.Fatalf("%d recovery codes, want 10", len(codes))
		}
		got, _ := e.svc.Get(as(u), u.ID)
		if !got.TOTPEnrolled || got.RecoveryCodesLeft != 10 || got.LastSignInAt == nil {
			t.Fatalf("after enrolment: %+v", got)
		}
		if _, err := e.svc.BeginEnrollment(context.Background(), u.ID); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("BeginEnrollment when enrolled: want %v, got %v", emi.ErrForbidden, err)
		}
		res, err = e.svc.SignIn(fromIP("192.0.2.1"), u.Email, testPassword)
		if err != nil || res.NeedsEnrollment {
			t.Fatalf("sign-in after enrolment: %+v %v", res, err)
		}
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, enrolCode); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("the enrolment code used again: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		e.clock.Advance(30 * time.Second)
		c := e.code(t, en.Secret)
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, c); err != nil {
			t.Fatalf("next code: %v", err)
		}
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, c); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("the same code twice: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		for _, action := range []string{"staff.totp_enroll_begin", "staff.totp_enroll", "staff.signin_totp"} {
			if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = $1 AND actor_id = $2`, action, u.ID); n == 0 {
				t.Errorf("no %s audit row", action)
			}
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE strpos(changes::text, $1) > 0 OR strpos(changes::text, $2) > 0`, en.Secret, c); n != 0 {
			t.Errorf("%d audit rows hold the secret or a code", n)
		}
	})
	t.Run("a code is accepted once among ten concurrent verifications", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "race@x.test", emi.RoleCompliance)
		secret, _ := e.enroll(t, u)
		e.clock.Advance(30 * time.Second)
		code := e.code(t, secret)
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() { errs[i] = e.svc.VerifyTOTP(context.Background(), u.ID, code) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			// The losers are refused as a reused code, or, once five of
			// them have failed, by the sign-in throttle: second-factor
			// failures count against it too.
			case !errors.Is(err, emi.ErrTOTPInvalid) && !errors.Is(err, emi.ErrSignInThrottled):
				t.Errorf("unexpected error %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d of 10 concurrent verifications succeeded, want exactly 1", ok)
		}
	})
	t.Run("the previous step's code is accepted within the skew, a code two steps old is not", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "skew@x.test", emi.RoleCompliance)
		secret, _ := e.enroll(t, u)
		e.clock.Advance(30 * time.Second)
		previous := e.code(t, secret)
		e.clock.Advance(30 * time.Second)
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, previous); err != nil {
			t.Fatalf("previous step: %v", err)
		}
		e.clock.Advance(30 * time.Second)
		old := e.code(t, secret)
		e.clock.Advance(60 * time.Second)
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, old); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("two steps old: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
	})
	t.Run("each recovery code works once", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "rc@x.test", emi.RoleCompliance)
		_, codes := e.enroll(t, u)
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, codes[0]); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, codes[0]); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("a used code: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, " "+strings.ToUpper(strings.ReplaceAll(codes[1], "-", ""))); err != nil {
			t.Fatalf("upper case without the dash: %v", err)
		}
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, "aaaaa-aaaaa"); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("a wrong code: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		if got, _ := e.svc.Get(as(u), u.ID); got.RecoveryCodesLeft != 8 {
			t.Fatalf("%d recovery codes left, want 8", got.RecoveryCodesLeft)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.signin_recovery_code' AND outcome = 'success'`); n != 2 {
			t.Fatalf("%d successful recovery-code audit rows, want 2", n)
		}
	})
	t.Run("second-factor failures count against the sign-in throttle", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "tf@x.test", emi.RoleCompliance)
		secret, _ := e.enroll(t, u)
		for i := range staff.MaxAccountFailures {
			if err := e.svc.VerifyTOTP(context.Background(), u.ID, "12345"); !errors.Is(err, emi.ErrTOTPInvalid) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
		}
		e.clock.Advance(30 * time.Second)
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, e.code(t, secret)); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("right code after five failures: want %v, got %v", emi.ErrSignInThrottled, err)
		}
		if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInThrottled) {
			t.Fatalf("password after five second-factor failures: want %v, got %v", emi.ErrSignInThrottled, err)
		}
	})
	t.Run("regenerating recovery codes needs a valid TOTP code and replaces the old codes", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		u := e.createStaff(t, "regen@x.test", emi.RoleCompliance)
		other := e.createStaff(t, "other@x.test", emi.RoleAdmin)
		secret, old := e.enroll(t, u)
		e.clock.Advance(30 * time.Second)
		if _, err := e.svc.RegenerateRecoveryCodes(as(u), u.ID, "00000"); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("wrong code: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		if _, err := e.svc.RegenerateRecoveryCodes(as(other), u.ID, e.code(t, secret)); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("another user's codes: want %v, got %v", emi.ErrForbidden, err)
		}
		codes, err := e.svc.RegenerateRecoveryCodes(as(u), u.ID, e.code(t, secret))
		if err != nil || len(codes) != 10 {
			t.Fatalf("regenerate: %d codes, %v", len(codes), err)
		}
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, old[0]); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("an old code after regeneration: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		if err := e.svc.UseRecoveryCode(context.Background(), u.ID, codes[0]); err != nil {
			t.Fatalf("a new code: %v", err)
		}
	})
}

// session saves a session of u, signed in now, as the portal would, and
// returns its token.
func (e *staffEnv) session(t *testing.T, u emi.StaffUser) string {
	t.Helper()
	token := fmt.Sprintf("token-%s-%d", u.ID, e.clock.Now().UnixNano())
	b, err := scs.GobCodec{}.Encode(e.clock.Now().Add(time.Hour), map[string]any{staff.SessionStaffKey: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sessions.Commit(token, b, e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return token
}

func TestStaffAdministration(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	admin := e.createStaff(t, "admin@x.test", emi.RoleAdmin)
	cs := e.createStaff(t, "cs@x.test", emi.RoleCustomerService)
	auditor := e.createStaff(t, "auditor@x.test", emi.RoleAuditor)
	target := e.createStaff(t, "target@x.test", emi.RoleUnderwriter)
	// second approves the privileged changes admin proposes.
	second := e.createStaff(t, "second@x.test", emi.RoleAdmin)
	approve := func(t *testing.T, out emi.StaffOutcome, err error) emi.StaffOutcome {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if out.Change.Status != emi.StaffChangePending {
			t.Fatalf("a privileged change took effect at once: %+v", out.Change)
		}
		done, err := e.svc.ApproveChange(as(second), out.Change.ID)
		if err != nil {
			t.Fatalf("second admin approves: %v", err)
		}
		done.Secret = out.Secret + done.Secret
		return done
	}

	t.Run("nobody changes their own roles", func(t *testing.T) {
		if _, err := e.svc.SetRoles(as(admin), admin.ID, []emi.Role{emi.RoleAdmin, emi.RoleAuditor}); !errors.Is(err, emi.ErrOwnRoles) {
			t.Fatalf("want %v, got %v", emi.ErrOwnRoles, err)
		}
	})
	t.Run("nobody disables or resets themselves", func(t *testing.T) {
		if _, err := e.svc.Disable(as(admin), admin.ID); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("disable oneself: want %v, got %v", emi.ErrForbidden, err)
		}
		if _, err := e.svc.ResetCredentials(as(admin), admin.ID); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("reset oneself: want %v, got %v", emi.ErrForbidden, err)
		}
	})
	forbidden := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"set roles", func(ctx context.Context) error {
			_, err := e.svc.SetRoles(ctx, target.ID, []emi.Role{emi.RoleAdmin})
			return err
		}},
		{"disable", func(ctx context.Context) error { _, err := e.svc.Disable(ctx, target.ID); return err }},
		{"suspend", func(ctx context.Context) error { return e.svc.Suspend(ctx, target.ID, "an incident") }},
		{"confirm a suspension", func(ctx context.Context) error { return e.svc.ConfirmSuspension(ctx, target.ID) }},
		{"lift a suspension", func(ctx context.Context) error { return e.svc.LiftSuspension(ctx, target.ID) }},
		{"enable", func(ctx context.Context) error { return e.svc.Enable(ctx, target.ID) }},
		{"reset credentials", func(ctx context.Context) error { _, err := e.svc.ResetCredentials(ctx, target.ID); return err }},
		{"revoke another user's sessions", func(ctx context.Context) error { return e.svc.RevokeSessions(ctx, target.ID) }},
		{"create staff", func(ctx context.Context) error {
			_, err := e.svc.Create(ctx, emi.StaffCreate{Email: "z@x.test", Name: "Z", Roles: []emi.Role{emi.RoleAdmin}, Password: testPassword})
			return err
		}},
	}
	for _, who := range []emi.StaffUser{cs, auditor} {
		for _, f := range forbidden {
			t.Run(fmt.Sprintf("%s may not %s", who.Roles[0], f.name), func(t *testing.T) {
				if err := f.call(as(who)); !errors.Is(err, emi.ErrForbidden) {
					t.Fatalf("want %v, got %v", emi.ErrForbidden, err)
				}
			})
		}
	}
	t.Run("customer service may view itself and revoke its own sessions but not list or view others", func(t *testing.T) {
		if _, err := e.svc.Get(as(cs), cs.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.RevokeSessions(as(cs), cs.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Get(as(cs), target.ID); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("view another user: want %v, got %v", emi.ErrForbidden, err)
		}
		if _, err := e.svc.List(as(cs)); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("list: want %v, got %v", emi.ErrForbidden, err)
		}
	})
	t.Run("an auditor may list and view staff", func(t *testing.T) {
		list, err := e.svc.List(as(auditor))
		if err != nil || len(list) != 5 || list[0].Email != "admin@x.test" {
			t.Fatalf("list: %v %v", list, err)
		}
		if _, err := e.svc.Get(as(auditor), target.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("disabling a user ends its sessions and enabling lets it sign in again", func(t *testing.T) {
		signedIn := e.clock.Now()
		e.session(t, target)
		if _, err := e.svc.Current(context.Background(), target.ID, signedIn); err != nil {
			t.Fatalf("before: %v", err)
		}
		e.clock.Advance(time.Second)
		// target is an underwriter (privileged): a second administrator
		// approves the disable (a third, who then counts as one person
		// with target, so second still approves the changes below).
		out, err := e.svc.Disable(as(admin), target.ID)
		if err != nil || out.Change.Status != emi.StaffChangePending {
			t.Fatalf("disabling an underwriter took effect at once: %+v %v", out.Change, err)
		}
		third := e.createStaff(t, "third@x.test", emi.RoleAdmin)
		if _, err := e.svc.ApproveChange(as(third), out.Change.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Current(context.Background(), target.ID, signedIn); !errors.Is(err, emi.ErrSessionExpired) {
			t.Fatalf("after disable: want %v, got %v", emi.ErrSessionExpired, err)
		}
		if n := e.count(t, `SELECT count(*) FROM sessions WHERE staff_id = $1`, target.ID); n != 0 {
			t.Fatalf("%d session rows left after disable", n)
		}
		if _, err := e.svc.SignIn(fromIP("192.0.2.50"), target.Email, testPassword); !errors.Is(err, emi.ErrSignInFailed) {
			t.Fatalf("sign-in while disabled: want %v, got %v", emi.ErrSignInFailed, err)
		}
		if err := e.svc.Enable(as(admin), target.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		res, err := e.svc.SignIn(fromIP("192.0.2.50"), target.Email, testPassword)
		if err != nil {
			t.Fatalf("sign-in after enable: %v", err)
		}
		if _, err := e.svc.Current(context.Background(), target.ID, res.At); err != nil {
			t.Fatalf("a new sign-in after enable: %v", err)
		}
	})
	t.Run("changing roles ends the user's sessions and the new roles apply at the next sign-in", func(t *testing.T) {
		signedIn := e.clock.Now()
		e.session(t, target)
		e.clock.Advance(time.Second)
		out, err := e.svc.SetRoles(as(admin), target.ID, []emi.Role{emi.RoleCompliance, emi.RoleUnderwriter})
		approve(t, out, err)
		if _, err := e.svc.Current(context.Background(), target.ID, signedIn); !errors.Is(err, emi.ErrSessionExpired) {
			t.Fatalf("old session after a role change: want %v, got %v", emi.ErrSessionExpired, err)
		}
		if n := e.count(t, `SELECT count(*) FROM sessions WHERE staff_id = $1`, target.ID); n != 0 {
			t.Fatalf("%d session rows left after the role change", n)
		}
		e.clock.Advance(time.Second)
		u, err := e.svc.Current(context.Background(), target.ID, e.clock.Now())
		if err != nil || !slices.Equal(u.Roles, []emi.Role{emi.RoleUnderwriter, emi.RoleCompliance}) {
			t.Fatalf("new sign-in: %v %v", u.Roles, err)
		}
		if _, err := e.svc.SetRoles(as(admin), target.ID, nil); !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "roles") {
			t.Fatalf("no roles: want %v on roles, got %v", emi.ErrStaffValidation, err)
		}
	})
	t.Run("resetting credentials gives a temporary password, clears TOTP and ends sessions", func(t *testing.T) {
		u := e.createStaff(t, "reset@x.test", emi.RoleCompliance)
		e.enroll(t, u)
		signedIn := e.clock.Now()
		e.clock.Advance(time.Second)
		out, err := e.svc.ResetCredentials(as(admin), u.ID)
		temp := approve(t, out, err).Secret
		if _, err := e.svc.Current(context.Background(), u.ID, signedIn); !errors.Is(err, emi.ErrSessionExpired) {
			t.Fatalf("old session after a reset: want %v, got %v", emi.ErrSessionExpired, err)
		}
		if _, err := e.svc.SignIn(fromIP("192.0.2.60"), u.Email, testPassword); !errors.Is(err, emi.ErrSignInFailed) {
			t.Fatalf("the old password after a reset: want %v, got %v", emi.ErrSignInFailed, err)
		}
		res, err := e.svc.SignIn(fromIP("192.0.2.60"), u.Email, temp)
		if err != nil || !res.NeedsEnrollment || !res.MustChangePassword || !res.Staff.PasswordTemporary || res.Staff.RecoveryCodesLeft != 0 {
			t.Fatalf("sign-in with the temporary password: %+v %v", res, err)
		}
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = 'staff.reset_credentials' AND outcome = 'success'
			AND resource_token = $2 AND strpos(changes::text, $1) = 0`, temp, u.ID); n != 1 {
			t.Fatalf("%d reset audit rows without the password, want 1", n)
		}
	})
	t.Run("changing one's password needs the current one and passes the policy", func(t *testing.T) {
		u := e.createStaff(t, "change@x.test", emi.RoleCompliance)
		if err := e.svc.ChangePassword(as(u), u.ID, "wrong-password-1", "another-good-one-9"); !errors.Is(err, emi.ErrStaffValidation) || !fieldOf(err, "current_password") {
			t.Fatalf("wrong current password: want %v on current_password, got %v", emi.ErrStaffValidation, err)
		}
		if err := e.svc.ChangePassword(as(u), u.ID, testPassword, "short1"); !errors.Is(err, emi.ErrPasswordPolicy) {
			t.Fatalf("short new password: want %v, got %v", emi.ErrPasswordPolicy, err)
		}
		if err := e.svc.ChangePassword(as(admin), u.ID, testPassword, "another-good-one-9"); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("someone else's password: want %v, got %v", emi.ErrForbidden, err)
		}
		if err := e.svc.ChangePassword(as(u), u.ID, testPassword, "another-good-one-9"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.SignIn(fromIP("192.0.2.70"), u.Email, "another-good-one-9"); err != nil {
			t.Fatalf("sign-in with the new password: %v", err)
		}
	})
	t.Run("every change is audited", func(t *testing.T) {
		for _, action := range []string{"staff.set_roles", "staff.disable", "staff.enable", "staff.reset_credentials", "staff.revoke_sessions", "staff.change_password"} {
			if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = 'success'`, action); n == 0 {
				t.Errorf("no successful %s audit row", action)
			}
		}
	})
}

func TestSignInTakesAboutAsLongForAnUnknownEmailAsForAWrongPassword(t *testing.T) {
	// The measure is this process's CPU time, so the test runs alone in a
	// process of its own: goroutines other tests of the package leave
	// behind (a monitor's queue, a worker finishing) would otherwise add
	// their CPU to whichever sign-in waits longer on the database, and a
	// wrong password, which also counts the failure on the user's row,
	// waits longer (under a full make test: 60 ms of CPU against 28).
	if os.Getenv(signInTimingChild) == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), signInTimingChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a process of its own:\n%s", out)
		if err != nil {
			t.Fatalf("the measurement failed: %v", err)
		}
		return
	}
	e := newStaffEnv(t, false)
	first := e.createStaff(t, "timing0@x.test", emi.RoleAuditor)
	stored, err := e.store.StaffByID(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	// 30 users with the same real hash, so no account reaches the throttle.
	const tries = 30
	emails := []string{first.Email}
	for i := 1; i < tries; i++ {
		u := stored
		u.ID, u.Email = kernel.NewToken(), fmt.Sprintf("timing%d@x.test", i)
		if err := e.store.InsertStaff(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		emails = append(emails, u.Email)
	}
	type cost struct{ wall, cpu time.Duration }
	measure := func(i int, email string) cost {
		ctx := fromIP(fmt.Sprintf("10.%d.%d.1", i/200, i%200))
		cpu0, start := processCPU(t), time.Now()
		_, err := e.svc.SignIn(ctx, email, "wrong-password-1")
		c := cost{wall: time.Since(start), cpu: processCPU(t) - cpu0}
		if !errors.Is(err, emi.ErrSignInFailed) {
			t.Fatalf("sign-in %s: %v", email, err)
		}
		return c
	}
	measure(1000, "warm-up@x.test") // makes the dummy hash
	var unknown, wrong []cost
	for i := range tries {
		// Each pair in turn starts with the other kind: the first call
		// of a pair may pay for what the previous pair left (a GC, a
		// cold connection).
		if i%2 == 0 {
			unknown = append(unknown, measure(2*i, fmt.Sprintf("unknown%d@x.test", i)))
			wrong = append(wrong, measure(2*i+1, emails[i]))
		} else {
			wrong = append(wrong, measure(2*i+1, emails[i]))
			unknown = append(unknown, measure(2*i, fmt.Sprintf("unknown%d@x.test", i)))
		}
	}
	median := func(cs []cost, of func(cost) time.Duration) time.Duration {
		ds := make([]time.Duration, len(cs))
		for i, c := range cs {
			ds[i] = of(c)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	wall := func(c cost) time.Duration { return c.wall }
	cpu := func(c cost) time.Duration { return c.cpu }
	t.Logf("median sign-in: unknown e-mail %v (CPU %v), wrong password %v (CPU %v)",
		median(unknown, wall), median(unknown, cpu), median(wrong, wall), median(wrong, cpu))
	// What would leak is work one kind does and the other skips: the
	// password hash above all, the one costly step. It is this process's
	// CPU (argon2id on every thread it uses); the database's work is
	// another process's. So the bound is on CPU time, which the other test
	// binaries and databases sharing the machine do not move: wall time
	// under a full make test differed by 47-51 ms in both directions (an
	// unknown e-mail faster one run, slower the next) while CPU time does
	// not. The database work differs by design (a wrong password also
	// counts the failure on the user's row; 2-5 ms on a quiet machine) and
	// is logged above, not bounded.
	mu, mw := median(unknown, cpu), median(wrong, cpu)
	if mw < time.Millisecond {
		t.Fatalf("a wrong password cost %v of CPU: the measure cannot see a password hash", mw)
	}
	diff := mu - mw
	if diff < 0 {
		diff = -diff
	}
	if limit := min(mu, mw) / 4; diff >= limit {
		t.Fatalf("median CPU: unknown e-mail %v, wrong password %v; difference %v, want < %v (a path skips or repeats the hash)",
			mu, mw, diff, limit)
	}
}

// signInTimingChild marks the process that runs the sign-in timing
// measurement alone.
const signInTimingChild = "EMI_SIGNIN_TIMING_CHILD"

// processCPU is the CPU time (user and system, every thread) this process
// has used so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestSandboxStaff(t *testing.T) {
	t.Parallel()
	t.Run("seeding twice creates one enrolled user per role once, and their TOTP codes verify", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, true)
		n, err := e.svc.SeedSandbox(sys())
		if err != nil || n != 5 {
			t.Fatalf("first seed: %d %v", n, err)
		}
		n, err = e.svc.SeedSandbox(sys())
		if err != nil || n != 0 {
			t.Fatalf("second seed: %d %v", n, err)
		}
		for i, in := range staff.SandboxStaff() {
			res, err := e.svc.SignIn(fromIP(fmt.Sprintf("192.0.2.%d", i+1)), in.Email, staff.SandboxStaffPassword)
			if err != nil || res.NeedsEnrollment || !slices.Equal(res.Staff.Roles, in.Roles) {
				t.Fatalf("%s: %+v %v", in.Email, res, err)
			}
			code, err := e.svc.SandboxTOTPCode(context.Background(), in.Email)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.svc.VerifyTOTP(context.Background(), res.Staff.ID, code); err != nil {
				t.Fatalf("%s: the printed code does not verify: %v", in.Email, err)
			}
		}
		roles := map[emi.Role]bool{}
		for _, in := range staff.SandboxStaff() {
			roles[in.Roles[0]] = true
		}
		if len(roles) != len(emi.Roles()) {
			t.Fatalf("sandbox roles %v, want one user per role", roles)
		}
	})
	t.Run("after a code is used the next step's code is given, then none until the next step", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, true)
		if _, err := e.svc.SeedSandbox(sys()); err != nil {
			t.Fatal(err)
		}
		u, err := e.store.StaffByEmail(context.Background(), "admin@sandbox.emi")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			code, err := e.svc.SandboxTOTPCode(context.Background(), u.Email)
			if err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
			if err := e.svc.VerifyTOTP(context.Background(), u.ID, code); err != nil {
				t.Fatalf("code %d: %v", i+1, err)
			}
		}
		if _, err := e.svc.SandboxTOTPCode(context.Background(), u.Email); !errors.Is(err, emi.ErrTOTPInvalid) {
			t.Fatalf("third code in one step: want %v, got %v", emi.ErrTOTPInvalid, err)
		}
		e.clock.Advance(30 * time.Second)
		code, err := e.svc.SandboxTOTPCode(context.Background(), u.Email)
		if err != nil {
			t.Fatalf("one step later: %v", err)
		}
		if err := e.svc.VerifyTOTP(context.Background(), u.ID, code); err != nil {
			t.Fatalf("one step later: %v", err)
		}
	})
	t.Run("outside the sandbox there is neither seeding nor reading codes", func(t *testing.T) {
		t.Parallel()
		e := newStaffEnv(t, false)
		if _, err := e.svc.SeedSandbox(sys()); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("seed: want %v, got %v", emi.ErrForbidden, err)
		}
		u := e.createStaff(t, "prod@x.test", emi.RoleAdmin)
		e.enroll(t, u)
		if _, err := e.svc.SandboxTOTPCode(context.Background(), u.Email); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("code: want %v, got %v", emi.ErrForbidden, err)
		}
	})
}

func TestPruneDeletesExpiredSessionsAndOldSignInAttempts(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	u := e.createStaff(t, "prune@x.test", emi.RoleAuditor)
	e.session(t, u)
	if err := e.sessions.Commit("expired", []byte("x"), e.clock.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
		t.Fatal(err)
	}
	e.clock.Advance(7*24*time.Hour - time.Minute)
	if _, err := e.svc.SignIn(fromIP("192.0.2.1"), u.Email, "wrong-password-1"); !errors.Is(err, emi.ErrSignInFailed) {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	if err := e.svc.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT count(*) FROM signin_attempts`); n != 1 {
		t.Fatalf("%d sign-in attempts left, want the one newer than 7 days", n)
	}
	if n := e.count(t, `SELECT count(*) FROM sessions`); n != 0 {
		t.Fatalf("%d sessions left; both had expired by the clock", n)
	}
}

// TestSignInThrottleIsAtomicUnderBursts performs the burst attack: a burst
// of concurrent attempts all passed the throttle's count before any failure
// was recorded (101 wrong passwords were evaluated against one account
// whose policy is 5 per 15 minutes, and 15-18 TOTP guesses). Now each burst
// of 50 gets at most the limit evaluated: 5 wrong passwords per account, 5
// TOTP guesses per account, 20 attempts per address over many accounts. On
// the old code every attempt of a burst was evaluated.
func TestSignInThrottleIsAtomicUnderBursts(t *testing.T) {
	t.Parallel()
	e := newStaffEnv(t, false)
	victim := e.createStaff(t, "victim@staff.test", emi.RoleAuditor)
	totpUser := e.createStaff(t, "totp@staff.test", emi.RoleAuditor)
	e.enroll(t, totpUser)
	var others []string
	for i := range 50 {
		others = append(others, fmt.Sprintf("user%d@spray.test", i))
	}
	evaluated := func(where string, args ...any) int {
		var n int
		if err := e.db.Get(&n, `SELECT count(*) FROM signin_attempts WHERE `+where, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	burst := func(fn func(i int) error) (throttled int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if errors.Is(fn(i), emi.ErrSignInThrottled) {
					mu.Lock()
					throttled++
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		return throttled
	}

	// 50 wrong passwords for one account, from 50 addresses (the
	// per-address limit does not help here: the account's must hold).
	burst(func(i int) error {
		_, err := e.svc.SignIn(fromIP(fmt.Sprintf("198.51.100.%d", i+1)), victim.Email, "wrong-password-"+strconv.Itoa(i))
		return err
	})
	if n := evaluated(`email_lookup = $1 AND NOT success AND reason <> 'throttled'`, victim.Email); n > staff.MaxAccountFailures {
		t.Fatalf("%d wrong passwords evaluated against one account, limit %d", n, staff.MaxAccountFailures)
	}
	// 50 TOTP guesses for one account.
	burst(func(i int) error {
		return e.svc.VerifyTOTP(fromIP(fmt.Sprintf("203.0.113.%d", i+1)), totpUser.ID, fmt.Sprintf("%06d", i))
	})
	if n := evaluated(`email_lookup = $1 AND NOT success AND reason <> 'throttled'`, totpUser.Email); n > staff.MaxAccountFailures {
		t.Fatalf("%d TOTP guesses evaluated against one account, limit %d", n, staff.MaxAccountFailures)
	}
	// 50 accounts sprayed from one address.
	burst(func(i int) error {
		_, err := e.svc.SignIn(fromIP("192.0.2.7"), others[i], "wrong-password-1")
		return err
	})
	if n := evaluated(`ip = '192.0.2.7'::inet AND NOT success AND reason <> 'throttled'`); n > staff.MaxIPFailures {
		t.Fatalf("%d attempts evaluated from one address, limit %d", n, staff.MaxIPFailures)
	}
	// The right password still works once the window has passed.
	e.clock.Advance(staff.ThrottleWindow + time.Second)
	if _, err := e.svc.SignIn(fromIP("198.51.100.200"), victim.Email, testPassword); err != nil {
		t.Fatalf("sign-in after the window: %v", err)
	}
}
