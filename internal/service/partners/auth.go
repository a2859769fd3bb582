package partners

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
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
	sealer kernel.Sealer
	cfg    AuthConfig
	now    kernel.Clock
}

// AuthDeps is what Auth needs; NewAuth checks that none is nil.
type AuthDeps struct {
	Keys       PartnerStore
	Signatures SignatureStore
	Sealer     kernel.Sealer
	Config     AuthConfig
	Now        kernel.Clock
}

// NewAuth returns the partner authenticator.
func NewAuth(d AuthDeps) *Auth {
	kernel.MustHave("Auth", d)
	return &Auth{keys: d.Keys, sigs: d.Signatures, sealer: d.Sealer, cfg: d.Config, now: d.Now}
}

// Authenticate verifies a signed request and returns its partner principal.
// It does not consume the signature: call Consume once the request is known
// not to be an idempotent retry. Returns emi.ErrAuthInvalid for a missing
// header, an unknown or revoked key, an unknown signature version, a
// malformed nonce, a version 1 signature on a key that requires version 2,
// or a wrong signature (also one made for another operation, or in version
// 2 for another method or target), and emi.ErrAuthExpired for a valid
// signature whose timestamp is outside the window.
func (a *Auth) Authenticate(ctx context.Context, r emi.SignedRequest) (emi.Principal, error) {
	if r.APIKey == "" || r.Timestamp == "" || r.Hash == "" || r.Operation == "" {
		return emi.Principal{}, missingHeaders(r)
	}
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		return emi.Principal{}, emi.ErrAuthInvalid.Field("x-timestamp", "must be UNIX seconds, a whole number such as 1700000000").
			WithDetail("x-timestamp is not UNIX seconds")
	}
	version, err := signatureVersion(r)
	if err != nil {
		return emi.Principal{}, err
	}
	k, err := a.keys.PartnerKeyByAPIKey(ctx, r.APIKey)
	if errors.Is(err, emi.ErrPartnerKeyNotFound) {
		return emi.Principal{}, emi.ErrAuthInvalid.Field("x-api-key", "is not a known API key").WithDetail("unknown api key")
	}
	if err != nil {
		return emi.Principal{}, err
	}
	if k.RevokedAt != nil {
		return emi.Principal{}, emi.ErrAuthInvalid.Field("x-api-key", "has been revoked").WithDetail("revoked api key")
	}
	now := a.now()
	if !a.verify(k, r, version, now) {
		return emi.Principal{}, emi.ErrAuthInvalid.Field("x-hash", a.mismatch(k, r, version)).WithDetail("signature mismatch")
	}
	// Checked after the signature, as the window below: only the key's
	// owner learns what the key requires.
	if version < k.MinSignatureVersion {
		return emi.Principal{}, emi.ErrAuthInvalid.Field("x-signature-version", fmt.Sprintf("this API key requires signature version %d", k.MinSignatureVersion)).
			WithDetail("this api key requires signature version %d", k.MinSignatureVersion)
	}
	// The window is checked after the signature, so that only the key's
	// owner learns that the clock, not the secret, is wrong.
	if d := now.Sub(time.Unix(ts, 0)); d > a.cfg.Window || d < -a.cfg.Window {
		dir, secs := "behind", int64(d.Seconds())
		if secs < 0 {
			dir, secs = "ahead of", -secs
		}
		return emi.Principal{}, emi.ErrAuthExpired.Field("x-timestamp", fmt.Sprintf("is %d s %s the server clock (%d); the window is %d s either way",
			secs, dir, now.Unix(), int64(a.cfg.Window.Seconds()))).
			WithDetail("timestamp %ds from server clock", int64(-d.Seconds()))
	}
	return emi.Principal{
		Type:           emi.ActorPartnerKey,
		ActorID:        k.ID,
		PartnerID:      k.PartnerID,
		MasterMerchant: k.Partner.MasterMerchant,
	}, nil
}

// MaxNonceLen is the longest x-nonce accepted (contract §2).
const MaxNonceLen = 64

// signatureVersion reads x-signature-version (absent or "1": version 1,
// "2": version 2, anything else refused) and checks version 2's nonce: 1 to
// 64 characters of [A-Za-z0-9_-], or none. Version 1 does not sign x-nonce,
// so there it is ignored, and it is not part of the replay tuple either.
func signatureVersion(r emi.SignedRequest) (int, error) {
	switch r.Version {
	case "", "1":
		return emi.SignatureV1, nil
	case "2":
	default:
		return 0, emi.ErrAuthInvalid.Field("x-signature-version", "must be 1 or 2").WithDetail("unsupported x-signature-version: use 1 or 2")
	}
	if len(r.Nonce) > MaxNonceLen {
		return 0, emi.ErrAuthInvalid.Field("x-nonce", fmt.Sprintf("must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNonceLen)).
			WithDetail("x-nonce must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNonceLen)
	}
	for i := 0; i < len(r.Nonce); i++ {
		if c := r.Nonce[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return 0, emi.ErrAuthInvalid.Field("x-nonce", fmt.Sprintf("must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNonceLen)).
				WithDetail("x-nonce must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNonceLen)
		}
	}
	return emi.SignatureV2, nil
}

// verify checks the signature against the current secret and, during a
// rotation's overlap, the previous one.
func (a *Auth) verify(k StoredKey, r emi.SignedRequest, version int, now time.Time) bool {
	if secret, err := a.sealer.Open(k.SecretEnc, KeySecretContext(k.ID)); err == nil && verifyWith(secret, r, version) {
		return true
	}
	if k.PreviousSecretEnc == nil || k.PreviousValidUntil == nil || !now.Before(*k.PreviousValidUntil) {
		return false
	}
	secret, err := a.sealer.Open(k.PreviousSecretEnc, KeySecretContext(k.ID))
	return err == nil && verifyWith(secret, r, version)
}

func verifyWith(secret []byte, r emi.SignedRequest, version int) bool {
	if version == emi.SignatureV2 {
		return VerifySignatureV2(secret, r.APIKey, r.Timestamp, r.Operation, r.Method, r.Target, r.Nonce, r.Body, r.Hash)
	}
	var body []byte
	if v1SignsBody(r.Method) {
		body = r.Body
	}
	return VerifySignature(secret, r.APIKey, r.Timestamp, r.Operation, body, r.Hash)
}

// v1SignsBody reports whether version 1 signs the body: POST and PUT only
// (contract §2).
func v1SignsBody(method string) bool { return method == "POST" || method == "PUT" }

// Consume records the request as used (the replay guard of contract §2).
// Returns emi.ErrAuthReplayed when the same request was accepted before, by
// this process or another one sharing the database, even when both copies
// arrive at the same moment.
//
// "The same request" is, in version 1, the tuple (API key, x-timestamp,
// method, request target, x-hash): the version 1 signature covers neither
// the method nor the target, so the same signature on another card, page
// or method is another request. In version 2 the signature already binds
// the method, the target and the nonce, so the guard keys on (API key,
// x-timestamp, x-hash) alone. That is the contract's tuple with the nonce,
// and stricter in one case only: version 2 concatenates target, nonce and
// body without separators, so "/v2/accounts/1/10" with nonce "x" and
// "/v2/accounts/1/1" with nonce "0x" carry one signature. Keyed on the
// target, a captured request could be re-aimed that way; keyed on the
// signature, it is a replay.
func (a *Auth) Consume(ctx context.Context, p emi.Principal, r emi.SignedRequest) error {
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		return emi.ErrAuthInvalid
	}
	version, err := signatureVersion(r)
	if err != nil {
		return err
	}
	// Past expires the timestamp itself is outside the window, so the
	// request is refused as expired and the row is no longer needed.
	expires := time.Unix(ts, 0).Add(a.cfg.Window + time.Second)
	fresh, err := a.sigs.RememberSignature(ctx, replayDigest(p.ActorID, r, version), expires)
	if err != nil {
		return err
	}
	if !fresh {
		return emi.ErrAuthReplayed
	}
	return nil
}

// replayDigest is the stored identity of a request for the replay guard
// (see Consume). Each part is length-prefixed, so no two tuples share a
// digest.
func replayDigest(keyID string, r emi.SignedRequest, version int) []byte {
	h := sha256.New()
	part := func(s string) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s))) // #nosec G115 -- request parts are bounded far below 4 GiB
		h.Write(n[:])
		h.Write([]byte(s))
	}
	part(keyID)
	part(strconv.Itoa(version))
	part(r.Timestamp)
	// Hex is case-insensitive: normalise so "AB.." and "ab.." are one signature.
	part(strings.ToLower(r.Hash))
	if version == emi.SignatureV1 {
		part(r.Method)
		part(r.Target)
	}
	return h.Sum(nil)
}
