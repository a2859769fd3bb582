package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"emi/internal/emi"
)

// SecretPrefix starts every signing secret as it is shown and stored.
const SecretPrefix = "whsec_"

// Secret sizes in bytes: NewSecret makes SecretSize, ParseSecret accepts the
// Standard Webhooks range MinSecretSize to MaxSecretSize.
const (
	SecretSize    = 32
	MinSecretSize = 24
	MaxSecretSize = 64
)

// Sign returns the webhook-signature header value for msg: for each of
// msg.Secrets, "v1," followed by the standard base64 of HMAC-SHA256 keyed
// with the secret over msg.ID + "." + msg.Timestamp in UNIX seconds + "." +
// msg.Body, the signatures separated by a single space. It returns "" when
// msg has no secrets; it cannot fail otherwise.
func Sign(msg emi.WebhookMessage) string {
	if len(msg.Secrets) == 0 {
		return ""
	}
	ts := strconv.FormatInt(msg.Timestamp.Unix(), 10)
	var b strings.Builder
	b.Grow(len(msg.Secrets) * (4 + base64.StdEncoding.EncodedLen(sha256.Size)))
	var sum [sha256.Size]byte
	var enc [44]byte // base64.StdEncoding.EncodedLen(sha256.Size)
	for i, secret := range msg.Secrets {
		mac := hmac.New(sha256.New, secret)
		// Written piece by piece so a large body is never copied.
		mac.Write([]byte(msg.ID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(msg.Body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		base64.StdEncoding.Encode(enc[:], mac.Sum(sum[:0]))
		b.Write(enc[:])
	}
	return b.String()
}

// ParseSecret returns the HMAC key of a secret shown as "whsec_" followed by
// standard, padded base64. It returns an error, which never quotes the
// secret, when the prefix is missing, the text is not canonical base64 (white
// space included) or the key is not MinSecretSize to MaxSecretSize bytes long.
func ParseSecret(whsec string) ([]byte, error) {
	enc, ok := strings.CutPrefix(whsec, SecretPrefix)
	if !ok {
		return nil, errors.New("webhook secret must start with " + SecretPrefix)
	}
	// The decoder skips CR and LF; a secret must not contain them either, so
	// that one secret has exactly one spelling.
	if strings.ContainsFunc(enc, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return nil, errors.New("webhook secret must not contain spaces, line breaks or non-ASCII characters")
	}
	key, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return nil, errors.New("webhook secret is not valid base64 after " + SecretPrefix)
	}
	if len(key) < MinSecretSize || len(key) > MaxSecretSize {
		return nil, fmt.Errorf("webhook secret must decode to %d to %d bytes, not %d", MinSecretSize, MaxSecretSize, len(key))
	}
	return key, nil
}

// NewSecret returns a fresh signing secret: its text form ("whsec_" + base64
// of SecretSize random bytes), to store and show once, and the key itself,
// for WebhookMessage.Secrets. It cannot fail: crypto/rand.Read never returns
// an error (the program stops if the system has no randomness).
func NewSecret() (string, []byte) {
	key := make([]byte, SecretSize)
	_, _ = rand.Read(key)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), key
}
