package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
)

func partnerDetails() apptest.Request {
	return apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details"}
}

func TestHMACAuthentication(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Acme"})
	now := func() int64 { return env.Clock.Now().Unix() }

	t.Run("a correctly signed GET without body is accepted", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		r := p.Do(t, partnerDetails())
		apptest.Expect(t, "partner_details", r, 0, 200)
		if r.Data["merchant"] != p.Merchant || r.Data["partner"] != p.ID || r.Data["name"] != "Acme" {
			t.Fatalf("partner_details returned %v", r.Data)
		}
	})
	t.Run("missing headers are refused", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		rq.NoAuth = true
		apptest.Expect(t, "no auth", p.Do(t, rq), 10001, 401)
		rq = partnerDetails()
		rq.Header = map[string]string{"x-hash": ""}
		apptest.Expect(t, "empty x-hash", p.Do(t, rq), 10001, 401)
	})
	t.Run("an unknown api key is refused", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		other := *p
		other.APIKey = "ak_unknown"
		apptest.Expect(t, "unknown key", other.Do(t, partnerDetails()), 10001, 401)
	})
	t.Run("a wrong signature is refused", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		rq.Hash = strings.Repeat("ab", 32)
		apptest.Expect(t, "bad hash", p.Do(t, rq), 10001, 401)
		rq.Hash = "not-hex"
		apptest.Expect(t, "non-hex hash", p.Do(t, rq), 10001, 401)
		other := *p
		other.APISecret = "as_wrong"
		apptest.Expect(t, "other secret", other.Do(t, partnerDetails()), 10001, 401)
	})
	t.Run("a signature made for another operation is refused", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		rq.Operation = "accounts_list"
		p.Sign(&rq)
		rq.Operation = "partner_details"
		apptest.Expect(t, "signed as accounts_list", p.Do(t, rq), 10001, 401)
	})
	t.Run("a timestamp that is not UNIX seconds is refused", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		rq.Timestamp = "2026-11-22T10:00:00Z"
		apptest.Expect(t, "RFC 3339 timestamp", p.Do(t, rq), 10001, 401)
	})
	t.Run("timestamps 16 s old and 16 s ahead are expired", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		for _, d := range []int64{-16, 16, -3600} {
			rq := partnerDetails()
			rq.Timestamp = strconv.FormatInt(now()+d, 10)
			apptest.Expect(t, "timestamp "+strconv.FormatInt(d, 10)+" s", p.Do(t, rq), 10002, 401)
		}
	})
	t.Run("timestamps 14 s old and 14 s ahead are inside the window", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		for _, d := range []int64{-14, 14} {
			rq := partnerDetails()
			rq.Timestamp = strconv.FormatInt(now()+d, 10)
			apptest.Expect(t, "timestamp "+strconv.FormatInt(d, 10)+" s", p.Do(t, rq), 0, 200)
		}
	})
	t.Run("the same signed request twice is a replay", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		p.Sign(&rq)
		apptest.Expect(t, "first", p.Do(t, rq), 0, 200)
		apptest.Expect(t, "second", p.Do(t, rq), 10003, 401)
	})
	t.Run("the same hash in upper case is still a replay", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		p.Sign(&rq)
		apptest.Expect(t, "first", p.Do(t, rq), 0, 200)
		rq.Hash = strings.ToUpper(rq.Hash)
		apptest.Expect(t, "upper-case copy", p.Do(t, rq), 10003, 401)
	})
	t.Run("whitespace inside and around the body is not signed", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		raw := []byte("\n {\n\t\"name\" : \"spaced\",\r\n \"items\": [ {\"label\": \"a b\"} ]\n}\n\n")
		rq := widgetRequest(nil, "")
		rq.Body = raw
		compact := []byte(`{"name":"spaced","items":[{"label":"ab"}]}`) // what the partner signs
		rq.Hash = serviceSignature(p, rq.Operation, now(), compact, &rq)
		apptest.Expect(t, "pretty-printed body", p.Do(t, rq), 0, 201)
	})
	t.Run("a GET body is not part of the signature", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := partnerDetails()
		rq.Body = []byte(`{"ignored":true}`)
		apptest.Expect(t, "GET with a body", p.Do(t, rq), 0, 200)
	})
	t.Run("a changed body breaks the signature", func(t *testing.T) {
		env.Clock.Advance(time.Second) // a fresh timestamp: identical signed requests are replays
		rq := widgetRequest(map[string]any{"name": "orig"}, "")
		p.Sign(&rq)
		rq.Body = []byte(`{"name":"forged"}`)
		apptest.Expect(t, "forged body", p.Do(t, rq), 10001, 401)
	})
}

// serviceSignature signs body (already whitespace-free) at ts and puts the
// timestamp on rq; it returns the hash.
func serviceSignature(p *apptest.Partner, op string, ts int64, body []byte, rq *apptest.Request) string {
	signed := apptest.Request{Method: http.MethodPost, Operation: op, Body: body, Timestamp: strconv.FormatInt(ts, 10)}
	p.Sign(&signed)
	rq.Timestamp = signed.Timestamp
	return signed.Hash
}

func TestReplayGuardUnderConcurrency(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	for round := 0; round < 5; round++ {
		env.Clock.Advance(time.Second) // each round signs a new request
		rq := partnerDetails()
		p.Sign(&rq)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		start := make(chan struct{})
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req := p.HTTPRequest(t, rq)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				mu.Lock()
				codes[res.StatusCode]++
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		if codes[200] != 1 || codes[401] != 9 {
			t.Fatalf("round %d: 10 identical requests at once: want one 200 and nine 401, got %v", round, codes)
		}
	}
}

func TestReplayGuardAcrossTwoServers(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	// A second, independent server process on the same database.
	second := apptest.Attach(t, env)
	p := env.NewPartner(t, emi.PartnerCreate{})
	rq := partnerDetails()
	p.Sign(&rq)
	apptest.Expect(t, "first server", p.Do(t, rq), 0, 200)
	apptest.Expect(t, "same request on the second server", second.As(p).Do(t, rq), 10003, 401)
}

func TestSecretRotationAndRevocation(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{Configure: func(c *config.Config) { c.SecretOverlap = time.Hour }})
	p := env.NewPartner(t, emi.PartnerCreate{})
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))

	newSecret, err := env.App.Partners.RotateSecret(ctx, p.KeyID, false)
	if err != nil {
		t.Fatal(err)
	}
	if newSecret == p.APISecret || !strings.HasPrefix(newSecret, "as_") {
		t.Fatalf("rotation returned %q", newSecret)
	}
	rotated := *p
	rotated.APISecret = newSecret
	apptest.Expect(t, "old secret during the overlap", p.Do(t, partnerDetails()), 0, 200)
	apptest.Expect(t, "new secret", rotated.Do(t, partnerDetails()), 0, 200)
	env.Clock.Advance(time.Second)

	env.Clock.Advance(time.Hour + time.Second)
	apptest.Expect(t, "old secret after the overlap", p.Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "new secret after the overlap", rotated.Do(t, partnerDetails()), 0, 200)
	env.Clock.Advance(time.Second)

	if err := env.App.Partners.RevokeKey(ctx, p.KeyID); err != nil {
		t.Fatal(err)
	}
	apptest.Expect(t, "revoked key", rotated.Do(t, partnerDetails()), 10001, 401)
	if _, err := env.App.Partners.RotateSecret(ctx, p.KeyID, false); err == nil {
		t.Fatal("rotating a revoked key: want an error")
	}

	var actions []string
	if err := env.App.DB.Select(&actions, `SELECT action FROM audit_log WHERE partner_id = $1 ORDER BY id`, p.ID); err != nil {
		t.Fatal(err)
	}
	want := "partner.create,partner_key.rotate_secret,partner_key.revoke"
	if strings.Join(actions, ",") != want {
		t.Fatalf("audit actions %v, want %s", actions, want)
	}
}

func TestStoredSecretIsEncryptedAndBoundToItsKey(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	a := env.NewPartner(t, emi.PartnerCreate{})
	b := env.NewPartner(t, emi.PartnerCreate{})

	var stored []byte
	if err := env.App.DB.Get(&stored, `SELECT secret_enc FROM partner_keys WHERE id = $1`, a.KeyID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), a.APISecret) || strings.Contains(string(stored), strings.TrimPrefix(a.APISecret, "as_")) {
		t.Fatal("partner_keys.secret_enc holds the secret in clear")
	}
	// Copy A's sealed secret into B's row: it must not open there, so B
	// cannot be used with A's secret, nor with its own any more.
	if _, err := env.App.DB.Exec(`UPDATE partner_keys SET secret_enc = $1 WHERE id = $2`, stored, b.KeyID); err != nil {
		t.Fatal(err)
	}
	withA := *b
	withA.APISecret = a.APISecret
	apptest.Expect(t, "B's key with A's copied secret", withA.Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "B's key with its own secret", b.Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "A is unaffected", a.Do(t, partnerDetails()), 0, 200)
}

func TestRateLimitPerAPIKey(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{Configure: func(c *config.Config) {
		c.RateLimit, c.RateWindow = 3, time.Minute
	}})
	p := env.NewPartner(t, emi.PartnerCreate{})
	q := env.NewPartner(t, emi.PartnerCreate{})
	for i := 0; i < 3; i++ {
		apptest.Expect(t, "within the limit", p.Do(t, partnerDetails()), 0, 200)
		env.Clock.Advance(time.Second) // identical requests need distinct timestamps
	}
	r := p.Do(t, partnerDetails())
	apptest.Expect(t, "fourth request in the window", r, 10029, 429)
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q, want a positive number of seconds", r.Header.Get("Retry-After"))
	}
	apptest.Expect(t, "another partner's key is not limited", q.Do(t, partnerDetails()), 0, 200)
}
