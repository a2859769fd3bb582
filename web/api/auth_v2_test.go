package api_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
)

func accountsPage(n int) apptest.Request {
	return apptest.Request{Method: http.MethodGet, Path: "/v2/accounts/" + strconv.Itoa(n) + "/10", Operation: "accounts_list"}
}

// Contract §2: the replay guard refuses the same request (key, timestamp,
// method, request target, x-hash), not the same signature. A version 1
// signature covers neither method nor path, so one key reading many
// resources in one second sends one x-hash many times.
func TestReplayGuardKeysOnTheRequest(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})

	t.Run("one x-hash on many targets in one second is many requests", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		first := accountsPage(1)
		p.Sign(&first)
		for n := 1; n <= 20; n++ {
			rq := accountsPage(n)
			rq.Timestamp, rq.Hash = first.Timestamp, first.Hash
			apptest.Expect(t, "page "+strconv.Itoa(n), p.Do(t, rq), 0, 200)
		}
		// The query is part of the target.
		rq := accountsPage(1)
		rq.Path += "?program=account_eur"
		rq.Timestamp, rq.Hash = first.Timestamp, first.Hash
		apptest.Expect(t, "page 1 with a query", p.Do(t, rq), 0, 200)
		apptest.Expect(t, "page 1 with the same query again", p.Do(t, rq), 10003, 401)
		rq.Path = "/v2/accounts/1/10?program=account_bgn"
		apptest.Expect(t, "page 1 with another query", p.Do(t, rq), 0, 200)
		// The identical request is still a replay, on every page.
		for n := 1; n <= 20; n++ {
			rq := accountsPage(n)
			rq.Timestamp, rq.Hash = first.Timestamp, first.Hash
			apptest.Expect(t, "page "+strconv.Itoa(n)+" again", p.Do(t, rq), 10003, 401)
		}
	})
	t.Run("an unsigned x-nonce does not make a version 1 replay fresh", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		rq := partnerDetails()
		p.Sign(&rq)
		apptest.Expect(t, "first", p.Do(t, rq), 0, 200)
		for _, n := range []string{"a", "b", "fresh-nonce"} {
			rq.Nonce = n
			apptest.Expect(t, "again with x-nonce "+n, p.Do(t, rq), 10003, 401)
		}
		rq.Nonce = ""
		rq.Header = map[string]string{"x-signature-version": "1"}
		apptest.Expect(t, "again with x-signature-version: 1", p.Do(t, rq), 10003, 401)
	})
	t.Run("one key is one guard: another key's identical tuple is its own", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		q := env.NewPartner(t, emi.PartnerCreate{})
		ts := strconv.FormatInt(env.Clock.Now().Unix(), 10)
		a, b := partnerDetails(), partnerDetails()
		a.Timestamp, b.Timestamp = ts, ts
		apptest.Expect(t, "key A", p.Do(t, a), 0, 200)
		apptest.Expect(t, "key B, same second", q.Do(t, b), 0, 200)
	})
}

func TestSignatureVersion2(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{Configure: func(c *config.Config) { c.SecretOverlap = time.Hour }})
	p := env.NewPartner(t, emi.PartnerCreate{})
	v2 := func(rq apptest.Request, nonce string) apptest.Request {
		rq.SignatureVersion, rq.Nonce = emi.SignatureV2, nonce
		return rq
	}

	t.Run("a version 2 GET and POST are accepted", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		apptest.Expect(t, "GET", p.Do(t, v2(partnerDetails(), "")), 0, 200)
		apptest.Expect(t, "GET with a query", p.Do(t, v2(apptest.Request{Method: http.MethodGet,
			Path: "/v2/accounts/1/10?program=account_eur", Operation: "accounts_list"}, "q1")), 0, 200)
		apptest.Expect(t, "POST", p.Do(t, v2(widgetRequest(map[string]any{"name": "v2"}, ""), "n1")), 0, 201)
	})
	t.Run("the body is signed exactly as sent", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		spaced := []byte("{\"name\": \"a b\"}\n")
		rq := v2(widgetRequest(nil, ""), "")
		rq.Body = partners.StripWhitespace(spaced)
		p.Sign(&rq)
		rq.Body = spaced // signed without its whitespace, sent with it
		apptest.Expect(t, "signed over the stripped body", p.Do(t, rq), 10001, 401)
		rq = v2(widgetRequest(nil, ""), "")
		rq.Body = spaced
		r := p.Do(t, rq)
		apptest.Expect(t, "signed over the body as sent", r, 0, 201)
		if r.Data["name"] != "a b" {
			t.Fatalf("created %v", r.Data)
		}
	})
	t.Run("a GET's body and a DELETE's body are signed", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		rq := v2(partnerDetails(), "")
		p.Sign(&rq)
		rq.Body = []byte(`{"x":1}`)
		apptest.Expect(t, "GET with a body added after signing", p.Do(t, rq), 10001, 401)
		rq = v2(partnerDetails(), "")
		rq.Body = []byte(`{"x":1}`)
		apptest.Expect(t, "GET with a signed body", p.Do(t, rq), 0, 200)
		del := v2(apptest.Request{Method: http.MethodDelete, Path: "/v2/users/" + kernel.NewToken(), Operation: "user_remove"}, "")
		p.Sign(&del)
		del.Body = []byte(`{}`)
		apptest.Expect(t, "DELETE with a body added after signing", p.Do(t, del), 10001, 401)
	})
	t.Run("a captured request cannot be re-aimed", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		rq := v2(accountsPage(1), "")
		p.Sign(&rq)
		other := accountsPage(2)
		other.SignatureVersion, other.Timestamp, other.Hash = emi.SignatureV2, rq.Timestamp, rq.Hash
		apptest.Expect(t, "page 1's signature on page 2", p.Do(t, other), 10001, 401)
		other.Path = "/v2/accounts/1/10?program=account_eur"
		apptest.Expect(t, "page 1's signature with a query added", p.Do(t, other), 10001, 401)
		other = rq
		other.Operation = "partner_details"
		other.Path = "/v2/partner"
		apptest.Expect(t, "on another operation", p.Do(t, other), 10001, 401)
		apptest.Expect(t, "the signed request itself", p.Do(t, rq), 0, 200)
	})
	t.Run("characters moved between target, nonce and body are the same request", func(t *testing.T) {
		// Version 2 concatenates target, nonce and body without separators,
		// so these carry the signature of the request they were cut from.
		env.Clock.Advance(time.Second)
		rq := v2(apptest.Request{Method: http.MethodGet, Path: "/v2/accounts/1/10", Operation: "accounts_list"}, "abc")
		p.Sign(&rq)
		apptest.Expect(t, "the signed request", p.Do(t, rq), 0, 200)
		shifted := rq
		shifted.Path, shifted.Nonce = "/v2/accounts/1/1", "0abc"
		apptest.Expect(t, "target's last character moved into the nonce", p.Do(t, shifted), 10003, 401)
		shifted = rq
		shifted.Nonce, shifted.Body = "ab", []byte("c")
		shifted.Header = map[string]string{"Content-Type": "application/json"}
		if r := p.Do(t, shifted); r.Code == 0 {
			t.Fatalf("nonce's last character moved into the body was accepted: %s", r)
		}
	})
	t.Run("nonces: two nonces are two requests, one nonce twice a replay", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		ts := strconv.FormatInt(env.Clock.Now().Unix(), 10)
		for _, n := range []string{"n-1", "n-2", "N_3", strings.Repeat("z", partners.MaxNonceLen)} {
			rq := v2(partnerDetails(), n)
			rq.Timestamp = ts
			apptest.Expect(t, "nonce "+n, p.Do(t, rq), 0, 200)
		}
		rq := v2(partnerDetails(), "n-1")
		rq.Timestamp = ts
		apptest.Expect(t, "nonce n-1 again", p.Do(t, rq), 10003, 401)
		rq = v2(partnerDetails(), "")
		rq.Timestamp = ts
		apptest.Expect(t, "no nonce", p.Do(t, rq), 0, 200)
		apptest.Expect(t, "no nonce again", p.Do(t, rq), 10003, 401)
	})
	t.Run("malformed nonces and unknown versions are refused", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		for _, n := range []string{strings.Repeat("z", partners.MaxNonceLen+1), "a b", "a.b", "é", "a/b", "a+b", "a=b"} {
			apptest.Expect(t, "nonce "+strconv.Quote(n), p.Do(t, v2(partnerDetails(), n)), 10001, 401)
		}
		for _, v := range []string{"3", "0", "02", " 2", "2.0", "v2", "-1", "１"} {
			rq := partnerDetails()
			rq.Header = map[string]string{"x-signature-version": v}
			apptest.Expect(t, "x-signature-version "+strconv.Quote(v), p.Do(t, rq), 10001, 401)
		}
	})
	t.Run("a version 1 signature sent as version 2 is refused, and the reverse", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		rq := partnerDetails()
		p.Sign(&rq)
		rq.Header = map[string]string{"x-signature-version": "2"}
		apptest.Expect(t, "v1 hash as v2", p.Do(t, rq), 10001, 401)
		rq = v2(partnerDetails(), "")
		p.Sign(&rq)
		rq.SignatureVersion = 0
		apptest.Expect(t, "v2 hash as v1", p.Do(t, rq), 10001, 401)
	})
	t.Run("a version 2 timestamp outside the window is expired", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		rq := v2(partnerDetails(), "")
		rq.Timestamp = strconv.FormatInt(env.Clock.Now().Unix()-16, 10)
		apptest.Expect(t, "16 s old", p.Do(t, rq), 10002, 401)
	})
	t.Run("the previous secret signs version 2 during a rotation's overlap", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		old := *p
		ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
		secret, err := env.App.Partners.RotateSecret(ctx, p.KeyID, false)
		if err != nil {
			t.Fatal(err)
		}
		apptest.Expect(t, "old secret", old.Do(t, v2(partnerDetails(), "old")), 0, 200)
		p.APISecret = secret
		apptest.Expect(t, "new secret", p.Do(t, v2(partnerDetails(), "new")), 0, 200)
		env.Clock.Advance(2 * time.Hour)
		apptest.Expect(t, "old secret after the overlap", old.Do(t, v2(partnerDetails(), "old")), 10001, 401)
	})
}

// A key set to require version 2 refuses version 1 (10001) and accepts
// version 2; the setting is audited, needs the partners permission, and
// takes effect at once, also on a second server of the same database.
func TestKeyRequiresSignatureVersion2(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	second := apptest.Attach(t, env)
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))

	strict := env.NewPartner(t, emi.PartnerCreate{SignatureVersion: emi.SignatureV2})
	apptest.Expect(t, "version 1 on a strict key", strict.Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "version 2 on a strict key", strict.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/partner",
		Operation: "partner_details", SignatureVersion: emi.SignatureV2}), 0, 200)

	p := env.NewPartner(t, emi.PartnerCreate{})
	apptest.Expect(t, "version 1 before", p.Do(t, partnerDetails()), 0, 200)
	env.Clock.Advance(time.Second)
	if err := env.App.Partners.SetKeySignatureVersion(sys, p.KeyID, emi.SignatureV2); err != nil {
		t.Fatal(err)
	}
	apptest.Expect(t, "version 1 after requiring 2", p.Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "version 1 after requiring 2, second server", second.As(p).Do(t, partnerDetails()), 10001, 401)
	apptest.Expect(t, "version 2 after requiring 2", p.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/partner",
		Operation: "partner_details", SignatureVersion: emi.SignatureV2}), 0, 200)
	var n int
	if err := env.App.DB.QueryRowContext(sys, `SELECT count(*) FROM audit_log WHERE action = 'partner_key.set_signature_version'
		AND resource_token = $1 AND changes->'min_signature_version'->>'to' = '2'`, p.KeyID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit rows for requiring version 2: %d (%v)", n, err)
	}
	// Setting what the key has changes and records nothing.
	if err := env.App.Partners.SetKeySignatureVersion(sys, p.KeyID, emi.SignatureV2); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.QueryRowContext(sys, `SELECT count(*) FROM audit_log WHERE action = 'partner_key.set_signature_version' AND resource_token = $1`, p.KeyID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit rows after a no-op: %d (%v)", n, err)
	}
	if err := env.App.Partners.SetKeySignatureVersion(sys, p.KeyID, emi.SignatureV1); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Second)
	apptest.Expect(t, "version 1 accepted again", p.Do(t, partnerDetails()), 0, 200)

	for _, v := range []int{0, 3, -1} {
		if err := env.App.Partners.SetKeySignatureVersion(sys, p.KeyID, v); !errors.Is(err, emi.ErrPartnerValidation) {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	if err := env.App.Partners.SetKeySignatureVersion(sys, kernel.NewToken(), emi.SignatureV2); !errors.Is(err, emi.ErrPartnerKeyNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	// A partner's own key cannot lower its requirement: the partner API has
	// no such operation, and a staff member without the partners
	// permission is refused.
	cs := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(), StaffRoles: []string{string(emi.RoleCustomerService)}})
	if err := env.App.Partners.SetKeySignatureVersion(cs, strict.KeyID, emi.SignatureV1); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("customer service lowered a key's requirement: %v", err)
	}
	partnerCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: strict.KeyID, PartnerID: strict.ID})
	if err := env.App.Partners.SetKeySignatureVersion(partnerCtx, strict.KeyID, emi.SignatureV1); err == nil {
		t.Fatal("a partner principal lowered its key's requirement")
	}
	env.Clock.Advance(time.Second)
	apptest.Expect(t, "strict key still refuses version 1", strict.Do(t, partnerDetails()), 10001, 401)

	// A revoked key cannot be changed.
	if err := env.App.Partners.RevokeKey(sys, strict.KeyID); err != nil {
		t.Fatal(err)
	}
	if err := env.App.Partners.SetKeySignatureVersion(sys, strict.KeyID, emi.SignatureV1); !errors.Is(err, emi.ErrPartnerKeyNotFound) {
		t.Fatalf("revoked key: %v", err)
	}
}
