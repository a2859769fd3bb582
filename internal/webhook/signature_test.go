package webhook

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/emi"
)

// The published example of the Standard Webhooks specification (W1).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustParseSecret(t testing.TB, whsec string) []byte {
	t.Helper()
	key, err := ParseSecret(whsec)
	if err != nil {
		t.Fatalf("ParseSecret(%q): %v", whsec, err)
	}
	return key
}

// signedHeaders returns the headers Deliver sends for msg, for the
// reference verifier.
func signedHeaders(msg emi.WebhookMessage) http.Header {
	h := http.Header{}
	h.Set("webhook-id", msg.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(msg.Timestamp.Unix(), 10))
	h.Set("webhook-signature", Sign(msg))
	return h
}

func TestSign(t *testing.T) {
	vector := emi.WebhookMessage{
		ID:        vectorID,
		Timestamp: time.Unix(vectorTimestamp, 0),
		Body:      []byte(vectorBody),
		Secrets:   [][]byte{mustParseSecret(t, vectorSecret)},
	}
	_, oldKey := NewSecret()
	_, newKey := NewSecret()

	t.Run("the published Standard Webhooks vector is reproduced", func(t *testing.T) {
		if got := Sign(vector); got != vectorSignature {
			t.Fatalf("Sign = %q, want %q", got, vectorSignature)
		}
	})

	t.Run("the reference library signs the vector the same way", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(vectorSecret)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := wh.Sign(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
		if err != nil || ref != Sign(vector) {
			t.Fatalf("reference Sign = %q, %v; ours = %q", ref, err, Sign(vector))
		}
		if err := wh.VerifyIgnoringTimestamp([]byte(vectorBody), signedHeaders(vector)); err != nil {
			t.Fatalf("reference verifier refuses the vector: %v", err)
		}
	})

	t.Run("the timestamp is signed in whole UNIX seconds", func(t *testing.T) {
		msg := vector
		msg.Timestamp = time.Unix(vectorTimestamp, 999_999_999)
		if got := Sign(msg); got != vectorSignature {
			t.Fatalf("Sign with sub-second timestamp = %q, want %q", got, vectorSignature)
		}
	})

	t.Run("two secrets give two signatures separated by one space", func(t *testing.T) {
		msg := vector
		msg.Secrets = [][]byte{oldKey, newKey}
		parts := strings.Split(Sign(msg), " ")
		if len(parts) != 2 || parts[0] == parts[1] {
			t.Fatalf("Sign = %q, want two different signatures", Sign(msg))
		}
		for i, key := range msg.Secrets {
			one := msg
			one.Secrets = [][]byte{key}
			if parts[i] != Sign(one) {
				t.Errorf("signature %d = %q, want %q", i, parts[i], Sign(one))
			}
		}
	})

	t.Run("during a rotation either secret verifies and another does not", func(t *testing.T) {
		msg := vector
		msg.Timestamp = time.Now()
		msg.Secrets = [][]byte{oldKey, newKey}
		_, otherKey := NewSecret()
		for name, tc := range map[string]struct {
			key     []byte
			wantErr error
		}{
			"old secret":   {oldKey, nil},
			"new secret":   {newKey, nil},
			"other secret": {otherKey, standardwebhooks.ErrNoMatchingSignature},
		} {
			wh, _ := standardwebhooks.NewWebhookRaw(tc.key)
			if err := wh.Verify(msg.Body, signedHeaders(msg)); !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: Verify = %v, want %v", name, err, tc.wantErr)
			}
		}
	})

	t.Run("a changed body byte no longer verifies", func(t *testing.T) {
		wh, _ := standardwebhooks.NewWebhook(vectorSecret)
		body := []byte(`{"test":2432232314}`) // the same JSON, re-serialised
		if err := wh.VerifyIgnoringTimestamp(body, signedHeaders(vector)); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			t.Fatalf("Verify of a re-serialised body = %v, want no matching signature", err)
		}
	})

	t.Run("a message without secrets gives an empty header", func(t *testing.T) {
		msg := vector
		msg.Secrets = nil
		if got := Sign(msg); got != "" {
			t.Fatalf("Sign = %q, want empty", got)
		}
	})
}

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xA5}, n)) }
	tests := []struct {
		name    string
		in      string
		wantLen int
		wantErr string
	}{
		{"the published example secret of 24 bytes is accepted", vectorSecret, 24, ""},
		{"a 32-byte secret is accepted", "whsec_" + b64(32), 32, ""},
		{"a 64-byte secret is accepted", "whsec_" + b64(64), 64, ""},
		{"a 23-byte secret is refused as too short", "whsec_" + b64(23), 0, "24 to 64 bytes, not 23"},
		{"a 65-byte secret is refused as too long", "whsec_" + b64(65), 0, "24 to 64 bytes, not 65"},
		{"an empty secret is refused", "", 0, "must start with whsec_"},
		{"the prefix alone is refused", "whsec_", 0, "24 to 64 bytes, not 0"},
		{"a secret without the prefix is refused", b64(32), 0, "must start with whsec_"},
		{"a prefix in capitals is refused", "WHSEC_" + b64(32), 0, "must start with whsec_"},
		{"URL-safe base64 is refused", "whsec_" + strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xFB, 0xFF}, 16))), 0, "not valid base64"},
		{"missing padding is refused", "whsec_" + strings.TrimRight(b64(31), "="), 0, "not valid base64"},
		{"non-zero padding bits are refused", "whsec_" + strings.Repeat("A", 42) + "B=", 0, "not valid base64"},
		{"the same 32 bytes with zero padding bits are accepted", "whsec_" + strings.Repeat("A", 42) + "A=", 32, ""},
		{"a trailing line break is refused", "whsec_" + b64(32) + "\n", 0, "line breaks"},
		{"an inner space is refused", "whsec_" + b64(16) + " " + b64(16), 0, "spaces"},
		{"non-ASCII text is refused", "whsec_" + b64(32) + "é", 0, "non-ASCII"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParseSecret(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSecret error = %v, want one containing %q", err, tc.wantErr)
				}
				if len(tc.in) > len("whsec_")+8 && strings.Contains(err.Error(), tc.in[6:]) {
					t.Fatalf("error %q quotes the secret", err)
				}
				return
			}
			if err != nil || len(key) != tc.wantLen {
				t.Fatalf("ParseSecret = %d bytes, %v; want %d bytes", len(key), err, tc.wantLen)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Run("a new secret parses back to its key", func(t *testing.T) {
		text, key := NewSecret()
		if !strings.HasPrefix(text, "whsec_") || len(key) != 32 {
			t.Fatalf("NewSecret = %q, %d bytes", text, len(key))
		}
		parsed := mustParseSecret(t, text)
		if !bytes.Equal(parsed, key) {
			t.Fatal("ParseSecret(NewSecret text) differs from the key")
		}
	})
	t.Run("two new secrets differ", func(t *testing.T) {
		a, _ := NewSecret()
		b, _ := NewSecret()
		if a == b {
			t.Fatal("two secrets are equal")
		}
	})
}

// FuzzParseSecret checks that an accepted secret has an allowed length and
// exactly one spelling: re-encoding the key gives back the input.
func FuzzParseSecret(f *testing.F) {
	f.Add(vectorSecret)
	f.Add("whsec_")
	f.Add("whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	f.Add("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS\nw")
	f.Add("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSx")
	f.Fuzz(func(t *testing.T, in string) {
		key, err := ParseSecret(in)
		if err != nil {
			if key != nil {
				t.Fatal("a key returned with an error")
			}
			return
		}
		if len(key) < MinSecretSize || len(key) > MaxSecretSize {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
		if back := SecretPrefix + base64.StdEncoding.EncodeToString(key); back != in {
			t.Fatalf("accepted %q, which re-encodes as %q", in, back)
		}
	})
}

func BenchmarkSign(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(strconv.Itoa(n)+" secret(s), 1 KiB body", func(b *testing.B) {
			msg := emi.WebhookMessage{ID: vectorID, Timestamp: time.Unix(vectorTimestamp, 0), Body: bytes.Repeat([]byte("x"), 1024)}
			for range n {
				_, key := NewSecret()
				msg.Secrets = append(msg.Secrets, key)
			}
			b.SetBytes(int64(len(msg.Body)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Sign(msg)
			}
		})
	}
}
