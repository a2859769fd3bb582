package api_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/seal"
)

// The stored fingerprint of a request is a keyed digest, not a plain hash
// of the body: a card_create body carries the PIN, and a plain SHA-256
// with the rest of the body known would give the PIN away in at most 10^6
// guesses to anyone reading the table. And a retry across a key rotation
// (its first attempt fingerprinted under the previous key) still replays.
func TestIdempotencyFingerprintIsKeyed(t *testing.T) {
	t.Parallel()
	old := make([]byte, 32)
	_, _ = rand.Read(old)
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.PreviousKeys = [][]byte{old} }})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "K"})
	user := createUser(t, env, p, validUser(p))
	acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)

	body, _ := json.Marshal(map[string]any{"account": acc, "type": "virtual", "pin": "739264"})
	rq := apptest.Request{Method: http.MethodPost, Path: "/v2/cards", Operation: "card_create", Body: body,
		Header: map[string]string{"Idempotency-Key": "card-1"}}
	first := p.Do(t, rq)
	apptest.Expect(t, "card_create", first, 0, http.StatusCreated)

	var stored []byte
	if err := env.App.DB.Get(&stored, `SELECT fingerprint FROM idempotency_keys WHERE key = 'card-1'`); err != nil {
		t.Fatal(err)
	}
	msg := append([]byte("POST\x00/v2/cards\x00"), body...)
	plain := sha256.Sum256(msg)
	if bytes.Equal(stored, plain[:]) || !bytes.Equal(stored, env.App.Keys.Lookup("idempotency.fingerprint", msg)) {
		t.Fatalf("the fingerprint is not the keyed digest of the request")
	}

	// The same request fingerprinted under the previous key, as before a
	// rotation: the retry replays the stored answer.
	prev, err := seal.NewKeyring(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`UPDATE idempotency_keys SET fingerprint = $1 WHERE key = 'card-1'`,
		prev.Lookup("idempotency.fingerprint", msg)); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Second)
	rq.Timestamp, rq.Hash = "", ""
	retry := p.Do(t, rq)
	if !bytes.Equal(retry.Raw, first.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry across a rotation: %s", retry)
	}
	// Another body under the same key is still a conflict.
	env.Clock.Advance(time.Second)
	other, _ := json.Marshal(map[string]any{"account": acc, "type": "virtual", "pin": "739265"})
	apptest.Expect(t, "other PIN", p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/cards", Operation: "card_create",
		Body: other, Header: map[string]string{"Idempotency-Key": "card-1"}}), 10409, http.StatusConflict)
}
