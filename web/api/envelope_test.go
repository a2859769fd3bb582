package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

func TestEnvelopeAndStrictDecoding(t *testing.T) {
	t.Parallel()
	env, wg := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})

	raw := func(body string, header map[string]string) apptest.Request {
		env.Clock.Advance(time.Second) // every request below is signed afresh
		rq := widgetRequest(nil, "")
		rq.Body = []byte(body)
		rq.Header = header
		return rq
	}
	cases := []struct {
		name   string
		rq     apptest.Request
		code   int
		status int
		field  string
	}{
		{"malformed JSON is a bad request", raw(`{"name":`, nil), 10005, 400, ""},
		{"data after the object is a bad request", raw(`{"name":"a"} {"name":"b"}`, nil), 10005, 400, ""},
		{"a top-level array is a bad request", raw(`[{"name":"a"}]`, nil), 10005, 400, ""},
		{"a JSON string is a bad request", raw(`"name"`, nil), 10005, 400, ""},
		{"invalid UTF-8 is a bad request", raw("{\"name\":\"\xff\xfe\"}", nil), 10005, 400, ""},
		{"a wrong content type is a bad request", raw(`{"name":"a"}`, map[string]string{"Content-Type": "text/plain"}), 10005, 400, ""},
		{"a non-UTF-8 charset is a bad request", raw(`{"name":"a"}`, map[string]string{"Content-Type": "application/json; charset=latin1"}), 10005, 400, ""},
		{"deep nesting is a bad request", raw(`{"name":"a","items":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}`, nil), 10005, 400, ""},
		{"an unknown field names the field", raw(`{"name":"a","colour":"red"}`, nil), 11001, 400, "colour"},
		{"a differently cased field is unknown", raw(`{"Name":"a"}`, nil), 11001, 400, "Name"},
		{"a nested unknown field has its path", raw(`{"name":"a","items":[{"label":"x"},{"label":"y","size":3}]}`, nil), 11001, 400, "items[1].size"},
		{"a wrong type names the field", raw(`{"name":5}`, nil), 11001, 400, "name"},
		{"an object where an array belongs names the field", raw(`{"name":"a","items":{}}`, nil), 11001, 400, "items"},
		{"a rule failure names the field", raw(`{"name":"far too long a name"}`, nil), 11001, 400, "name"},
		{"a missing required field names the field", raw(`{}`, nil), 11001, 400, "name"},
		{"a nested rule failure has its path", raw(`{"name":"a","items":[{"label":""}]}`, nil), 11001, 400, "items[0].label"},
		{"a long Idempotency-Key is a bad request", raw(`{"name":"a"}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}), 10005, 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := countWidgets(t, env)
			r := p.Do(t, c.rq)
			apptest.Expect(t, c.name, r, c.code, c.status)
			if c.field != "" {
				apptest.ExpectField(t, c.name, r, c.field)
			}
			if r.Message == "" || r.Data != nil {
				t.Fatalf("error envelope needs a message and no data: %s", r)
			}
			if countWidgets(t, env) != before {
				t.Fatal("a refused request changed the database")
			}
		})
	}

	t.Run("every problem is reported, not only the first", func(t *testing.T) {
		r := p.Do(t, raw(`{"name":"far too long a name","colour":1,"items":[{"label":""},{"x":1}]}`, nil))
		apptest.Expect(t, "several problems", r, 11001, 400)
		for _, f := range []string{"colour", "items[1].x"} {
			apptest.ExpectField(t, "several problems", r, f)
		}
	})
	t.Run("an empty body decodes as an empty object", func(t *testing.T) {
		r := p.Do(t, raw(``, nil))
		apptest.Expect(t, "empty body", r, 11001, 400)
		apptest.ExpectField(t, "empty body", r, "name")
	})
	t.Run("null is refused where the field is not nullable", func(t *testing.T) {
		r := p.Do(t, raw(`{"name":"nulls","items":null}`, nil))
		apptest.Expect(t, "null items", r, 11001, 400)
		apptest.ExpectField(t, "null items", r, "items")
	})
	t.Run("a body over 1 MiB is refused before it is read", func(t *testing.T) {
		big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
		r := p.Do(t, raw(big, nil))
		apptest.Expect(t, "2 MiB body", r, 10013, 413)
	})
	t.Run("an unknown path answers with the envelope", func(t *testing.T) {
		res, err := http.Get(env.Server.URL + "/v2/no-such-thing")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r := apptest.Decode(t, res.StatusCode, res.Header, body)
		apptest.Expect(t, "unknown path", r, 10004, 404)
	})
	t.Run("a wrong method answers with the envelope", func(t *testing.T) {
		res, err := http.Post(env.Server.URL+"/v2/partner", "application/json", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r := apptest.Decode(t, res.StatusCode, res.Header, body)
		apptest.Expect(t, "POST on a GET operation", r, 10006, 405)
	})
	t.Run("a panic answers 500 without details and logs the request id", func(t *testing.T) {
		r := p.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v9/boom", Operation: "boom", SkipOpenAPI: true})
		apptest.Expect(t, "panic", r, 10000, 500)
		if strings.Contains(string(r.Raw), "secret detail") || r.Message != "services.general.error" {
			t.Fatalf("500 answer leaks details: %s", r.Raw)
		}
		id := r.Header.Get("x-request-id")
		if id == "" || !strings.Contains(env.Logs.String(), id) || !strings.Contains(env.Logs.String(), "boom: secret detail") {
			t.Fatalf("panic with request id %q not in the server log", id)
		}
	})
	t.Run("a client request id is echoed, a hostile one replaced", func(t *testing.T) {
		rq := partnerDetails()
		rq.Header = map[string]string{"x-request-id": "client-abc.123"}
		if got := p.Do(t, rq).Header.Get("x-request-id"); got != "client-abc.123" {
			t.Fatalf("x-request-id %q, want the client's", got)
		}
		env.Clock.Advance(time.Second)
		rq = partnerDetails()
		rq.Header = map[string]string{"x-request-id": "bad id; with <spaces> and a very long tail that goes past sixty-four characters in total"}
		if got := p.Do(t, rq).Header.Get("x-request-id"); got == "" || strings.ContainsAny(got, " ;<") {
			t.Fatalf("hostile x-request-id came back as %q", got)
		}
	})
	t.Run("the access log never holds bodies or secrets", func(t *testing.T) {
		logs := env.Logs.String()
		for _, s := range []string{p.APISecret, "far too long a name", `"colour"`} {
			if strings.Contains(logs, s) {
				t.Fatalf("server log contains %q", s)
			}
		}
		if !strings.Contains(logs, `"operation":"widget_create"`) || !strings.Contains(logs, `"code":11001`) {
			t.Fatal("access log lacks operation or code")
		}
	})
	if wg.calls.Load() == 0 {
		t.Fatal("the widget handler never ran")
	}
}
