package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/web/httpx"
)

// The hostile input sweep and check S4 over the whole partner API. Both
// walk the real router, so a new route is swept (or fails the test until it
// says what its path parameters are) without anyone remembering to add it.

// soak reports whether the full sweep was asked for (EMI_SOAK=1, make soak).
func soak() bool { return os.Getenv("EMI_SOAK") == "1" }

// hostileTables lists the tables whose content legitimately changes on a
// refused request; every other table must be byte for byte the same.
var hostileTables = map[string]string{
	// The replay guard records every authenticated signature before the
	// handler runs (contract §2): a refused request still used its
	// signature, and must not be replayable.
	"api_signatures": "replay guard: consumed signatures",
	// Limits that count refused attempts on purpose: a transfer's
	// destination miss (14006) counts against the key.
	"rate_events": "refused attempts counted by atomic limits",
}

// dbDigest returns an md5 of every row of every table (but those of
// hostileTables), by table.
func dbDigest(t testing.TB, env *apptest.Env) map[string]string {
	return env.TableDigest(t, apptest.DigestOptions{Skip: hostileTables})
}

// tenant is one partner with one resource of every kind a path names.
type tenant struct {
	p *apptest.Partner
	// tok maps a path parameter name to a token of that kind.
	tok map[string]string
}

// newTenant creates a partner with a user, a funded account with a card,
// an approved card authorization, a pending outgoing payment and an open
// application with a member.
func newTenant(t *testing.T, env *apptest.Env, name string) *tenant {
	t.Helper()
	p := env.NewPartner(t, emi.PartnerCreate{Name: name, Processing: emi.ProcessingSemiAutomatic})
	c := newPayCard(t, env, p, "account_eur", 100000, nil)
	auth := c.authorize(t, pos("10.00"))
	apptest.Expect(t, "fixture authorization", auth, 0, http.StatusCreated)
	tr := payOut(t, env, p, sepa(c.acc, "5.00"))
	apptest.Expect(t, "fixture outgoing payment", tr, 0, http.StatusCreated)
	user := createUser(t, env, p, validUser(p))
	ar := call(t, env, p, http.MethodPost, "/v3/applications", "application_create", map[string]any{
		"products": []string{"account-opening"}, "due_diligence": "CDD", "company": sandboxCompany(),
		"members": []map[string]any{cleanUBO()}})
	apptest.Expect(t, "fixture application", ar, 0, http.StatusCreated)
	members, _ := ar.Data["members"].([]any)
	if len(members) != 1 {
		t.Fatalf("fixture application has no member: %s", ar)
	}
	return &tenant{p: p, tok: map[string]string{
		"user": user, "account": c.acc, "card": c.card, "authorization": auth.Data["token"].(string),
		"transfer": tr.Data["token"].(string), "application": ar.Data["token"].(string),
		"token": members[0].(map[string]any)["token"].(string), "aml": amlHit(t, env, p),
		"endpoint": webhookEndpoint(t, env, p), "information_request": informationRequest(t, env, p, user),
	}}
}

// notFound is the answer for an unknown (or foreign) token in each path
// parameter (contract §1, §2, §4).
var notFound = map[string]*emi.Error{
	"user": emi.ErrUserNotFound, "account": emi.ErrAccountNotFound, "card": emi.ErrCardNotFound,
	"authorization": emi.ErrAuthorizationNotFound, "transfer": emi.ErrTransferNotFound,
	"application": emi.ErrApplicationNotFound, "token": emi.ErrMemberNotFound, "aml": emi.ErrAPIAMLNotFound,
	"endpoint": emi.ErrAPIWebhookEndpointNotFound, "information_request": emi.ErrInformationRequestNotFound,
}

// wrongKind names, for each token parameter, a parameter whose token is of
// another kind.
var wrongKind = map[string]string{
	"user": "account", "account": "card", "card": "account", "authorization": "transfer",
	"transfer": "authorization", "application": "user", "token": "user", "aml": "user", "endpoint": "user",
	"information_request": "user",
}

// validationByPrefix is each route's validation error (routes.go): the
// code of unknown fields, wrong types and rule failures.
var validationByPrefix = []struct {
	prefix string
	err    *emi.Error
}{
	{"/v1/", emi.ErrValidation}, {"/v3/", emi.ErrValidation},
	{"/v2/partner", emi.ErrValidation}, {"/v2/events/", emi.ErrValidation}, {"/v2/webhooks", emi.ErrAPIWebhookValidation},
	{"/v2/sandbox/events", emi.ErrAPIWebhookValidation},
	{"/v2/users", emi.ErrUserValidation},
	{"/v2/accounts", emi.ErrAccountValidation},
	{"/v2/cards", emi.ErrCardValidation}, {"/v2/sandbox/cards/", emi.ErrCardValidation},
	{"/v2/transfers", emi.ErrTransferValidation}, {"/v2/sandbox/authorizations/", emi.ErrTransferValidation},
	{"/v2/sandbox/transfers/", emi.ErrTransferValidation}, {"/v2/sandbox/incoming", emi.ErrTransferValidation},
	{"/v2/information_requests", emi.ErrValidation}, {"/v2/sandbox/reset", emi.ErrValidation},
	{"/v2/sandbox/test_clock", emi.ErrTestClockValidation},
}

// apiRoute is one routed operation with what openapi.yaml says of it.
type apiRoute struct {
	method, pattern, op string
	invalid             *emi.Error
	params              []string
	body                bool                    // has a request body
	required            []string                // required top-level fields
	props               map[string]*base.Schema // top-level fields
	example             []byte                  // a documented request, or nil
	queries             []string                // documented query parameters
	limit               int64
}

var pathParamName = regexp.MustCompile(`\{([a-z_]+)\}`)

// documentBodyOps are the operations with the 20 MiB limit (contract §1).
var documentBodyOps = map[string]bool{"user_create": true, "application_create": true, "company_add_document": true,
	"company_add_member": true, "company_member_add_document": true}

// walkAPI lists every route of the real router, with its signed name and
// request schema from openapi.yaml. A route openapi.yaml does not know, or
// whose validation code or path parameters this file does not know, fails
// the test.
func walkAPI(t *testing.T, env *apptest.Env) []apiRoute {
	t.Helper()
	docs := map[string]documentedOperation{}
	for _, o := range documentedOperations(t, openAPIModel(t)) {
		docs[o.method+" "+o.path] = o
	}
	r := chi.NewRouter()
	env.App.API().Routes(r)
	var out []apiRoute
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		o, ok := docs[method+" "+route]
		if !ok {
			t.Errorf("%s %s is routed but not in openapi.yaml: the sweep cannot sign it", method, route)
			return nil
		}
		ar := apiRoute{method: method, pattern: route, op: o.name, props: map[string]*base.Schema{}, limit: 1 << 20}
		if documentBodyOps[o.name] {
			ar.limit = 20 << 20
		}
		for _, v := range validationByPrefix {
			if strings.HasPrefix(route, v.prefix) {
				ar.invalid = v.err
				break
			}
		}
		if ar.invalid == nil {
			t.Errorf("%s %s: say its validation code in validationByPrefix", method, route)
		}
		for _, m := range pathParamName.FindAllStringSubmatch(route, -1) {
			if m[1] != "page" && m[1] != "limit" && notFound[m[1]] == nil {
				t.Errorf("%s %s: say what answers an unknown {%s} in notFound", method, route, m[1])
			}
			ar.params = append(ar.params, m[1])
		}
		for _, prm := range o.op.Parameters {
			if prm.In == "query" {
				ar.queries = append(ar.queries, prm.Name)
			}
		}
		if o.op.RequestBody != nil {
			if mt := o.op.RequestBody.Content.GetOrZero("application/json"); mt != nil && mt.Schema != nil {
				ar.body = true
				collectProps(mt.Schema.Schema(), &ar)
				if mt.Examples != nil {
					for _, ex := range mt.Examples.FromOldest() {
						if ex.Value != nil {
							ar.example = exampleJSON(t, ex.Value)
							break
						}
					}
				}
			}
		}
		out = append(out, ar)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 40 {
		t.Fatalf("only %d API routes found: the walk is broken", len(out))
	}
	return out
}

func collectProps(s *base.Schema, ar *apiRoute) {
	if s == nil {
		return
	}
	for _, sub := range s.AllOf {
		collectProps(sub.Schema(), ar)
	}
	ar.required = append(ar.required, s.Required...)
	if s.Properties != nil {
		for name, p := range s.Properties.FromOldest() {
			ar.props[name] = p.Schema()
		}
	}
}

// sent is one hostile request and the answer it must get.
type sent struct {
	what   string
	path   string // escaped
	body   []byte
	ctype  string
	status int
	code   int
	field  string // an errors entry must name it, when set
	// words: the errors entry must name field exactly (any code, 10005
	// included) with a message holding words.
	words string
	// content marks a well-formed body whose values are wrong (empty,
	// huge, out of range): the operation's documented refusals of a value
	// (contentRefusals) are right as well as its validation code.
	content bool
	// kind groups the per-field and extra cases that the CI form thins
	// (bounded); "" is always sent.
	kind string
	// emptyOK: a filter that matches nothing (200, no items) is right too.
	emptyOK bool
}

// contentRefusals are the documented answers (openapi.yaml) other than the
// validation code that an operation gives to a well-formed body with a
// wrong value, given the sweep's fixtures.
var contentRefusals = map[string][]*emi.Error{
	// The user token is looked up as sent: a 100 kB one is unknown.
	"kyc_init": {emi.ErrUserNotFound},
	// The fixture's card is active: activating it is refused first.
	"card_activate": {emi.ErrCardInvalidTransition},
	// The fixture's card is personalized: assigning it is refused first.
	"card_assign": {emi.ErrCardInvalidTransition},
	// A group code that is not one of the program's (a 100 kB one).
	"card_groups": {emi.ErrGroupNotInProgram},
}

// hostileRun sends requests one at a time, each against a database digest.
type hostileRun struct {
	t     *testing.T
	env   *apptest.Env
	p     *apptest.Partner
	sent  int
	fails int
	// reveals is the number of successful card audit rows of the
	// fixtures, which refused reveals must not add to.
	reveals int
}

// newHostileRun starts a sweep that signs as p, counting the successful
// card audit rows already there.
func newHostileRun(t *testing.T, env *apptest.Env, p *apptest.Partner) *hostileRun {
	return &hostileRun{t: t, env: env, p: p, reveals: successfulReveals(t, env)}
}

// successfulReveals counts the card data reveals audited as successes.
func successfulReveals(t *testing.T, env *apptest.Env) int {
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE outcome = 'success' AND action LIKE 'card.%'`); err != nil {
		t.Fatal(err)
	}
	return n
}

// auditedRefusals are the operations whose refusals are audited on
// purpose: the card data reveals.
var auditedRefusals = map[string]bool{"card_number": true, "card_retrieve_pin": true}

// do sends one request signed by r.p and checks the answer and the
// database.
func (r *hostileRun) do(rt apiRoute, s sent) {
	t := r.t
	t.Helper()
	r.env.Clock.Advance(time.Second) // one signature per request
	before := dbDigest(t, r.env)
	rq := apptest.Request{Method: rt.method, Path: s.path, Operation: rt.op, Body: s.body}
	req := r.p.HTTPRequest(t, rq)
	if s.ctype != "" {
		req.Header.Set("Content-Type", s.ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", rt.method, rt.pattern, s.what, err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	r.sent++
	fail := func(format string, args ...any) {
		r.fails++
		if r.fails <= 200 {
			t.Errorf("%s %s [%s]: %s (HTTP %d %.300s)", rt.method, rt.pattern, s.what, fmt.Sprintf(format, args...), res.StatusCode, raw)
		}
	}
	var envl struct {
		Code    *int             `json:"code"`
		Message string           `json:"message"`
		Errors  []emi.FieldError `json:"errors"`
	}
	if err := json.Unmarshal(raw, &envl); err != nil || envl.Code == nil {
		fail("not a JSON envelope")
		return
	}
	if res.StatusCode >= 500 {
		fail("server error")
	}
	ok := res.StatusCode == s.status && *envl.Code == s.code
	if s.emptyOK && res.StatusCode == http.StatusOK && *envl.Code == 0 && bytes.Contains(raw, []byte(`"items":[]`)) {
		ok = true
	}
	if s.content {
		for _, e := range contentRefusals[rt.op] {
			ok = ok || (res.StatusCode == httpx.Status(e.Kind) && *envl.Code == e.Code)
		}
	}
	if !ok {
		fail("want HTTP %d code %d", s.status, s.code)
	}
	for _, f := range envl.Errors {
		if bad := badFieldPath(f.Field); bad != "" {
			fail("errors entry %q: %s", f.Field, bad)
		}
	}
	if s.words != "" && ok {
		named := slices.ContainsFunc(envl.Errors, func(f emi.FieldError) bool {
			return f.Field == s.field && strings.Contains(f.Message, s.words)
		})
		if !named {
			fail("no errors entry {field %q, message with %q}", s.field, s.words)
		}
	} else if s.field != "" && ok && res.StatusCode == http.StatusBadRequest && *envl.Code != emi.ErrBadRequest.Code {
		named := false
		for _, f := range envl.Errors {
			named = named || f.Field == s.field || strings.HasPrefix(f.Field, s.field+".") || strings.HasPrefix(f.Field, s.field+"[")
		}
		if !named {
			fail("no errors entry names %q", s.field)
		}
	}
	rec := &recordTB{TB: t}
	r.env.CheckOpenAPI(rec, req, res, raw)
	if rec.failed {
		fail("answer does not match openapi.yaml: %s", rec.msg)
	}
	ch := apptest.ChangedTables(before, dbDigest(t, r.env))
	if auditedRefusals[rt.op] && slices.Equal(ch, []string{"audit_log"}) {
		// A refused card data reveal is audited (PCI DSS 10.2.1.1, 10.2.1.4):
		// one row, with a failure outcome, and nothing else.
		if n := successfulReveals(t, r.env); n != r.reveals {
			fail("a refused reveal was audited as a success (%d successes, want %d)", n, r.reveals)
		}
		ch = nil
	}
	if len(ch) > 0 {
		fail("refused request changed tables %v", ch)
	}
}

// badFieldPath says what is wrong with the field path of an errors entry,
// or "": a path names members as payout_details[0].iban or
// company.legal_name, never with a leading, trailing or doubled dot.
func badFieldPath(f string) string {
	switch {
	case strings.HasPrefix(f, "."):
		return "starts with a dot"
	case strings.HasSuffix(f, "."):
		return "ends with a dot"
	case strings.Contains(f, ".."), strings.Contains(f, ".["):
		return "has an empty member name"
	}
	return ""
}

// fill returns the route's path with every parameter taken from tok
// (pages and limits 1), and param replaced by value (already escaped).
func fill(pattern string, tok map[string]string, param, value string) string {
	return pathParamName.ReplaceAllStringFunc(pattern, func(m string) string {
		name := m[1 : len(m)-1]
		switch {
		case name == param:
			return value
		case name == "page" || name == "limit":
			return "1"
		}
		return tok[name]
	})
}

func deep(n int) []byte {
	return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
}

func jsonOf(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// wrongTypes returns values of the wrong JSON type for a field of schema s.
func wrongTypes(s *base.Schema) []any {
	if s == nil || len(s.Type) != 1 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return nil // ambiguous: several types accepted
	}
	switch s.Type[0] {
	case "string":
		return []any{12345, true, map[string]any{}, []any{"x"}}
	case "integer", "number":
		return []any{"12", true, map[string]any{}, []any{1}}
	case "boolean":
		return []any{"true", 1, []any{}}
	case "array":
		return []any{"x", 1, map[string]any{}}
	case "object":
		return []any{"x", 1, []any{}}
	}
	return nil
}

func isType(s *base.Schema, typ string) bool { return s != nil && slices.Contains(s.Type, typ) }

// TestHostileInputSweep sends malformed, mistyped, huge, deep, invalid and
// NUL-carrying bodies, hostile numbers and hostile path tokens to every
// route, signed by a partner that owns every resource named: each answer
// is the right 4xx with the right code, matches openapi.yaml, and the
// database is unchanged.
func TestHostileInputSweep(t *testing.T) {
	t.Parallel()
	start := time.Now()
	env := apptest.New(t, apptest.Options{})
	a := newTenant(t, env, "Hostile A")
	b := newTenant(t, env, "Hostile B")
	routes := walkAPI(t, env)
	run := newHostileRun(t, env, a.p)
	bad := emi.ErrBadRequest
	for _, rt := range routes {
		inv := rt.invalid
		path := fill(rt.pattern, a.tok, "", "")
		expectInvalid := func(what string, body []byte, field string) sent {
			return sent{what: what, path: path, body: body, status: http.StatusBadRequest, code: inv.Code, field: field}
		}
		wrongValue := func(what string, body []byte) sent {
			return sent{what: what, path: path, body: body, status: http.StatusBadRequest, code: inv.Code, content: true}
		}
		malformed := func(what string, body []byte) sent {
			return sent{what: what, path: path, body: body, status: http.StatusBadRequest, code: bad.Code}
		}
		var cases []sent
		if rt.body {
			cases = append(cases,
				malformed("truncated", []byte(`{"a":`)),
				malformed("truncated string", []byte(`{"a":"b`)),
				malformed("trailing garbage", []byte(`{} x`)),
				malformed("two objects", []byte(`{}{}`)),
				malformed("an array", []byte(`[]`)),
				malformed("a string", []byte(`"x"`)),
				malformed("a number", []byte(`1`)),
				malformed("null", []byte(`null`)),
				malformed("invalid UTF-8", []byte("{\"a\":\"\xff\xfe\"}")),
				malformed("invalid UTF-8 key", []byte("{\"\xc3\x28\":1}")),
				malformed("nested 40 deep", deep(40)),
				malformed("nested 10,000 deep", deep(10000)),
				sent{what: "wrong content type", path: path, body: []byte(`{}`), ctype: "text/plain", status: http.StatusBadRequest, code: bad.Code},
				sent{what: "latin-1 charset", path: path, body: []byte(`{}`), ctype: "application/json; charset=iso-8859-1", status: http.StatusBadRequest, code: bad.Code},
				expectInvalid("unknown field", []byte(`{"zz_unknown_field":1}`), "zz_unknown_field"),
			)
			if rt.example != nil {
				// Every strict prefix of a JSON object is malformed: cut
				// the documented request at 3 places (CI) or ~50 (soak).
				n := len(rt.example)
				cuts := []int{n / 3, n / 2, n - 1}
				if soak() {
					cuts = nil
					for i := 1; i < n; i += max(1, n/50) {
						cuts = append(cuts, i)
					}
				}
				for _, c := range cuts {
					if c < 1 {
						continue // an empty body is a body of its own (decoded as {})
					}
					cases = append(cases, malformed(fmt.Sprintf("example cut at %d of %d", c, n), rt.example[:c]))
				}
			}
			big := append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), int(rt.limit))...)
			big = append(big, `"}`...)
			cases = append(cases, sent{what: "body over the limit", path: path, body: big, status: http.StatusRequestEntityTooLarge, code: emi.ErrTooLarge.Code})
			if rt.limit > 1<<20 {
				// Under the document limit: a 1.5 MB value is read and refused
				// by the decoder.
				cases = append(cases, expectInvalid("1.5 MB unknown field", jsonOf(map[string]any{"zz_big": strings.Repeat("x", 3<<19)}), "zz_big"))
			}
			if len(rt.required) > 0 {
				cases = append(cases, wrongValue("empty body", nil), wrongValue("empty object", []byte(`{}`)))
			}
			names := make([]string, 0, len(rt.props))
			for n := range rt.props {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, name := range names {
				s := rt.props[name]
				for _, v := range wrongTypes(s) {
					c := expectInvalid(fmt.Sprintf("%s as %T", name, v), jsonOf(map[string]any{name: v}), name)
					c.kind = "type"
					cases = append(cases, c)
				}
				if isType(s, "string") {
					huge := strings.Repeat("A", 100<<10)
					h := wrongValue(name+" of 100 kB", jsonOf(map[string]any{name: huge}))
					h.kind = "huge"
					n := expectInvalid(name+" with NUL", []byte(`{"`+name+`":"a\u0000b"}`), name)
					n.kind = "nul"
					cases = append(cases, h, n)
				}
				if isType(s, "integer") || isType(s, "number") || isType(s, "string") && (name == "amount" || name == "limit") {
					for _, n := range []string{"-1", "1e309", "-1e309", "9223372036854775808", "1e-400", "-9223372036854775809"} {
						c := wrongValue(name+"="+n, []byte(`{"`+name+`":`+n+`}`))
						c.kind = "number"
						cases = append(cases, c)
					}
				}
			}
		}
		for _, param := range rt.params {
			var values []sent
			if param == "page" || param == "limit" {
				for _, v := range []string{"0", "-1", "abc", "1.5", "9223372036854775808", "99999999999999999999999", "%00", "1%00", strings.Repeat("9", 5000)} {
					values = append(values, sent{what: "{" + param + "}=" + v, path: fill(rt.pattern, a.tok, param, v),
						status: http.StatusBadRequest, code: inv.Code, field: param})
				}
			} else {
				nf := notFound[param]
				for i, v := range []struct{ what, value string }{
					{"random token", kernel.NewToken()},
					{"another partner's token", b.tok[param]},
					{"a token of another kind", a.tok[wrongKind[param]]},
					{"another partner's token in upper case", strings.ToUpper(b.tok[param])},
					{"sql", url.PathEscape(`' OR '1'='1`)},
					{"sql union", url.PathEscape(`x' UNION SELECT pan FROM cards--`)},
					{"NUL", "%00"},
					{"token with NUL", a.tok[param] + "%00"},
					{"invalid UTF-8", "%ff%fe"},
					{"overlong", strings.Repeat("a", 5000)},
					{"token and more", a.tok[param] + "0"},
					{"braces", "%7B" + param + "%7D"},
				} {
					c := sent{what: "{" + param + "}: " + v.what, path: fill(rt.pattern, a.tok, param, v.value),
						status: http.StatusNotFound, code: nf.Code}
					if i >= 7 {
						c.kind = "path " + param
					}
					values = append(values, c)
				}
			}
			for _, s := range values {
				if rt.body {
					s.body = validBody(rt)
				}
				cases = append(cases, s)
			}
		}
		if len(rt.queries) > 0 {
			cases = append(cases, sent{what: "unknown filter", path: path + "?zz_unknown=1", status: http.StatusBadRequest, code: inv.Code, field: "zz_unknown"})
			for _, q := range rt.queries {
				cases = append(cases, sent{what: q + " given twice", path: path + "?" + q + "=a&" + q + "=b", status: http.StatusBadRequest, code: inv.Code, field: q})
				for _, v := range []string{"%00", "a%00b", "%ff%fe", url.QueryEscape(`' OR '1'='1`), strings.Repeat("a", 5000), b.tok["user"], b.p.Merchant} {
					cases = append(cases, sent{what: q + "=" + v[:min(len(v), 20)], path: path + "?" + q + "=" + v,
						status: http.StatusBadRequest, code: inv.Code, emptyOK: true})
				}
			}
		}
		if !soak() {
			cases = bounded(cases)
		}
		for _, c := range cases {
			run.do(rt, c)
		}
	}
	t.Logf("hostile sweep: %d routes, %d requests, %d wrong answers, %s", len(routes), run.sent, run.fails, time.Since(start).Round(time.Millisecond))
}

// validBody is the body sent with a hostile path token: the documented
// example where there is one (its tokens are unknown, but the path's
// resource is looked up first), else {}.
func validBody(rt apiRoute) []byte {
	if b, ok := validBodies[rt.op]; ok {
		return []byte(b)
	}
	if rt.example != nil {
		return rt.example
	}
	return []byte(`{}`)
}

// validBodies are bodies for the operations that check the body before
// looking the resource up (so a hostile path token must come with a
// valid body to reach the lookup).
var validBodies = map[string]string{
	"account_status": `{"status":"blocked"}`,
}

// bounded keeps the CI form short (EMI_SOAK=1 sends everything): every
// malformed body, every path parameter's main hostile tokens and every
// filter case are sent, but the per-field cases (wrong type, 100 kB, NUL,
// hostile number) are thinned to the first perKind of each kind per route,
// and the extra path tokens to the first one.
func bounded(cases []sent) []sent {
	const perKind = 3
	seen := map[string]int{}
	var out []sent
	for _, c := range cases {
		if c.kind != "" {
			seen[c.kind]++
			limit := perKind
			if strings.HasPrefix(c.kind, "path ") {
				limit = 1
			}
			if seen[c.kind] > limit {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// TestHostileListFiltersRefuseNULAndInvalidUTF8 is the regression test of
// a bug the sweep found: ?program= with a NUL or invalid UTF-8 answered
// 500 on accounts_list and cards_list (PostgreSQL refused the value).
func TestHostileListFiltersRefuseNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{})
	for _, list := range []struct {
		path, op string
		invalid  *emi.Error
	}{{"/v2/accounts/1/10", "accounts_list", emi.ErrAccountValidation}, {"/v2/cards/1/10", "cards_list", emi.ErrCardValidation}} {
		for _, v := range []string{"%00", "account_eur%00", "%ff%fe", "%c3%28"} {
			for _, filter := range []string{"program", "merchant", "user"} {
				r := call(t, env, p, http.MethodGet, list.path+"?"+filter+"="+v, list.op, nil)
				apptest.Expect(t, list.op+" ?"+filter+"="+v, r, list.invalid.Code, http.StatusBadRequest)
				apptest.ExpectField(t, list.op+" ?"+filter+"="+v, r, filter)
			}
		}
		r := call(t, env, p, http.MethodGet, list.path+"?program=account_eur", list.op, nil)
		apptest.Expect(t, list.op+" with a plain filter", r, 0, http.StatusOK)
	}
}

// amlHit makes an AML check that answers 18001 (a hit waiting for review).
func amlHit(t *testing.T, env *apptest.Env, p *apptest.Partner) string {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody())
	apptest.Expect(t, "fixture AML hit", r, emi.ErrAMLMatchFound.Code, http.StatusConflict)
	return r.Data["token"].(string)
}

// webhookEndpoint registers a (loopback, sandbox) endpoint for p.
func webhookEndpoint(t *testing.T, env *apptest.Env, p *apptest.Partner) string {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:9/hooks"})
	apptest.Expect(t, "fixture webhook endpoint", r, 0, http.StatusCreated)
	return r.Data["id"].(string)
}
