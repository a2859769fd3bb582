package partners

import (
	"encoding/hex"
	"fmt"
	"strings"

	"emi/internal/emi"
)

// missingHeaders names every authentication header a request lacks (10001).
func missingHeaders(r emi.SignedRequest) *emi.Error {
	e := emi.ErrAuthInvalid.WithDetail("missing authentication header")
	for _, h := range []struct{ name, value string }{{"x-api-key", r.APIKey}, {"x-timestamp", r.Timestamp}, {"x-hash", r.Hash}} {
		if h.value == "" {
			e = e.Field(h.name, "is missing")
		}
	}
	if r.Operation == "" {
		e = e.Field("operation", "this route has no operation name") // a routing bug, not the client's
	}
	return e
}

// mismatch explains a signature that does not verify, to the owner of a
// valid API key (it is only called once the key is known): what the
// server signed (version, the operation name this route expects, the
// method, target and nonce in version 2, and the length of the body part),
// never the secret or the expected hash. When the hash verifies under a
// common mistake (another operation's name, the body with its whitespace
// in version 1, the other signature version, the previous secret after its
// overlap) it says which: AWS, in the same spirit, echoes the string it
// signed.
func (a *Auth) mismatch(k StoredKey, r emi.SignedRequest, version int) string {
	var b strings.Builder
	if got, err := hex.DecodeString(r.Hash); err != nil || len(got) != 32 {
		return "must be the 64 hex characters of an HMAC-SHA256"
	}
	fmt.Fprintf(&b, "does not match: the server signed, with signature version %d, ", version)
	if version == emi.SignatureV2 {
		fmt.Fprintf(&b, "api_key + timestamp + %q + %q + %q + %q + body (%d bytes, as received)",
			r.Operation, r.Method, r.Target, r.Nonce, len(r.Body))
	} else if v1SignsBody(r.Method) {
		fmt.Fprintf(&b, "api_key + timestamp + %q + body (%d bytes after removing spaces, tabs, CR and LF from the %d received)",
			r.Operation, len(stripSignWhitespace(r.Body)), len(r.Body))
	} else {
		fmt.Fprintf(&b, "api_key + timestamp + %q (version 1 signs no body for %s)", r.Operation, r.Method)
	}
	secret, err := a.sealer.Open(k.SecretEnc, KeySecretContext(k.ID))
	if err != nil {
		return b.String()
	}
	if hint := mismatchHint(secret, r, version); hint != "" {
		b.WriteString("; " + hint)
	} else if k.PreviousSecretEnc != nil {
		if prev, err := a.sealer.Open(k.PreviousSecretEnc, KeySecretContext(k.ID)); err == nil && verifyWith(prev, r, version) {
			b.WriteString("; it was signed with the previous secret, whose overlap has ended: sign with the current one")
		}
	}
	return b.String()
}

// mismatchHint finds the mistake under which the hash verifies, or "".
func mismatchHint(secret []byte, r emi.SignedRequest, version int) string {
	for _, op := range r.Operations {
		if op == r.Operation {
			continue
		}
		o := r
		o.Operation = op
		if verifyWith(secret, o, version) {
			return fmt.Sprintf("it was signed for operation %q, and this route is %q", op, r.Operation)
		}
	}
	if version == emi.SignatureV1 {
		if VerifySignatureV2(secret, r.APIKey, r.Timestamp, r.Operation, r.Method, r.Target, r.Nonce, r.Body, r.Hash) {
			return "it is a version 2 signature: send x-signature-version: 2"
		}
		if hashOfRaw(secret, r) {
			return "the body was signed with its whitespace: version 1 removes every space, tab, CR and LF byte first (or send x-signature-version: 2, which signs the body as sent)"
		}
		if !v1SignsBody(r.Method) && len(r.Body) > 0 && VerifySignature(secret, r.APIKey, r.Timestamp, r.Operation, r.Body, r.Hash) {
			return "the body was signed: version 1 signs the body of POST and PUT only"
		}
	} else if verifyWith(secret, r, emi.SignatureV1) {
		return "it is a version 1 signature: leave x-signature-version out, or sign version 2's string"
	}
	return ""
}

// hashOfRaw reports whether the hash is version 1's over the body with its
// whitespace kept.
func hashOfRaw(secret []byte, r emi.SignedRequest) bool {
	if !v1SignsBody(r.Method) || len(r.Body) == len(stripSignWhitespace(r.Body)) {
		return false
	}
	return VerifySignatureV2(secret, r.APIKey, r.Timestamp, r.Operation, "", "", "", r.Body, r.Hash)
}

// stripSignWhitespace returns body without the bytes version 1 removes.
func stripSignWhitespace(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for _, c := range body {
		if !isSignWhitespace(c) {
			out = append(out, c)
		}
	}
	return out
}
