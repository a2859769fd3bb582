package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
)

// SignatureStore remembers accepted signatures for the replay guard.
type SignatureStore interface {
	// RememberSignature stores digest until expires. It returns false when
	// the digest is already stored (a replay), also when another process
	// stores it at the same moment: the database decides the one winner.
	RememberSignature(ctx context.Context, digest []byte, expires time.Time) (bool, error)
}

// AuthConfig holds the authentication settings.
type AuthConfig struct {
	// Window is how far x-timestamp may be from the server clock, in either
	// direction (contract §2: 15 s).
	Window time.Duration
}

// Auth authenticates partner API requests (contract §2).
type Auth struct {
	keys   PartnerStore
	sigs   SignatureStore
	sealer Sealer
	cfg    AuthConfig
	now    Clock
}

// NewAuth returns the partner authenticator.
func NewAuth(keys PartnerStore, sigs SignatureStore, sealer Sealer, cfg AuthConfig, now Clock) *Auth {
	return &Auth{keys: keys, sigs: sigs, sealer: sealer, cfg: cfg, now: now}
}

// Authenticate verifies a signed request and returns its partner principal.
// It does not consume the signature: call Consume once the request is known
// not to be an idempotent retry. Returns emi.ErrAuthInvalid for a missing
// header, an unknown or revoked key or a wrong signature (also one made for
// another operation), and emi.ErrAuthExpired for a valid signature whose
// timestamp is outside the window.
func (a *Auth) Authenticate(ctx context.Context, r emi.SignedRequest) (emi.Principal, error) {
	if r.APIKey == "" || r.Timestamp == "" || r.Hash == "" || r.Operation == "" {
		return emi.Principal{}, emi.ErrAuthInvalid.WithDetail("missing authentication header")
	}
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		return emi.Principal{}, emi.ErrAuthInvalid.WithDetail("x-timestamp is not UNIX seconds")
	}
	k, err := a.keys.PartnerKeyByAPIKey(ctx, r.APIKey)
	if errors.Is(err, emi.ErrPartnerKeyNotFound) {
		return emi.Principal{}, emi.ErrAuthInvalid.WithDetail("unknown api key")
	}
	if err != nil {
		return emi.Principal{}, err
	}
	if k.RevokedAt != nil {
		return emi.Principal{}, emi.ErrAuthInvalid.WithDetail("revoked api key")
	}
	now := a.now()
	if !a.verify(k, r, now) {
		return emi.Principal{}, emi.ErrAuthInvalid.WithDetail("signature mismatch")
	}
	// The window is checked after the signature, so that only the key's
	// owner learns that the clock, not the secret, is wrong.
	if d := now.Sub(time.Unix(ts, 0)); d > a.cfg.Window || d < -a.cfg.Window {
		return emi.Principal{}, emi.ErrAuthExpired.WithDetail("timestamp %ds from server clock", int64(-d.Seconds()))
	}
	return emi.Principal{
		Type:           emi.ActorPartnerKey,
		ActorID:        k.ID,
		PartnerID:      k.PartnerID,
		MasterMerchant: k.Partner.MasterMerchant,
	}, nil
}

// verify checks the signature against the current secret and, during a
// rotation's overlap, the previous one.
func (a *Auth) verify(k StoredKey, r emi.SignedRequest, now time.Time) bool {
	if secret, err := a.sealer.Open(k.SecretEnc, keySecretContext(k.ID)); err == nil &&
		VerifySignature(secret, r.APIKey, r.Timestamp, r.Operation, r.Body, r.Hash) {
		return true
	}
	if k.PreviousSecretEnc == nil || k.PreviousValidUntil == nil || !now.Before(*k.PreviousValidUntil) {
		return false
	}
	secret, err := a.sealer.Open(k.PreviousSecretEnc, keySecretContext(k.ID))
	return err == nil && VerifySignature(secret, r.APIKey, r.Timestamp, r.Operation, r.Body, r.Hash)
}

// Consume records the request's signature as used. Returns
// emi.ErrAuthReplayed when it was used before, by this process or another
// one sharing the database, even when both copies arrive at the same moment.
func (a *Auth) Consume(ctx context.Context, p emi.Principal, r emi.SignedRequest) error {
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		return emi.ErrAuthInvalid
	}
	h := sha256.New()
	h.Write([]byte(p.ActorID))
	h.Write([]byte{0})
	// Hex is case-insensitive: normalise so "AB.." and "ab.." are one signature.
	h.Write([]byte(strings.ToLower(r.Hash)))
	// Past expires the timestamp itself is outside the window, so the
	// request is refused as expired and the row is no longer needed.
	expires := time.Unix(ts, 0).Add(a.cfg.Window + time.Second)
	fresh, err := a.sigs.RememberSignature(ctx, h.Sum(nil), expires)
	if err != nil {
		return err
	}
	if !fresh {
		return emi.ErrAuthReplayed
	}
	return nil
}
