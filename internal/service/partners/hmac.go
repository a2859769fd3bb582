package partners

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// StripWhitespace returns body without any space, tab, CR or LF byte, inside
// JSON strings too: that is what the partner signs (contract §2, as
// Paynetics does). It returns a new slice and leaves body untouched.
func StripWhitespace(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		out = append(out, c)
	}
	return out
}

// Signature returns the lowercase hex HMAC-SHA256, keyed with secret, over
// apiKey + timestamp + operation + the whitespace-stripped body. Pass a nil
// body for methods whose body is not signed (everything but POST and PUT).
func Signature(secret []byte, apiKey, timestamp, operation string, body []byte) string {
	return hex.EncodeToString(signatureMAC(secret, apiKey, timestamp, operation, body))
}

func signatureMAC(secret []byte, apiKey, timestamp, operation string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(apiKey))
	m.Write([]byte(timestamp))
	m.Write([]byte(operation))
	for start := 0; start < len(body); {
		// Write runs between whitespace bytes without allocating a copy.
		end := start
		for end < len(body) && !isSignWhitespace(body[end]) {
			end++
		}
		m.Write(body[start:end])
		for end < len(body) && isSignWhitespace(body[end]) {
			end++
		}
		start = end
	}
	return m.Sum(nil)
}

func isSignWhitespace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// VerifySignature reports whether hash (hex, any case) is the signature of
// the request under secret. The comparison is constant-time.
func VerifySignature(secret []byte, apiKey, timestamp, operation string, body []byte, hash string) bool {
	got, err := hex.DecodeString(hash)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, signatureMAC(secret, apiKey, timestamp, operation, body))
}

// SignatureV2 returns contract §2's version 2 signature: the lowercase hex
// HMAC-SHA256, keyed with secret, over apiKey + timestamp + operation +
// method (upper case) + target (path, plus "?" and the raw query when there
// is one) + nonce (empty when the request has none) + the body exactly as
// sent. Nothing is removed from the body, and it is signed for every method
// that carries one.
func SignatureV2(secret []byte, apiKey, timestamp, operation, method, target, nonce string, body []byte) string {
	return hex.EncodeToString(signatureV2MAC(secret, apiKey, timestamp, operation, method, target, nonce, body))
}

func signatureV2MAC(secret []byte, apiKey, timestamp, operation, method, target, nonce string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	for _, s := range [...]string{apiKey, timestamp, operation, method, target, nonce} {
		m.Write([]byte(s))
	}
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignatureV2 reports whether hash (hex, any case) is the version 2
// signature of the request under secret. The comparison is constant-time.
func VerifySignatureV2(secret []byte, apiKey, timestamp, operation, method, target, nonce string, body []byte, hash string) bool {
	got, err := hex.DecodeString(hash)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, signatureV2MAC(secret, apiKey, timestamp, operation, method, target, nonce, body))
}
