package partners

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// reference is the signing rule of contract §2 written as plainly as
// possible, to check the optimised signatureMAC against.
func reference(secret []byte, key, ts, op string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key + ts + op))
	m.Write(StripWhitespace(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignatureKnownVector(t *testing.T) {
	// Computed independently of this code:
	// printf '%s' 'ak_test1700000000aml_check{"a":"bc"}' | openssl dgst -sha256 -hmac secret
	const want = "c51c88c95f9322d9177f2b2934ba48128bdfddb73cb3dfe5bc96cc229bb4d82d"
	for _, body := range []string{`{"a":"bc"}`, "{ \"a\" : \"b c\" }\n", "\r\n\t{\"a\":\"bc\"}"} {
		if got := Signature([]byte("secret"), "ak_test", "1700000000", "aml_check", []byte(body)); got != want {
			t.Errorf("Signature over %q = %s, want %s", body, got, want)
		}
	}
	if got := reference([]byte("secret"), "ak_test", "1700000000", "aml_check", []byte(`{"a":"bc"}`)); got != want {
		t.Errorf("reference = %s, want %s", got, want)
	}
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("as_secret")
	body := []byte("{\n \"name\": \"Elin\"\n}")
	good := Signature(secret, "ak_1", "1700000000", "user_create", body)
	cases := []struct {
		name              string
		secret            []byte
		key, ts, op, hash string
		body              []byte
		want              bool
	}{
		{"the signature verifies", secret, "ak_1", "1700000000", "user_create", good, body, true},
		{"upper-case hex verifies", secret, "ak_1", "1700000000", "user_create", strings.ToUpper(good), body, true},
		{"the compact body verifies", secret, "ak_1", "1700000000", "user_create", good, []byte(`{"name":"Elin"}`), true},
		{"another secret fails", []byte("as_other"), "ak_1", "1700000000", "user_create", good, body, false},
		{"another key fails", secret, "ak_2", "1700000000", "user_create", good, body, false},
		{"another timestamp fails", secret, "ak_1", "1700000001", "user_create", good, body, false},
		{"another operation fails", secret, "ak_1", "1700000000", "user_update", good, body, false},
		{"another body fails", secret, "ak_1", "1700000000", "user_create", good, []byte(`{"name":"Eli"}`), false},
		{"a truncated hash fails", secret, "ak_1", "1700000000", "user_create", good[:62], body, false},
		{"a non-hex hash fails", secret, "ak_1", "1700000000", "user_create", "zz" + good[2:], body, false},
		{"an empty hash fails", secret, "ak_1", "1700000000", "user_create", "", body, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := VerifySignature(c.secret, c.key, c.ts, c.op, c.body, c.hash); got != c.want {
				t.Fatalf("VerifySignature = %v, want %v", got, c.want)
			}
		})
	}
}

func TestStripWhitespace(t *testing.T) {
	in := []byte(" {\t\"a b\":\r\n 1 }\n")
	if got := string(StripWhitespace(in)); got != `{"ab":1}` {
		t.Fatalf("StripWhitespace = %q", got)
	}
	if string(in) != " {\t\"a b\":\r\n 1 }\n" {
		t.Fatal("StripWhitespace changed its input")
	}
	// Other Unicode and ASCII spacing is not whitespace for the signature.
	if got := StripWhitespace([]byte("a\u00a0b\vc\fd")); !bytes.Equal(got, []byte("a\u00a0b\vc\fd")) {
		t.Fatalf("StripWhitespace removed bytes it must keep: %q", got)
	}
}

func FuzzStripWhitespace(f *testing.F) {
	for _, s := range []string{"", " ", "{\"a\": \"b c\"}\n", "\t\r\n", "\xff\xfe \x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := StripWhitespace(in)
		ws := 0
		for _, c := range in {
			if isSignWhitespace(c) {
				ws++
			}
		}
		if len(out) != len(in)-ws {
			t.Fatalf("len %d, want %d", len(out), len(in)-ws)
		}
		for _, c := range out {
			if isSignWhitespace(c) {
				t.Fatalf("whitespace byte %q left in %q", c, out)
			}
		}
		// Order of the kept bytes is preserved.
		j := 0
		for _, c := range in {
			if !isSignWhitespace(c) {
				if out[j] != c {
					t.Fatalf("byte %d is %q, want %q", j, out[j], c)
				}
				j++
			}
		}
		if !bytes.Equal(StripWhitespace(out), out) {
			t.Fatal("not idempotent")
		}
	})
}

func FuzzVerifySignature(f *testing.F) {
	f.Add([]byte("secret"), "ak_1", "1700000000", "aml_check", []byte(`{"a":"b"}`), "00")
	f.Add([]byte(""), "", "", "", []byte(""), "")
	f.Add([]byte("s"), "k", "1", "op", []byte(" { } "), strings.Repeat("a", 64))
	f.Fuzz(func(t *testing.T, secret []byte, key, ts, op string, body []byte, hash string) {
		good := Signature(secret, key, ts, op, body)
		if good != reference(secret, key, ts, op, body) {
			t.Fatal("optimised signature differs from the reference")
		}
		if !VerifySignature(secret, key, ts, op, body, good) {
			t.Fatal("a correct signature was refused")
		}
		if !VerifySignature(secret, key, ts, op, StripWhitespace(body), good) {
			t.Fatal("whitespace changed the verdict")
		}
		// A fuzzed hash is accepted only if it is the signature in some case.
		if VerifySignature(secret, key, ts, op, body, hash) && !strings.EqualFold(hash, good) {
			t.Fatalf("accepted a wrong signature %q (want %q)", hash, good)
		}
	})
}
