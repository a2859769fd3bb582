package staff

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// TOTP parameters (RFC 6238): HMAC-SHA1, 6 digits, 30-second steps, the
// defaults every authenticator app supports. A code is accepted for the
// current step and one step either side (clock skew), and only for a step
// newer than the last one accepted, so each code works once (ASVS 6.5.1) and
// lives at most 30 s plus the skew (6.5.5).
const (
	totpPeriod = 30
	totpSkew   = 1
	// recoveryCodeCount recovery codes are issued at a time.
	recoveryCodeCount = 10
	// qrSize is the width and height of the enrolment QR code, in pixels.
	qrSize = 240
)

func totpOpts() totp.ValidateOpts {
	return totp.ValidateOpts{Period: totpPeriod, Skew: 0, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
}

// totpStep returns the RFC 6238 time step of t.
func totpStep(t time.Time) int64 { return t.Unix() / totpPeriod }

// timeOfStep returns the start of a time step.
func timeOfStep(step int64) time.Time { return time.Unix(step*totpPeriod, 0) }

// totpSecretString is the base32 form (no padding) of a raw TOTP secret,
// as authenticator apps and the otp package take it.
func totpSecretString(raw []byte) string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
}

// openTOTPSecret returns the base32 secret of u.
func (s *Staff) openTOTPSecret(u StoredStaff) (string, error) {
	raw, err := s.sealer.Open(u.TOTPSecretEnc, TOTPSecretContext(u.ID))
	if err != nil {
		return "", emi.Internal(err)
	}
	return totpSecretString(raw), nil
}

// newTOTPSecret returns a new random 160-bit secret (RFC 4226's
// recommended length), raw and sealed for u.
func (s *Staff) newTOTPSecret(staffID string) (raw, sealed []byte, err error) {
	raw = kernel.RandomBytes(20)
	sealed, err = s.sealer.Seal(raw, TOTPSecretContext(staffID))
	if err != nil {
		return nil, nil, emi.Internal(err)
	}
	return raw, sealed, nil
}

// matchTOTP returns the time step, within the skew around now, for which
// code is the right code of secret, and false when there is none. The
// current step is tried first.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != 6 {
		return 0, false
	}
	cur := totpStep(now)
	for _, d := range []int64{0, -1, 1} {
		if d < -totpSkew || d > totpSkew {
			continue
		}
		step := cur + d
		ok, err := totp.ValidateCustom(code, secret, timeOfStep(step), totpOpts())
		if err == nil && ok {
			return step, true
		}
	}
	return 0, false
}

// Enrollment is a new TOTP secret to show to the user once: as text, as an
// otpauth:// URL and as a PNG QR code of that URL.
type Enrollment struct {
	Secret string // base32, for typing into an app
	URL    string // otpauth://totp/emi:alice@example.com?...
	QRPNG  []byte // 240 × 240 PNG of URL
}

// BeginEnrollment gives a user without a confirmed second factor a TOTP
// secret to enrol. The secret is stored sealed and stays pending until
// ConfirmEnrollment; calling BeginEnrollment again while it is pending
// returns the same secret (a re-rendered page shows the QR code the user may
// already have scanned). The portal calls it only for the user whose
// password was just checked. Returns emi.ErrStaffNotFound and
// emi.ErrForbidden when the user is disabled or already enrolled.
func (s *Staff) BeginEnrollment(ctx context.Context, staffID string) (Enrollment, error) {
	u, err := s.store.StaffByID(ctx, staffID)
	if err != nil {
		return Enrollment{}, err
	}
	if u.DisabledAt != nil || suspendedAt(u.StaffUser, s.now()) || u.TOTPEnrolled {
		return Enrollment{}, emi.ErrForbidden.WithDetail("enrolment of a disabled, suspended or enrolled user")
	}
	if u.TOTPSecretEnc != nil {
		raw, err := s.sealer.Open(u.TOTPSecretEnc, TOTPSecretContext(u.ID))
		if err != nil {
			return Enrollment{}, emi.Internal(err)
		}
		return s.enrollment(u.Email, raw)
	}
	raw, enc, err := s.newTOTPSecret(u.ID)
	if err != nil {
		return Enrollment{}, err
	}
	err = s.tx.InTx(emi.WithPrincipal(ctx, staffPrincipal(u.StaffUser)), func(ctx context.Context) error {
		ok, err := s.store.SetPendingTOTP(ctx, u.ID, enc)
		if err != nil {
			return err
		}
		if !ok {
			return emi.ErrForbidden.WithDetail("enrolment of an enrolled user")
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "staff.totp_enroll_begin", ResourceType: "staff_user", ResourceToken: u.ID})
	})
	if err != nil {
		return Enrollment{}, err
	}
	return s.enrollment(u.Email, raw)
}

// enrollment renders the otpauth URL and its QR code for secret.
func (s *Staff) enrollment(email string, raw []byte) (Enrollment, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: s.cfg.Issuer, AccountName: email, Period: totpPeriod,
		Secret: raw, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return Enrollment{}, emi.Internal(err)
	}
	img, err := key.Image(qrSize, qrSize)
	if err != nil {
		return Enrollment{}, emi.Internal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return Enrollment{}, emi.Internal(err)
	}
	return Enrollment{Secret: key.Secret(), URL: key.URL(), QRPNG: buf.Bytes()}, nil
}

// ConfirmEnrollment completes the enrolment with the first code of the
// user's app, and with it the sign-in: it returns 10 new recovery codes,
// shown this once and stored only as hashes. A wrong code returns
// emi.ErrTOTPInvalid and counts as a failed sign-in (throttling and
// lockout). Also returns emi.ErrSignInThrottled, emi.ErrSignInFailed for a
// disabled or locked user, and emi.ErrForbidden when there is no pending
// secret.
func (s *Staff) ConfirmEnrollment(ctx context.Context, staffID, code string) ([]string, error) {
	var codes []string
	var step int64
	check := func(ctx context.Context, u StoredStaff, now time.Time) (bool, error) {
		if u.TOTPEnrolled || u.TOTPSecretEnc == nil {
			return false, emi.ErrForbidden.WithDetail("no pending TOTP enrolment")
		}
		secret, err := s.openTOTPSecret(u)
		if err != nil {
			return false, err
		}
		var ok bool
		step, ok = matchTOTP(secret, code, now)
		return ok, nil
	}
	onSuccess := func(ctx context.Context, u StoredStaff, now time.Time) error {
		ok, err := s.store.ConfirmTOTP(ctx, u.ID, step, now)
		if err != nil {
			return err
		}
		if !ok {
			return emi.ErrTOTPInvalid.WithDetail("enrolment confirmed concurrently")
		}
		codes, err = s.replaceRecoveryCodes(ctx, u.ID, now)
		return err
	}
	err := s.secondFactor(ctx, staffID, factor{action: "staff.totp_enroll", name: "totp", reasonOK: reasonEnrolled,
		reasonBad: reasonBadTOTP, bad: emi.ErrTOTPInvalid, completes: true, check: check, onSuccess: onSuccess})
	return codes, err
}

// VerifyTOTP checks the second factor of a sign-in and completes it. Returns
// emi.ErrTOTPInvalid for a wrong code or one already used (each code, that
// is each time step, is accepted once, also when several requests race),
// which counts as a failed sign-in (throttling and lockout); also
// emi.ErrSignInThrottled, and emi.ErrSignInFailed for a disabled or locked
// user. The portal calls it only for the user whose password was just
// checked.
func (s *Staff) VerifyTOTP(ctx context.Context, staffID, code string) error {
	return s.secondFactor(ctx, staffID, factor{action: "staff.signin_totp", name: "totp", reasonOK: reasonTOTP,
		reasonBad: reasonBadTOTP, bad: emi.ErrTOTPInvalid, completes: true, check: s.consumeTOTP(code)})
}

// consumeTOTP returns a check that accepts code for an enrolled user and
// marks its time step as used.
func (s *Staff) consumeTOTP(code string) func(ctx context.Context, u StoredStaff, now time.Time) (bool, error) {
	return func(ctx context.Context, u StoredStaff, now time.Time) (bool, error) {
		if !u.TOTPEnrolled {
			return false, nil
		}
		secret, err := s.openTOTPSecret(u)
		if err != nil {
			return false, err
		}
		step, ok := matchTOTP(secret, code, now)
		if !ok {
			return false, nil
		}
		// The database decides the one winner among concurrent uses.
		return s.store.ConsumeTOTPStep(ctx, u.ID, step)
	}
}

// UseRecoveryCode completes a sign-in with a recovery code instead of a
// TOTP code. Each code works once. Returns emi.ErrTOTPInvalid for a wrong or
// used code (counted as a failed sign-in), emi.ErrSignInThrottled, and
// emi.ErrSignInFailed for a disabled or locked user.
func (s *Staff) UseRecoveryCode(ctx context.Context, staffID, code string) error {
	check := func(ctx context.Context, u StoredStaff, now time.Time) (bool, error) {
		norm := normalizeRecoveryCode(code)
		if len(norm) != recoveryCodeLen {
			return false, nil
		}
		return s.store.UseRecoveryCode(ctx, u.ID, recoveryCodeHash(u.ID, norm), now)
	}
	return s.secondFactor(ctx, staffID, factor{action: "staff.signin_recovery_code", name: "recovery_code",
		reasonOK: reasonRecoveryCode, reasonBad: reasonBadRecovery, bad: emi.ErrTOTPInvalid, completes: true, check: check})
}

// RegenerateRecoveryCodes replaces the signed-in user's recovery codes with
// 10 new ones (shown once). It needs a valid TOTP code, as re-authentication
// (ASVS 7.5.1); the principal must be the user itself (else
// emi.ErrForbidden). Returns emi.ErrTOTPInvalid for a wrong or used code
// (counted as a failed attempt) and emi.ErrSignInThrottled.
func (s *Staff) RegenerateRecoveryCodes(ctx context.Context, staffID, totpCode string) ([]string, error) {
	if !isSelf(ctx, staffID) {
		s.deny(ctx, "staff.recovery_codes_regenerate", staffID, "not own account")
		return nil, emi.ErrForbidden.WithDetail("recovery codes of another user")
	}
	var codes []string
	onSuccess := func(ctx context.Context, u StoredStaff, now time.Time) (err error) {
		codes, err = s.replaceRecoveryCodes(ctx, u.ID, now)
		return err
	}
	err := s.secondFactor(ctx, staffID, factor{action: "staff.recovery_codes_regenerate", name: "totp", reasonOK: reasonTOTP,
		reasonBad: reasonBadTOTP, bad: emi.ErrTOTPInvalid, check: s.consumeTOTP(totpCode), onSuccess: onSuccess})
	return codes, err
}

// factor describes one second-factor check for secondFactor.
type factor struct {
	action    string // audit action
	name      string // totp or recovery_code, for the audit row
	reasonOK  string
	reasonBad string
	bad       *emi.Error // returned when check says no
	completes bool       // success completes a sign-in
	// check verifies the factor; an error aborts without counting a
	// failure.
	check func(ctx context.Context, u StoredStaff, now time.Time) (bool, error)
	// onSuccess runs in the transaction that records the success.
	onSuccess func(ctx context.Context, u StoredStaff, now time.Time) error
}

// secondFactor runs a second-factor check under the same throttling and
// lockout as passwords, and records the attempt and its audit row.
func (s *Staff) secondFactor(ctx context.Context, staffID string, f factor) error {
	u, err := s.store.StaffByID(ctx, staffID)
	if errors.Is(err, emi.ErrStaffNotFound) {
		return emi.ErrSignInFailed.WithDetail("unknown staff user")
	}
	if err != nil {
		return err
	}
	lookup := emailLookup(u.Email)
	release, err := s.throttle(ctx, &u, lookup, f.action)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	a := attempt{user: &u, lookup: lookup, action: f.action, factor: f.name}
	if u.DisabledAt != nil || suspendedAt(u.StaffUser, now) || locked(u, now) {
		switch {
		case u.DisabledAt != nil:
			a.reason = reasonDisabled
		case suspendedAt(u.StaffUser, now):
			a.reason = reasonSuspended
		default:
			a.reason = reasonLocked
		}
		if err := s.record(ctx, a); err != nil {
			return err
		}
		return emi.ErrSignInFailed.WithDetail("%s", a.reason)
	}
	ok, err := f.check(ctx, u, now)
	if err != nil {
		return err
	}
	if !ok {
		a.reason, a.countFailure = f.reasonBad, true
		if err := s.record(ctx, a); err != nil {
			return err
		}
		return f.bad
	}
	a.reason, a.success, a.completes = f.reasonOK, true, f.completes
	if f.onSuccess != nil {
		a.also = func(ctx context.Context) error { return f.onSuccess(ctx, u, now) }
	}
	if err := s.record(ctx, a); err != nil {
		return err
	}
	release() // a success does not count against the throttle
	return nil
}

// Recovery codes are 10 characters of base32 (50 bits from crypto/rand),
// shown as two groups of five ("k3jd9-x2mq7"); input is accepted in any case
// with or without the dash and spaces.
//
// They are stored as SHA-256("emi/recovery/v1:" + staff id + ":" + code),
// not with argon2id: a code is only a second factor (the password, hashed
// with argon2id, is needed too), it has 50 bits of entropy where passwords
// are guessable, and each use would otherwise cost up to ten 36 ms argon2id
// verifications because a salted slow hash cannot be looked up. The staff id
// acts as a salt, so codes of different users cannot be attacked together.
// A keyed hash (seal.Keyring's HMAC lookup) would be better still but is not
// available through the Sealer interface.
const recoveryCodeLen = 10

func normalizeRecoveryCode(code string) string {
	r := strings.NewReplacer("-", "", " ", "")
	return strings.ToLower(r.Replace(strings.TrimSpace(code)))
}

func recoveryCodeHash(staffID, normalized string) []byte {
	h := sha256.Sum256([]byte("emi/recovery/v1:" + staffID + ":" + normalized))
	return h[:]
}

// replaceRecoveryCodes stores 10 new codes for the user and returns them
// for display.
func (s *Staff) replaceRecoveryCodes(ctx context.Context, staffID string, now time.Time) ([]string, error) {
	codes := make([]string, recoveryCodeCount)
	hashes := make([][]byte, recoveryCodeCount)
	for i := range codes {
		c := strings.ToLower(rand.Text()[:recoveryCodeLen])
		codes[i] = c[:5] + "-" + c[5:]
		hashes[i] = recoveryCodeHash(staffID, c)
	}
	if err := s.store.ReplaceRecoveryCodes(ctx, staffID, hashes, now); err != nil {
		return nil, err
	}
	return codes, nil
}
