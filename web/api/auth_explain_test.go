package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
)

// TestAuthenticationFailuresSayWhich: every authentication failure keeps
// 401 / 10001 (10002 for the clock) and says in errors which header is
// wrong and why (so a partner can fix it alone); a signature mismatch says
// what the server signed (version, the operation name the route expects,
// the body length) and the mistake when it recognises one; no answer
// carries the secret or the expected hash. On the old code every one of
// these answered without errors.
func TestAuthenticationFailuresSayWhich(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{})
	card := kernel.NewToken()
	aml := []byte(`{"first_name": "Elin", "last_name": "Sandqvist"}`)
	now := func() string { env.Clock.Advance(time.Second); return strconv.FormatInt(env.Clock.Now().Unix(), 10) }
	secret := []byte(p.APISecret)
	type check struct {
		what  string
		rq    apptest.Request
		as    *apptest.Partner
		code  int
		field string
		says  []string
	}
	unknown := *p
	unknown.APIKey = "ak_unknown"
	ts := now()
	cases := []check{
		{what: "no headers", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", NoAuth: true},
			field: "x-api-key", says: []string{"is missing"}},
		{what: "no x-hash", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details",
			Header: map[string]string{"x-hash": ""}}, field: "x-hash", says: []string{"is missing"}},
		{what: "an unknown key", as: &unknown, rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details"},
			field: "x-api-key", says: []string{"is not a known API key"}},
		{what: "an RFC 3339 timestamp", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details",
			Timestamp: "2026-11-22T10:00:00Z"}, field: "x-timestamp", says: []string{"UNIX seconds"}},
		{what: "signature version 3", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details",
			Header: map[string]string{"x-signature-version": "3"}}, field: "x-signature-version", says: []string{"must be 1 or 2"}},
		{what: "a hash that is not hex", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details",
			Hash: "not-hex"}, field: "x-hash", says: []string{"64 hex characters"}},
		{what: "the OpenAPI operationId instead of the signed name", rq: apptest.Request{Method: http.MethodGet,
			Path: "/v2/cards/" + card + "/first-half", Operation: "card_number_first_half"},
			field: "x-hash", says: []string{`signature version 1`, `"card_number"`, "version 1 signs no body for GET"}},
		{what: "another operation's name", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "accounts_list"},
			field: "x-hash", says: []string{`signed for operation "accounts_list", and this route is "partner_details"`}},
		{what: "a body signed with its whitespace in version 1", rq: apptest.Request{Method: http.MethodPost, Path: "/v1/aml",
			Operation: "aml_check", Body: aml, Timestamp: ts,
			Hash: partners.SignatureV2(secret, p.APIKey, ts, "aml_check", "", "", "", aml)},
			field: "x-hash", says: []string{`"aml_check"`, "body (45 bytes after removing spaces, tabs, CR and LF from the 48 received)",
				"the body was signed with its whitespace"}},
		{what: "a version 2 signature without its header", rq: apptest.Request{Method: http.MethodPost, Path: "/v1/aml",
			Operation: "aml_check", Body: aml, Timestamp: ts,
			Hash: partners.SignatureV2(secret, p.APIKey, ts, "aml_check", http.MethodPost, "/v1/aml", "", aml)},
			field: "x-hash", says: []string{"it is a version 2 signature: send x-signature-version: 2"}},
		{what: "a version 1 signature sent as version 2", rq: apptest.Request{Method: http.MethodPost, Path: "/v1/aml",
			Operation: "aml_check", Body: aml, Timestamp: ts, Header: map[string]string{"x-signature-version": "2"},
			Hash: partners.Signature(secret, p.APIKey, ts, "aml_check", aml)},
			field: "x-hash", says: []string{`signature version 2`, `"POST" + "/v1/aml" + "" + body (48 bytes, as received)`, "it is a version 1 signature"}},
		{what: "a wrong secret", rq: apptest.Request{Method: http.MethodPut, Path: "/v2/cards/" + card + "/status", Operation: "card_status",
			Body: []byte(`{"status": "inactive"}`), Hash: strings.Repeat("ab", 32)},
			field: "x-hash", says: []string{`"card_status" + body (21 bytes after removing`}},
		{what: "a timestamp 20 s old", rq: apptest.Request{Method: http.MethodGet, Path: "/v2/partner", Operation: "partner_details",
			Timestamp: strconv.FormatInt(env.Clock.Now().Unix()-20, 10)}, code: emi.ErrAuthExpired.Code,
			field: "x-timestamp", says: []string{"s behind the server clock", "the window is 15 s"}},
	}
	for _, c := range cases {
		if c.rq.Timestamp == "" && !c.rq.NoAuth {
			c.rq.Timestamp = now()
		}
		as := p
		if c.as != nil {
			as = c.as
		}
		code := c.code
		if code == 0 {
			code = emi.ErrAuthInvalid.Code
		}
		r := as.Do(t, c.rq)
		apptest.Expect(t, c.what, r, code, http.StatusUnauthorized)
		var msg string
		for _, f := range r.Errors {
			if f.Field == c.field {
				msg = f.Message
			}
		}
		if msg == "" {
			t.Errorf("%s: no errors entry for %s: %s", c.what, c.field, r)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: %s says %q, want it to contain %q", c.what, c.field, msg, s)
			}
		}
		raw := string(r.Raw)
		good := partners.Signature(secret, p.APIKey, c.rq.Timestamp, c.rq.Operation, c.rq.Body)
		if strings.Contains(raw, p.APISecret) || strings.Contains(raw, good) {
			t.Errorf("%s: the answer leaks the secret or the expected hash: %s", c.what, raw)
		}
	}
}
