package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// hostileHeaderValues are header values no client may send: invalid
// UTF-8, control characters (tab and NUL included) and 10 kB.
var hostileHeaderValues = []struct{ what, value string }{
	{"invalid UTF-8", "k\xff\xfe"},
	{"a lone continuation byte", "\x80abc"},
	{"NUL", "a\x00b"},
	{"a control character", "a\x01b"},
	{"a tab", "a\tb"},
	{"DEL", "a\x7fb"},
	{"a C1 control", "a\u0085b"},
	{"10 kB", strings.Repeat("k", 10<<10)},
}

// hostileHeaderNames are the headers the sweep spoils one at a time: the
// Idempotency-Key, every header of the signature, and x-* headers the API
// does not read.
var hostileHeaderNames = []string{"Idempotency-Key", "x-api-key", "x-timestamp", "x-hash", "x-signature-version",
	"x-nonce", "x-request-id", "x-correlation-id"}

// TestHostileHeaderSweep sends every route a correctly signed request with
// one spoiled header at a time (an Idempotency-Key that was not valid UTF-8
// reached PostgreSQL and answered 500 on nine POST operations). Each answer
// is 400 / 10005 naming the header, matches openapi.yaml, and nothing in
// the database changes (not even the replay guard: the request is refused
// before authentication). The requests go to the handler directly, because
// Go's HTTP client refuses to send a control character in a header.
func TestHostileHeaderSweep(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	a := newTenant(t, env, "Header A")
	routes := walkAPI(t, env)
	before := env.TableDigest(t, apptest.DigestOptions{})
	sent := 0
	for _, rt := range routes {
		path := fill(rt.pattern, a.tok, "", "")
		for _, name := range hostileHeaderNames {
			for _, v := range hostileHeaderValues {
				env.Clock.Advance(time.Second)
				var b []byte
				if rt.body {
					b = validBody(rt)
				}
				req := a.p.HTTPRequest(t, apptest.Request{Method: rt.method, Path: path, Operation: rt.op, Body: b})
				req.Header[http.CanonicalHeaderKey(name)] = []string{v.value}
				hreq := httptest.NewRequest(rt.method, path, bytes.NewReader(b))
				hreq.Header = req.Header
				rec := httptest.NewRecorder()
				env.Handler.ServeHTTP(rec, hreq)
				sent++
				var envl struct {
					Code   int              `json:"code"`
					Errors []emi.FieldError `json:"errors"`
				}
				what := rt.method + " " + rt.pattern + " " + name + " with " + v.what
				if err := json.Unmarshal(rec.Body.Bytes(), &envl); err != nil {
					t.Errorf("%s: not a JSON envelope: HTTP %d %.200s", what, rec.Code, rec.Body)
					continue
				}
				if rec.Code != http.StatusBadRequest || envl.Code != emi.ErrBadRequest.Code ||
					len(envl.Errors) != 1 || envl.Errors[0].Field != strings.ToLower(name) {
					t.Errorf("%s: want 400 / 10005 naming %s, got HTTP %d %.300s", what, strings.ToLower(name), rec.Code, rec.Body)
					continue
				}
				if bytes.Contains(rec.Body.Bytes(), []byte(v.value)) {
					t.Errorf("%s: the answer echoes the value", what)
				}
				res := rec.Result()
				env.CheckOpenAPI(t, req, res, rec.Body.Bytes())
			}
		}
	}
	if ch := apptest.ChangedTables(before, env.TableDigest(t, apptest.DigestOptions{})); len(ch) > 0 {
		t.Errorf("refused requests changed tables %v", ch)
	}
	t.Logf("hostile header sweep: %d routes, %d requests", len(routes), sent)
}

// TestIdempotencyKeyOfInvalidUTF8OverHTTP is the partner's report, over a
// real connection: aml_check with an Idempotency-Key that is not UTF-8
// answered 500 (PostgreSQL refused the key); now 400 / 10005 naming it.
// A key at the limit still works.
func TestIdempotencyKeyOfInvalidUTF8OverHTTP(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	body := map[string]any{"first_name": "Elin", "last_name": "Sandqvist"}
	r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v1/aml", Operation: "aml_check", JSON: body,
		Header: map[string]string{"Idempotency-Key": "key-\xff\xfe"}})
	apptest.Expect(t, "invalid UTF-8 key", r, emi.ErrBadRequest.Code, http.StatusBadRequest)
	apptest.ExpectField(t, "invalid UTF-8 key", r, "idempotency-key")
	env.Clock.Advance(time.Second)
	r = p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v1/aml", Operation: "aml_check", JSON: body,
		Header: map[string]string{"Idempotency-Key": strings.Repeat("é", 127)}})
	apptest.Expect(t, "a 254-byte UTF-8 key", r, 0, http.StatusCreated)
}
