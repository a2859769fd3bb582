package staff

import (
	"context"
	"errors"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// SignInResult is the outcome of the first factor.
type SignInResult struct {
	// Staff is the user whose password was right.
	Staff emi.StaffUser
	// NeedsEnrollment is true when the user has no confirmed TOTP secret:
	// the portal continues with BeginEnrollment and ConfirmEnrollment
	// instead of VerifyTOTP.
	NeedsEnrollment bool
	// MustChangePassword is true when the password is temporary (issued
	// by an administrator's action): the session may do nothing but choose
	// a new one (ChangePassword), then enrol or check TOTP.
	MustChangePassword bool
	// At is when the password was checked, by the service's clock. The
	// portal keeps it in the session as the sign-in time it later gives to
	// Current, so a revocation that happens while the user is between the
	// two factors also ends this sign-in.
	At time.Time
}

// SignIn checks the first factor: the password of the staff user with that
// e-mail address (case-insensitive). A nil error means only that the
// password was right; the session is not signed in until VerifyTOTP,
// UseRecoveryCode or ConfirmEnrollment succeeds.
//
// Throttling is checked first, before the password and alike for known and
// unknown addresses: when the address has MaxAccountFailures failed attempts,
// or the request's IP (emi.RequestMetaFrom) has MaxIPFailures, within the
// last ThrottleWindow, SignIn returns emi.ErrSignInThrottled. Failures of the
// second factor count too; throttled attempts do not. LockoutThreshold
// consecutive failures lock the account for LockoutDuration (PCI DSS 8.3.4).
//
// An unknown address, a wrong password, a disabled account, a locked
// account and a temporary password older than emi.TemporaryPasswordTTL all
// return emi.ErrSignInFailed, and take about the same time: an
// unknown address is checked against a dummy argon2id hash. Every attempt
// writes a signin_attempts row and an audit row ("staff.signin"; the actor
// is the user when the address is known, else system "signin", with the
// address in changes; never the password).
func (s *Staff) SignIn(ctx context.Context, email, password string) (SignInResult, error) {
	// The dummy hash is made at the first sign-in, known address or not,
	// so that even the first unknown address takes no longer than others.
	dummy, err := s.dummy()
	if err != nil {
		return SignInResult{}, err
	}
	lookup := emailLookup(email)
	var user *StoredStaff
	if len(lookup) > maxEmailLen {
		lookup = strings.ToValidUTF8(lookup[:maxEmailLen], "") // no such user; bounded for the attempt log
	} else {
		u, err := s.store.StaffByEmail(ctx, lookup)
		switch {
		case err == nil:
			user = &u
		case !errors.Is(err, emi.ErrStaffNotFound):
			return SignInResult{}, err
		}
	}
	const action = "staff.signin"
	release, err := s.throttle(ctx, user, lookup, action)
	if err != nil {
		return SignInResult{}, err
	}
	hash := dummy
	if user != nil {
		hash = user.PasswordHash
	}
	ok, rehash, err := s.cfg.PasswordCost.verifyPassword(password, hash)
	if err != nil {
		return SignInResult{}, err
	}
	now := s.now().UTC()
	fail := attempt{user: user, lookup: lookup, action: action, factor: "password"}
	switch {
	case user == nil:
		fail.reason = reasonUnknownEmail
	case user.DisabledAt != nil:
		fail.reason = reasonDisabled
	case suspendedAt(user.StaffUser, now):
		fail.reason = reasonSuspended
	case locked(*user, now):
		fail.reason = reasonLocked
	case !ok:
		fail.reason, fail.countFailure = reasonBadPassword, true
	case user.PasswordTemporary && now.After(user.PasswordSetAt.Add(emi.TemporaryPasswordTTL)):
		fail.reason = reasonTempExpired
	}
	if fail.reason != "" {
		if err := s.record(ctx, fail); err != nil {
			return SignInResult{}, err
		}
		return SignInResult{}, emi.ErrSignInFailed.WithDetail("%s", fail.reason)
	}
	err = s.record(ctx, attempt{user: user, lookup: lookup, action: action, factor: "password", reason: reasonPassword, success: true,
		also: func(ctx context.Context) error {
			if !rehash {
				return nil
			}
			h, err := s.cfg.PasswordCost.hashPassword(password)
			if err != nil {
				return err
			}
			return s.store.UpdateStaffPassword(ctx, user.ID, h, user.PasswordTemporary, nil)
		}})
	if err != nil {
		return SignInResult{}, err
	}
	release() // a success does not count against the throttle
	return SignInResult{Staff: user.StaffUser, NeedsEnrollment: !user.TOTPEnrolled, MustChangePassword: user.PasswordTemporary,
		At: now}, nil
}

// maxEmailLen is the longest e-mail address a staff user can have.
const maxEmailLen = 254

// verifyPassword checks password against hash. An input longer than any
// valid password is refused, after spending the same time on a hash.
func (c PasswordCost) verifyPassword(password, hash string) (ok, rehash bool, err error) {
	if len(password) > maxSignInBytes {
		_, _, err := c.checkPassword("", hash)
		return false, false, err
	}
	return c.checkPassword(password, hash)
}

// dummy returns a hash of a random password with the current parameters.
func (s *Staff) dummy() (string, error) {
	s.dummyOnce.Do(func() { s.dummyHash, s.dummyErr = s.cfg.PasswordCost.hashPassword(kernel.RandomString(24)) })
	return s.dummyHash, s.dummyErr
}

func locked(u StoredStaff, now time.Time) bool {
	return u.LockedUntil != nil && now.Before(*u.LockedUntil)
}

// Rate-limit scopes of sign-in attempts (StaffConfig.Limits).
const (
	signInAccountScope = "signin.account"
	signInIPScope      = "signin.ip"
)

// throttle returns emi.ErrSignInThrottled, after recording the attempt, when
// the e-mail lookup or the request's IP has too many recent failures.
//
// The decision is atomic: counting recorded failures alone let a burst of
// concurrent attempts all pass the count before any of them was recorded
// (101 wrong passwords were evaluated against one account, 15-18 TOTP
// guesses). So each attempt also takes a slot per address and per IP
// (StaffConfig.Limits: MaxAccountFailures and MaxIPFailures per
// ThrottleWindow, decided under an advisory lock) before it is evaluated; a
// failure keeps its slots, and the caller gives them back when the attempt
// succeeds (the release func, never nil).
func (s *Staff) throttle(ctx context.Context, user *StoredStaff, lookup, action string) (release func(), err error) {
	release = func() {}
	ip := emi.RequestMetaFrom(ctx).IP
	now := s.now().UTC()
	byEmail, byIP, err := s.store.CountSignInFailures(ctx, lookup, ip, now.Add(-ThrottleWindow))
	if err != nil {
		return release, err
	}
	throttled := byEmail >= MaxAccountFailures || byIP >= MaxIPFailures
	ipKey := ""
	if ip.IsValid() {
		ipKey = ip.String()
	}
	if !throttled && s.cfg.Limits != nil {
		took, _, err := s.cfg.Limits.Take(ctx, signInAccountScope, lookup, MaxAccountFailures, ThrottleWindow, now)
		if err != nil {
			return release, err
		}
		tookIP := false
		if took && ipKey != "" {
			if tookIP, _, err = s.cfg.Limits.Take(ctx, signInIPScope, ipKey, MaxIPFailures, ThrottleWindow, now); err != nil {
				return release, err
			}
		}
		switch {
		case took && (tookIP || ipKey == ""):
			release = func() {
				_ = s.cfg.Limits.Release(ctx, signInAccountScope, lookup, now)
				if ipKey != "" {
					_ = s.cfg.Limits.Release(ctx, signInIPScope, ipKey, now)
				}
			}
		case took:
			_ = s.cfg.Limits.Release(ctx, signInAccountScope, lookup, now)
			throttled = true
		default:
			throttled = true
		}
	}
	if !throttled {
		return release, nil
	}
	if err := s.record(ctx, attempt{user: user, lookup: lookup, action: action, reason: reasonThrottled}); err != nil {
		return release, err
	}
	return release, emi.ErrSignInThrottled.WithDetail("%d failures for the address, %d from the IP (or as many attempts under way)", byEmail, byIP)
}

// attempt describes one authentication attempt to record.
type attempt struct {
	user         *StoredStaff // nil when the address is unknown
	lookup       string
	action       string
	factor       string // password, totp, recovery_code
	reason       string
	success      bool
	countFailure bool // adds to the consecutive failures (and may lock)
	completes    bool // the sign-in is complete: clears failures, sets last_sign_in_at
	also         func(ctx context.Context) error
}

// record writes the attempt row, the failure count or the sign-in success,
// anything in a.also, and the audit row, in one transaction.
func (s *Staff) record(ctx context.Context, a attempt) error {
	now := s.now().UTC()
	meta := emi.RequestMetaFrom(ctx)
	row := SignInAttempt{EmailLookup: a.lookup, IP: meta.IP, At: now, Success: a.success, Reason: a.reason}
	p := emi.SystemPrincipal("signin")
	resource := ""
	if a.user != nil {
		row.StaffID, resource = a.user.ID, a.user.ID
		p = staffPrincipal(a.user.StaffUser)
	}
	outcome := emi.OutcomeFailure
	switch {
	case a.success:
		outcome = emi.OutcomeSuccess
	case a.reason == reasonThrottled:
		outcome = emi.OutcomeDenied
	}
	changes := map[string]any{"email": a.lookup, "reason": a.reason}
	if a.factor != "" {
		changes["factor"] = a.factor
	}
	return s.tx.InTx(emi.WithPrincipal(ctx, p), func(ctx context.Context) error {
		if err := s.store.InsertSignInAttempt(ctx, row); err != nil {
			return err
		}
		if a.user != nil && a.countFailure {
			lockedNow, err := s.store.RecordSignInFailure(ctx, a.user.ID, LockoutThreshold, now.Add(LockoutDuration))
			if err != nil {
				return err
			}
			if lockedNow {
				changes["locked_until"] = now.Add(LockoutDuration)
			}
		}
		if a.user != nil && a.completes {
			if err := s.store.RecordSignInSuccess(ctx, a.user.ID, now); err != nil {
				return err
			}
		}
		if a.also != nil {
			if err := a.also(ctx); err != nil {
				return err
			}
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: a.action, ResourceType: "staff_user", ResourceToken: resource,
			Outcome: outcome, Changes: changes})
	})
}

// recordFailure records a failed second factor or re-authentication of a
// known user; it counts against throttling and lockout.
func (s *Staff) recordFailure(ctx context.Context, u StoredStaff, action, reason string) error {
	return s.record(ctx, attempt{user: &u, lookup: emailLookup(u.Email), action: action, reason: reason, countFailure: true})
}
