package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
)

// uuidInExample finds a token in an example: a placeholder for one of the
// reader's own objects (a user, an account, an event to replay).
var uuidInExample = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// notRunInASandboxTest are the request examples ("POST /v2/cards
// customer_virtual") that no sandbox test can send, each with the reason.
// None today: every example of openapi.yaml runs in
// TestEveryReferenceRequestExampleRunsAsWritten. An entry needs a reason
// a sandbox cannot get past (not "the example is wrong": fix the
// example), and every operation with a request body keeps at least one
// example that runs.
var notRunInASandboxTest = map[string]string{}

// referenceExamples are the request examples of openapi.yaml, by route
// ("POST /v2/cards") and name, and which of them ran.
type referenceExamples struct {
	t      *testing.T
	env    *apptest.Env
	signed map[string]string            // route -> x-emi-operation
	bodies map[string]map[string][]byte // route -> example name -> its value as JSON
	order  map[string][]string          // route -> example names in the document's order
	ran    map[string]bool              // route + " " + name
}

func loadReferenceExamples(t *testing.T, env *apptest.Env) *referenceExamples {
	t.Helper()
	x := &referenceExamples{t: t, env: env, signed: map[string]string{}, bodies: map[string]map[string][]byte{},
		order: map[string][]string{}, ran: map[string]bool{}}
	for _, o := range documentedOperations(t, openAPIModel(t)) {
		route := o.method + " " + o.path
		x.signed[route] = o.name
		if o.op.RequestBody == nil {
			continue
		}
		x.bodies[route] = map[string][]byte{}
		mt := o.op.RequestBody.Content.GetOrZero("application/json")
		if mt == nil || mt.Examples == nil {
			t.Errorf("%s: a request body without an example", route)
			continue
		}
		for name, ex := range mt.Examples.FromOldest() {
			x.bodies[route][name] = exampleJSON(t, ex.Value)
			x.order[route] = append(x.order[route], name)
		}
	}
	return x
}

// own names the reader's own objects an example refers to, by their JSON
// path in the body ("user", "source.account", "destination.iban"), with
// the test's objects to put there. A token in an example stands for one of
// the reader's own (a user, an account, an AML check, an event): the
// document's is nobody's in a sandbox (404, or "not yours"), so a reader
// pastes theirs, and the test its own. The same holds for the IBAN, UK
// account number and sort code of an example's destination that is "one
// of your accounts". Nothing else of an example is changed.
type own map[string]string

// run sends example name of route, as written, for partner p: the path's
// parameters are filled from params, the reader's own objects from ids
// (own). It fails the test unless the answer is a success (2xx, code 0);
// the answer is checked against openapi.yaml too (call).
func (x *referenceExamples) run(p *apptest.Partner, route, name string, params map[string]string, ids own) apptest.Response {
	x.t.Helper()
	body, ok := x.bodies[route][name]
	if !ok {
		x.t.Fatalf("openapi.yaml has no request example %q for %s", name, route)
	}
	if x.ran[route+" "+name] {
		x.t.Fatalf("%s example %q runs twice", route, name)
	}
	x.ran[route+" "+name] = true
	method, path, _ := strings.Cut(route, " ")
	for k, v := range params {
		if !strings.Contains(path, "{"+k+"}") {
			x.t.Fatalf("%s has no parameter {%s}", route, k)
		}
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	if strings.Contains(path, "{") {
		x.t.Fatalf("%s example %q: a parameter left unfilled in %s", route, name, path)
	}
	sent := withOwn(x.t, route+" example "+strconv.Quote(name), body, ids)
	r := call(x.t, x.env, p, method, path, x.signed[route], rawJSON(sent))
	if r.Status >= 300 || r.Code != 0 {
		x.t.Errorf("%s example %q, as written (%s): %s", route, name, sent, r)
	}
	return r
}

// withOwn puts the values of ids at their paths of body. Every token left
// in the example must be one of them: the document's tokens all stand for
// the reader's own objects.
func withOwn(t *testing.T, what string, body []byte, ids own) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	paths := make([]string, 0, len(ids))
	for p := range ids {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var mine []string
	for _, p := range paths {
		var v any = doc
		for _, k := range strings.Split(p, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		s, ok := v.(string)
		if !ok || s == "" {
			t.Fatalf("%s: the example has no %s for the reader's own", what, p)
		}
		old, _ := json.Marshal(s)
		if n := bytes.Count(body, old); n != 1 {
			t.Fatalf("%s: %s is %d times in the example", what, old, n)
		}
		repl, _ := json.Marshal(ids[p])
		body = bytes.Replace(body, old, repl, 1)
		mine = append(mine, ids[p])
	}
	for _, tok := range uuidInExample.FindAll(body, -1) {
		if !slices.Contains(mine, string(tok)) {
			t.Fatalf("%s: the example names the token %s, which stands for the reader's own object: give the test's own", what, tok)
		}
	}
	return body
}

// dataString reads the string at a dotted path of r's data ("token",
// "balances.0.iban"), failing the test when there is none.
func dataString(t *testing.T, what string, r apptest.Response, path string) string {
	t.Helper()
	var v any = r.Data
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(c) {
				v = c[i]
			} else {
				v = nil
			}
		default:
			v = nil
		}
	}
	s, ok := v.(string)
	if !ok || s == "" {
		t.Fatalf("%s: no %s in %s", what, path, r)
	}
	return s
}

// TestEveryReferenceRequestExampleRunsAsWritten: every request example of
// openapi.yaml (the reference at /docs) is sent as written to a sandbox
// set up as `make run` sets it up (its workers running, the sanctions
// lists loaded, webhooks to loopback on EMI_ADDR's port + 1 and 9999 only,
// the demo partner with its endpoint), in the order of a partner's first
// days: a user with their AML check and identification, accounts, money
// in, cards and card payments, money out, a company's application,
// webhooks, then the test clock and the reset. Each answers a success
// (2xx, code 0; no example of the document is titled as showing an
// error), and where a success can hide the outcome the title promises (a
// declined card payment, money gone to suspense) the outcome is checked
// too. A path's parameters ({user}, {card}, {application}, ...) are
// objects the test made just before; a token, IBAN or UK account number
// in a body that stands for the reader's own object is the test's (own).
// Partners paste these examples first: one that fails in the sandbox is
// fixed in openapi.yaml, never special-cased in the server. At the end,
// every example must have run (notRunInASandboxTest lists the exceptions),
// and at least one of every operation with a request body.
func TestEveryReferenceRequestExampleRunsAsWritten(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.SandboxWebhookPorts = []config.PortRange{{From: 8081, To: 8081}, {From: 9999, To: 9999}}
	}})
	startWorkers(t, env)
	x := loadReferenceExamples(t, env)
	// The partner make run creates, with its webhook endpoint.
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Demo Partner", WebhookURL: "http://127.0.0.1:8081/webhooks"})
	tokenOf := func(what string, r apptest.Response) string { t.Helper(); return dataString(t, what, r, "token") }
	expectData := func(what string, r apptest.Response, field, want string) {
		t.Helper()
		if r.Data[field] != want {
			t.Errorf("%s: %s is not %s: %s", what, field, want, r)
		}
	}

	// A person: the user, an AML check, identification.
	user := tokenOf("user", x.run(p, "POST /v2/users", "person", nil, nil))
	x.run(p, "PUT /v2/users/{user}", "move", map[string]string{"user": user}, nil)
	x.run(p, "POST /v1/aml", "person", nil, nil)
	x.run(p, "POST /v1/kyc", "user", nil, own{"user": user})
	x.run(p, "POST /v1/sandbox/kyc/{user}", "approve", map[string]string{"user": user}, nil)
	// A decision needs an open identification: another user's.
	second := createUser(t, env, p, validUser(p))
	apptest.Expect(t, "kyc_init", call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": second}), 0, http.StatusCreated)
	x.run(p, "POST /v1/sandbox/kyc/{user}", "reject", map[string]string{"user": second}, nil)
	for _, name := range x.order["POST /v1/sandbox/aml/{aml}"] {
		// A listed name (a sandbox test value) makes a check with hits to review.
		hit := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody())
		apptest.Expect(t, "an AML check of a listed name", hit, emi.ErrAMLMatchFound.Code, http.StatusConflict)
		x.run(p, "POST /v1/sandbox/aml/{aml}", name, map[string]string{"aml": tokenOf("aml_check", hit)}, nil)
	}

	// Accounts: the user's, a virtual one under it, and a GBP one.
	acc := x.run(p, "POST /v2/accounts", "user", nil, own{"user": user})
	account := tokenOf("account", acc)
	x.run(p, "POST /v2/accounts", "virtual", nil, own{"user": user, "main": account})
	gbp := createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user})
	newAccount := func() string {
		t.Helper()
		return tokenOf("account", createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user}))
	}

	// Money in: to the EUR account by IBAN and by token, to the GBP one by
	// account number and sort code; credited, not gone to suspense.
	in := x.run(p, "POST /v2/sandbox/incoming", "sepa", nil, own{"destination.iban": dataString(t, "account", acc, "balances.0.iban")})
	expectData("sepa", in, "status", "credited")
	in = x.run(p, "POST /v2/sandbox/incoming", "faster_payments", nil, own{
		"destination.account_number": dataString(t, "GBP account", gbp, "balances.0.account_number"),
		"destination.sort_code":      dataString(t, "GBP account", gbp, "balances.0.sort_code")})
	expectData("faster_payments", in, "status", "credited")
	in = x.run(p, "POST /v2/sandbox/incoming", "card", nil, own{"destination.account": account})
	expectData("card top-up", in, "status", "credited")

	// Cards. An account holds one card, so a card gets an account of its
	// own: the plastic one the funded account.
	delivery := map[string]any{"first_name": "Mara", "last_name": "Velikova", "address1": "12 Glavna Str.", "city": "Plovdiv", "zip": "4000", "country": "BG"}
	newCard := func(typ string) string {
		t.Helper()
		r := call(t, env, p, http.MethodPost, "/v2/cards", "card_create", map[string]any{"account": newAccount(), "type": typ, "delivery_details": delivery})
		apptest.Expect(t, "a "+typ+" card with delivery details", r, 0, http.StatusCreated)
		return tokenOf("card", r)
	}
	virtual := tokenOf("card", x.run(p, "POST /v2/cards", "customer_virtual", nil, own{"account": newAccount()}))
	plastic := tokenOf("card", x.run(p, "POST /v2/cards", "customer_plastic", nil, own{"account": account}))
	unassigned := tokenOf("card", x.run(p, "POST /v2/cards", "non_personalized", nil, nil))
	x.run(p, "PUT /v2/cards/{card}/assign", "assign", map[string]string{"card": unassigned}, own{"account": newAccount()})
	x.run(p, "PUT /v2/cards/{card}/convert", "with_delivery", map[string]string{"card": virtual}, nil)
	x.run(p, "PUT /v2/cards/{card}/convert", "from_creation", map[string]string{"card": newCard("virtual")}, nil)
	x.run(p, "PUT /v2/cards/{card}/activate", "plain", map[string]string{"card": plastic}, nil)
	// A clear AML check of the card's holder (the user example's person).
	check := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", map[string]any{"first_name": "Mara", "last_name": "Velikova",
		"nationality": "BG", "birthday": "1990-04-12"})
	apptest.Expect(t, "an AML check of the holder", check, 0, http.StatusCreated)
	x.run(p, "PUT /v2/cards/{card}/activate", "with_aml", map[string]string{"card": newCard("plastic")}, own{"aml": tokenOf("aml_check", check)})
	card := map[string]string{"card": plastic}
	x.run(p, "PUT /v2/cards/{card}/status", "freeze", card, nil)
	x.run(p, "PUT /v2/cards/{card}/status", "unfreeze", card, nil)
	x.run(p, "PUT /v2/cards/{card}/groups", "raise_limits", card, nil)
	x.run(p, "POST /v2/cards/{card}/wallets", "apple_pay", card, nil)
	// 3DS on the card that has none yet.
	x.run(p, "POST /v2/cards/{card}/3ds", "otp_and_biometric", map[string]string{"card": virtual}, nil)
	x.run(p, "PUT /v2/cards/{card}/3ds", "new_number", map[string]string{"card": virtual}, nil)
	x.run(p, "DELETE /v2/cards/{card}/3ds", "otp_sms", map[string]string{"card": virtual}, nil)
	x.run(p, "DELETE /v2/cards/{card}/3ds", "all", map[string]string{"card": virtual}, nil)

	// Card payments with the plastic card: its PIN and 3DS as the example
	// created it, the money from the credits above. Approved, as titled
	// (a declined payment is a success too: 201, code 0).
	var pos string
	for _, name := range x.order["POST /v2/sandbox/cards/{card}/authorizations"] {
		r := x.run(p, "POST /v2/sandbox/cards/{card}/authorizations", name, card, nil)
		expectData("card payment "+name, r, "decision", "approved")
		if name == "pos" {
			pos = tokenOf("authorization", r)
		}
	}
	x.run(p, "POST /v2/sandbox/authorizations/{authorization}/clear", "partial", map[string]string{"authorization": pos}, nil)

	// Money out: to another account in emi, by SEPA, by Faster Payments
	// (the GBP credit above); a payment to Lebanon held for review.
	other := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	r := x.run(p, "POST /v2/transfers", "to_iban", nil, own{"source.account": account, "destination.iban": dataString(t, "account", other, "balances.0.iban")})
	expectData("to_iban", r, "status", "completed")
	sepa := tokenOf("transfer", x.run(p, "POST /v2/transfers/external", "sepa", nil, own{"source.account": account}))
	x.run(p, "POST /v2/transfers/external", "faster_payments", nil, own{"source.account": tokenOf("GBP account", gbp)})
	x.run(p, "POST /v2/sandbox/transfers/{transfer}/return", "closed", map[string]string{"transfer": sepa}, nil)
	held := call(t, env, p, http.MethodPost, "/v2/transfers/external", "transfer_external_create", toLebanon(account, "10.00"))
	apptest.Expect(t, "a payment to Lebanon", held, 0, http.StatusCreated)
	x.run(p, "POST /v2/sandbox/transfers/{transfer}/review", "release", map[string]string{"transfer": tokenOf("transfer", held)}, nil)
	// A question of emi's compliance team, as the back office asks it.
	x.run(p, "POST /v2/information_requests/{information_request}/answer", "answer",
		map[string]string{"information_request": informationRequest(t, env, p, second)}, nil)
	x.run(p, "PUT /v2/accounts/{account}/status", "block", map[string]string{"account": newAccount()}, nil)

	// A company: everything in one call; then one whose company and
	// members follow. Under automatic processing an application with its
	// company and an active owner is decided once its checks end, and
	// then takes no change (11003): the owner comes last.
	everything := tokenOf("application", x.run(p, "POST /v3/applications", "everything", nil, nil))
	waitEvent(t, env, emi.EventApplicationApproved, everything) // as titled
	app := map[string]string{"application": tokenOf("application", x.run(p, "POST /v3/applications", "later", nil, nil))}
	x.run(p, "PUT /v3/applications/{application}/companies", "company", app, nil)
	x.run(p, "POST /v3/applications/{application}/companies/documents", "excerpt", app, nil)
	director := tokenOf("member", x.run(p, "POST /v3/applications/{application}/companies/members", "director", app, nil))
	member := map[string]string{"application": app["application"], "token": director}
	x.run(p, "POST /v3/applications/{application}/companies/members/{token}/documents", "passport", member, nil)
	x.run(p, "PUT /v3/applications/{application}/companies/members/{token}", "address", member, nil)
	x.run(p, "PUT /v3/applications/{application}/companies/members/{token}", "suspend", member, nil)
	x.run(p, "POST /v3/applications/{application}/companies/members", "owner", app, nil)
	// An underwriter decides what automatic processing leaves for review:
	// a company the trade register does not know (a sandbox test value).
	for _, name := range x.order["POST /v3/sandbox/applications/{application}/decision"] {
		body := sandboxApplication(p)
		body["company"].(map[string]any)["uic"] = "100000999"
		a := createApplication(t, env, p, body)
		waitEvent(t, env, emi.EventApplicationInReview, a)
		x.run(p, "POST /v3/sandbox/applications/{application}/decision", name, map[string]string{"application": a}, nil)
	}

	// Webhooks: each example on an endpoint of its own, deleted after it
	// to stay under the endpoint limits; an event to replay is one
	// delivered to the endpoint.
	for _, route := range []string{"POST /v2/webhooks", "PUT /v2/webhooks/{endpoint}", "POST /v2/webhooks/{endpoint}/disable",
		"POST /v2/webhooks/{endpoint}/enable", "POST /v2/webhooks/{endpoint}/rotate", "POST /v2/webhooks/{endpoint}/test",
		"POST /v2/webhooks/{endpoint}/replay", "POST /v2/webhooks/{endpoint}/delete"} {
		for _, name := range x.order[route] {
			endpoint := ""
			var params map[string]string
			if strings.Contains(route, "{endpoint}") {
				cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:8081/webhooks"})
				apptest.Expect(t, "an endpoint for "+route, cr, 0, http.StatusCreated)
				endpoint = tokenOf("endpoint", cr)
				params = map[string]string{"endpoint": endpoint}
			}
			var ids own
			if strings.HasSuffix(route, "/replay") {
				ev := call(t, env, p, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]any{"type": "card.status_changed"})
				apptest.Expect(t, "an event to replay", ev, 0, http.StatusCreated)
				ids = own{"event": dataString(t, "event", ev, "event")}
			}
			r := x.run(p, route, name, params, ids)
			if endpoint == "" && r.Data != nil {
				endpoint, _ = r.Data["token"].(string)
			}
			if endpoint != "" && !strings.HasSuffix(route, "/delete") {
				apptest.Expect(t, "delete the endpoint", call(t, env, p, http.MethodDelete, "/v2/webhooks/"+endpoint, "webhook_endpoint_delete", nil),
					0, http.StatusOK)
			}
		}
	}
	for _, name := range x.order["POST /v2/sandbox/events"] {
		x.run(p, "POST /v2/sandbox/events", name, nil, nil)
	}
	// The webhook examples follow the sandbox's rule, not luck: a port make
	// run does not allow is refused.
	apptest.Expect(t, "a port make run does not allow", call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create",
		map[string]any{"url": "http://127.0.0.1:9998/webhooks"}), emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)

	// The test clock changes its partner's times, so its examples run for
	// a partner of their own, and the clock is deleted after each. The
	// advance ("a week and a day later") follows the clock that starts at
	// a fixed time, a week and a day before it (a clock may start at any
	// time in the years 2000 to 2099, so the fixed dates never expire).
	c := env.NewPartner(t, emi.PartnerCreate{Name: "Clock Partner"})
	deleteClock := func() {
		t.Helper()
		apptest.Expect(t, "delete the clock", call(t, env, c, http.MethodDelete, "/v2/sandbox/test_clock", "sandbox_test_clock_delete", nil), 0, http.StatusOK)
	}
	x.run(c, "POST /v2/sandbox/test_clock", "now", nil, nil)
	deleteClock()
	x.run(c, "POST /v2/sandbox/test_clock", "fixed", nil, nil)
	x.run(c, "POST /v2/sandbox/test_clock/advance", "week", nil, nil)
	deleteClock()

	// Last, the reset empties the sandbox the examples filled.
	x.run(p, "POST /v2/sandbox/reset", "reset", nil, nil)

	routes := make([]string, 0, len(x.bodies))
	for route := range x.bodies {
		routes = append(routes, route)
	}
	sort.Strings(routes)
	for _, route := range routes {
		n := 0
		for _, name := range x.order[route] {
			key := route + " " + name
			why, skipped := notRunInASandboxTest[key]
			switch {
			case x.ran[key] && skipped:
				t.Errorf("%s ran: take it off notRunInASandboxTest (%s)", key, why)
			case !x.ran[key] && !skipped:
				t.Errorf("%s example %q did not run", route, name)
			}
			if x.ran[key] {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no request example of %s (%s) ran", route, x.signed[route])
		}
	}
	for key := range notRunInASandboxTest {
		method, rest, _ := strings.Cut(key, " ")
		path, name, _ := strings.Cut(rest, " ")
		if _, ok := x.bodies[method+" "+path][name]; !ok {
			t.Errorf("notRunInASandboxTest names %q, which is no request example of openapi.yaml", key)
		}
	}
}
