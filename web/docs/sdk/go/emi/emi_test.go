package emi_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/web/docs/sdk/go/emi"
)

// The worked examples of the partners guide and openapi.yaml.
func TestSignaturesMatchTheWorkedExamples(t *testing.T) {
	t.Parallel()
	if got := emi.SignV1("secret", "ak_test", "1700000000", "aml_check", "POST",
		[]byte(`{"first_name": "Elin", "last_name": "Sandqvist"}`)); got != "1291af22afd1baf39d542abfa0fb666bbf103b7b90a586b45fd4fc54cdaf39b2" {
		t.Errorf("SignV1 = %s", got)
	}
	if got := emi.SignV2("secret", "ak_test", "1700000000", "aml_check", "POST", "/v1/aml", "0b6f2c1e",
		[]byte(`{"first_name": "Kim", "last_name": "Jong Un"}`)); got != "9f073bacf8709109750c88321614efee7ae453280b2a5b36572cc22dd04b90ea" {
		t.Errorf("SignV2 = %s", got)
	}
	// Version 1 signs no body for GET and DELETE.
	if emi.SignV1("s", "k", "1", "op", "DELETE", []byte(`{"a":1}`)) != emi.SignV1("s", "k", "1", "op", "DELETE", nil) {
		t.Error("SignV1 signed a DELETE body")
	}
}

// scripted is a server answering a script of (status, Retry-After, body),
// recording every request.
type scripted struct {
	mu     sync.Mutex
	script []answer
	seen   []*http.Request
	bodies []string
}

type answer struct {
	status     int
	retryAfter string
	body       string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, r)
	s.bodies = append(s.bodies, string(b))
	a := answer{http.StatusInternalServerError, "", `{"code":10000,"message":"unexpected request"}`}
	if len(s.script) > 0 {
		a, s.script = s.script[0], s.script[1:]
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func newScripted(t *testing.T, script ...answer) (*scripted, *emi.Client, *[]time.Duration) {
	t.Helper()
	s := &scripted{script: script}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c := emi.New(srv.URL, "ak_test", "secret")
	var waits []time.Duration
	c.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	return s, c, &waits
}

const unavailable = `{"code":10503,"message":"services.general.unavailable"}`

func TestRetriesA503WithTheSameIdempotencyKeyAndAFreshSignature(t *testing.T) {
	t.Parallel()
	s, c, waits := newScripted(t, answer{503, "2", unavailable}, answer{201, "", `{"code":0,"data":{"token":"t1"}}`})
	var out emi.Object
	if err := c.Request(context.Background(), "POST", "/v2/users", emi.Object{"first_name": "Mara"}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if out.Token() != "t1" || len(s.seen) != 2 {
		t.Fatalf("got %v after %d attempts", out, len(s.seen))
	}
	if len(*waits) != 1 || (*waits)[0] != 2*time.Second {
		t.Errorf("waited %v, want Retry-After's 2 s", *waits)
	}
	a, b := s.seen[0].Header, s.seen[1].Header
	if k := a.Get("Idempotency-Key"); len(k) != 36 || k != b.Get("Idempotency-Key") {
		t.Errorf("Idempotency-Key %q then %q: want one UUID for both", k, b.Get("Idempotency-Key"))
	}
	if a.Get("x-nonce") == b.Get("x-nonce") || a.Get("x-hash") == b.Get("x-hash") || a.Get("x-signature-version") != "2" {
		t.Error("the retry was not signed again with version 2")
	}
	if s.bodies[0] != s.bodies[1] || s.bodies[0] != `{"first_name":"Mara"}` {
		t.Errorf("bodies %q", s.bodies)
	}
	// The signature is the contract's version 2 over what was sent.
	want := emi.SignV2("secret", "ak_test", a.Get("x-timestamp"), "user_create", "POST", "/v2/users", a.Get("x-nonce"), []byte(s.bodies[0]))
	if a.Get("x-hash") != want {
		t.Errorf("x-hash %s, want %s", a.Get("x-hash"), want)
	}
}

func TestBackoffGrowsWithJitterAndStopsAfterMaxRetries(t *testing.T) {
	t.Parallel()
	s, c, waits := newScripted(t, answer{503, "", unavailable}, answer{429, "", `{"code":10029,"message":"services.general.rate_limited"}`},
		answer{503, "", unavailable}, answer{503, "", unavailable})
	_, err := c.Do(context.Background(), "GET", "/v2/partner", nil, nil)
	var e *emi.Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != 10503 {
		t.Fatalf("err %v, want the last 503", err)
	}
	if len(s.seen) != 4 || len(*waits) != 3 {
		t.Fatalf("%d attempts, %d waits: want 1 + MaxRetries (3)", len(s.seen), len(*waits))
	}
	for i, w := range *waits {
		if ceil := c.BackoffBase << i; w < 0 || w > ceil {
			t.Errorf("wait %d is %v, want within [0, %v]", i, w, ceil)
		}
	}
}

func TestNeverRetriesOther4xxNorAnUnknownOutcomeOfAPut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method string
		a      answer
		code   int
	}{
		{"POST", answer{400, "", `{"code":-3,"message":"service.users.validation","errors":[{"field":"email","message":"is required"}]}`}, -3},
		{"POST", answer{409, "", `{"code":10409,"message":"services.general.idempotency_conflict"}`}, 10409},
		{"GET", answer{401, "", `{"code":10001,"message":"services.auth.invalid"}`}, 10001},
		{"PUT", answer{503, "1", `{"code":10504,"message":"services.general.outcome_unknown"}`}, 10504},
		// A daily limit's Retry-After is longer than MaxRetryAfter.
		{"POST", answer{429, "86400", `{"code":10029,"message":"services.general.rate_limited"}`}, 10029},
	} {
		path := map[string]string{"POST": "/v2/users", "GET": "/v2/partner", "PUT": "/v2/cards/c1/status"}[tc.method]
		s, c, _ := newScripted(t, tc.a, answer{200, "", `{"code":0,"data":{}}`})
		_, err := c.Do(context.Background(), tc.method, path, emi.Object{}, nil)
		if !emi.IsCode(err, tc.code) || len(s.seen) != 1 {
			t.Errorf("%s answered %d: err %v after %d attempts, want code %d at once", tc.method, tc.a.status, err, len(s.seen), tc.code)
		}
	}
	_, c, _ := newScripted(t, answer{400, "", `{"code":-3,"message":"service.users.validation","errors":[{"field":"email","message":"is required"}]}`})
	_, err := c.Do(context.Background(), "POST", "/v2/users", emi.Object{}, nil)
	var e *emi.Error
	if !errors.As(err, &e) || len(e.Errors) != 1 || e.Errors[0].Field != "email" || e.Message != "service.users.validation" {
		t.Errorf("typed error: %#v", err)
	}
}

func TestRetriesNetworkErrorsOfGetAndPostOnly(t *testing.T) {
	t.Parallel()
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	for method, want := range map[string]int{"GET": 2, "POST": 2, "PUT": 0, "DELETE": 0} {
		c := emi.New("http://"+addr, "k", "s")
		c.MaxRetries = 2
		var waits int
		c.Sleep = func(context.Context, time.Duration) error { waits++; return nil }
		path := "/v2/cards/c1"
		if method == "POST" {
			path = "/v2/cards"
		} else if method == "PUT" {
			path += "/status"
		}
		_, err := c.Do(context.Background(), method, path, nil, nil)
		var e *emi.Error
		if err == nil || errors.As(err, &e) || waits != want {
			t.Errorf("%s to a closed port: %v after %d retries, want a network error after %d", method, err, waits, want)
		}
	}
}

func TestAnAnswerThatIsNotTheEnvelopeIsATypedErrorAndA503IsRetried(t *testing.T) {
	t.Parallel()
	s, c, _ := newScripted(t, answer{503, "0", "<html>upstream unavailable</html>"}, answer{200, "", `{"code":0,"data":{"merchant":"m"}}`})
	o, err := c.Do(context.Background(), "GET", "/v2/partner", nil, &emi.Options{})
	if err != nil || len(s.seen) != 2 || string(o.Data) != `{"merchant":"m"}` {
		t.Fatalf("%v after %d attempts", err, len(s.seen))
	}
	_, c2, _ := newScripted(t, answer{502, "", "bad gateway"})
	_, err = c2.Do(context.Background(), "GET", "/v2/partner", nil, nil)
	var e *emi.Error
	if !errors.As(err, &e) || e.Status != 502 || e.Code != 0 || e.Description != "bad gateway" {
		t.Errorf("a proxy's page: %#v", err)
	}
}

func TestVersion1AndExplicitOperation(t *testing.T) {
	t.Parallel()
	s, c, _ := newScripted(t, answer{200, "", `{"code":0,"data":{}}`}, answer{200, "", `{"code":0,"data":{}}`})
	c.SignatureVersion = 1
	if _, err := c.Do(context.Background(), "PUT", "/v2/cards/c1/status", []byte(`{"status": "active"}`), nil); err != nil {
		t.Fatal(err)
	}
	h := s.seen[0].Header
	if h.Get("x-signature-version") != "" || h.Get("Idempotency-Key") != "" ||
		h.Get("x-hash") != emi.SignV1("secret", "ak_test", h.Get("x-timestamp"), "card_status", "PUT", []byte(`{"status":"active"}`)) {
		t.Errorf("version 1 headers: %v", h)
	}
	if _, err := c.Do(context.Background(), "GET", "/v2/not-in-the-table", nil, nil); err == nil || !strings.Contains(err.Error(), "Options.Operation") {
		t.Errorf("an unknown route: %v", err)
	}
	if _, err := c.Do(context.Background(), "GET", "/v2/not-in-the-table", nil, &emi.Options{Operation: "future_op"}); err != nil {
		t.Fatal(err)
	}
	if got := s.seen[1].Header.Get("x-hash"); got != emi.SignV1("secret", "ak_test", s.seen[1].Header.Get("x-timestamp"), "future_op", "GET", nil) {
		t.Errorf("explicit operation not signed: %s", got)
	}
}

func TestListPagesAndFollowsTheCursor(t *testing.T) {
	t.Parallel()
	s, c, _ := newScripted(t,
		answer{200, "", `{"code":0,"data":{"items":[{"token":"a"},{"token":"b"}],"page":1,"limit":2,"total":3}}`},
		answer{200, "", `{"code":0,"data":{"items":[{"token":"c"}],"page":2,"limit":2,"total":3}}`},
		answer{200, "", `{"code":0,"data":{"items":[{"id":"e2"}],"page":1,"limit":1,"total":2}}`},
		answer{200, "", `{"code":0,"data":{"items":[{"id":"e3"}],"page":1,"limit":1,"total":1}}`},
		answer{200, "", `{"code":0,"data":{"items":[],"page":1,"limit":1,"total":0}}`},
	)
	var got []string
	for o, err := range c.List(context.Background(), "/v2/accounts", emi.ListOptions{Limit: 2, Query: map[string][]string{"user": {"u1"}}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Token())
	}
	for o, err := range c.List(context.Background(), "/v2/events", emi.ListOptions{Limit: 1, After: "e1"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.String("id"))
	}
	if strings.Join(got, ",") != "a,b,c,e2,e3" {
		t.Errorf("items %v", got)
	}
	var targets []string
	for _, r := range s.seen {
		targets = append(targets, r.URL.RequestURI())
	}
	want := "/v2/accounts/1/2?user=u1 /v2/accounts/2/2?user=u1 /v2/events/1/1?after=e1 /v2/events/1/1?after=e2 /v2/events/1/1?after=e3"
	if strings.Join(targets, " ") != want {
		t.Errorf("requests %v, want %s", targets, want)
	}
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210"))
	body := []byte(`{"id":"ev1","type":"webhook.test","data":{}}`)
	now := time.Unix(1700000000, 0)
	sig, err := emi.SignWebhook(secret, "ev1", now.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	oldSig, _ := emi.SignWebhook(other, "ev1", now.Unix(), body)
	h := http.Header{}
	h.Set("webhook-id", "ev1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", oldSig+" "+sig)
	if ev, err := emi.VerifyWebhook(secret, h, body, 0, now.Add(-time.Minute)); err != nil || ev.String("type") != "webhook.test" {
		t.Fatalf("a good delivery (second of two signatures): %v %v", ev, err)
	}
	for what, c := range map[string]struct {
		body []byte
		at   time.Time
		h    func(http.Header)
	}{
		"tampered body":    {[]byte(`{"id":"ev1","type":"webhook.test","data":{"x":1}}`), now, nil},
		"too old":          {body, now.Add(5*time.Minute + time.Second), nil},
		"from the future":  {body, now.Add(-5*time.Minute - time.Second), nil},
		"other id":         {body, now, func(h http.Header) { h.Set("webhook-id", "ev2") }},
		"no signature":     {body, now, func(h http.Header) { h.Del("webhook-signature") }},
		"unknown version":  {body, now, func(h http.Header) { h.Set("webhook-signature", strings.Replace(sig, "v1,", "v2,", 1)) }},
		"only another key": {body, now, func(h http.Header) { h.Set("webhook-signature", oldSig) }},
	} {
		hh := h.Clone()
		if c.h != nil {
			c.h(hh)
		}
		if _, err := emi.VerifyWebhook(secret, hh, c.body, 0, c.at); !errors.Is(err, emi.ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", what, err)
		}
	}
}
