package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/web/api"
)

// recordTB records a Fatalf instead of stopping the test, to check that a
// checker really fails.
type recordTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

func TestOpenAPIValidationCatchesDrift(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	req := p.HTTPRequest(t, partnerDetails())
	good := `{"code":0,"data":{"partner":"` + p.ID + `","name":"n","merchant":"` + p.Merchant +
		`","processing":"automatic","api_key_id":"` + p.KeyID + `"}}`
	cases := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"the real shape passes", 200, good, true},
		{"an error envelope passes", 401, `{"code":10001,"message":"services.auth.invalid"}`, true},
		{"an undocumented field fails", 200, strings.Replace(good, `"name":"n"`, `"name":"n","pan":"4111111111111111"`, 1), false},
		{"a missing field fails", 200, strings.Replace(good, `"name":"n",`, ``, 1), false},
		{"a wrong enum value fails", 200, strings.Replace(good, `automatic`, `manual`, 1), false},
		{"an error with code 0 fails", 400, `{"code":0,"message":"x"}`, false},
		{"an error without message fails", 404, `{"code":10004}`, false},
		{"an undocumented status fails", 418, `{"code":1,"message":"teapot"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
				Body: io.NopCloser(strings.NewReader(c.body)), Request: req}
			rec := &recordTB{TB: t}
			env.CheckOpenAPI(rec, req, res, []byte(c.body))
			if rec.failed == c.ok {
				t.Fatalf("CheckOpenAPI failed=%v, want %v (%s)", rec.failed, !c.ok, rec.msg)
			}
		})
	}
}

func TestErrorCatalogueIsConsistentAndDocumented(t *testing.T) {
	t.Parallel()
	doc := string(api.OpenAPI)
	seen := map[string]bool{}
	keysByCode := map[int]map[string]bool{}
	for _, e := range emi.Catalogue() {
		id := strconv.Itoa(e.Code) + " " + e.Key
		if seen[id] {
			t.Errorf("catalogue lists %s twice", id)
		}
		seen[id] = true
		if keysByCode[e.Code] == nil {
			keysByCode[e.Code] = map[string]bool{}
		}
		keysByCode[e.Code][e.Key] = true
		if e.Code == 0 || e.Key == "" || !strings.Contains(e.Key, ".") {
			t.Errorf("%s: a catalogue error needs a non-zero code and a dotted key", id)
		}
		if !strings.Contains(doc, e.Key) {
			t.Errorf("openapi.yaml does not document %s", id)
		}
	}
	for code, keys := range keysByCode {
		// Only the seed's 11002 names several things (application, member, user).
		if len(keys) > 1 && code != 11002 {
			t.Errorf("code %d has several keys %v", code, keys)
		}
	}
}

// documentedOperation is one operation of openapi.yaml.
type documentedOperation struct {
	method, path string
	// name is what the partner signs: x-emi-operation.
	name string
	op   *v3.Operation
}

func openAPIModel(t *testing.T) *v3.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	return &m.Model
}

func documentedOperations(t *testing.T, m *v3.Document) []documentedOperation {
	t.Helper()
	var out []documentedOperation
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			// Every operation says the name it is signed with, where a
			// generated client finds it (x-emi-operation; /docs prints it
			// once, so the description does not repeat it).
			name := ""
			if x := op.Extensions.GetOrZero("x-emi-operation"); x != nil {
				name = x.Value
			}
			if name == "" {
				t.Errorf("%s %s: no x-emi-operation", method, path)
				name = op.OperationId
			}
			if x := op.Extensions.GetOrZero("x-operation"); x != nil && x.Value != name {
				t.Errorf("%s %s: x-operation %q and x-emi-operation %q disagree", method, path, x.Value, name)
			}
			out = append(out, documentedOperation{method: strings.ToUpper(method), path: path, name: name, op: op})
		}
	}
	return out
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// samplePath fills a path template: pages and limits with 1, tokens with a
// fresh token.
func samplePath(template string) string {
	return pathParam.ReplaceAllStringFunc(template, func(p string) string {
		if p == "{page}" || p == "{limit}" {
			return "1"
		}
		return kernel.NewToken()
	})
}

// TestEveryOperationIsDocumentedUnderItsSignedName: every route is in
// openapi.yaml and every documented operation is routed, and the name the
// document gives (x-operation, else operationId) is the one the server
// checks signatures with.
func TestEveryOperationIsDocumentedUnderItsSignedName(t *testing.T) {
	t.Parallel()
	ops := documentedOperations(t, openAPIModel(t))
	documented := map[string]bool{}
	for _, o := range ops {
		documented[o.method+" "+o.path] = true
	}
	r := chi.NewRouter()
	api.New(api.Deps{}).Routes(r)
	routed := map[string]bool{}
	_ = chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed[method+" "+route] = true
		if !documented[method+" "+route] {
			t.Errorf("%s %s is routed but not documented in openapi.yaml", method, route)
		}
		return nil
	})
	for k := range documented {
		if !routed[k] {
			t.Errorf("%s is documented but not routed", k)
		}
	}

	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{})
	for _, o := range ops {
		rq := apptest.Request{Method: o.method, Path: samplePath(o.path), Operation: o.name}
		if o.method == http.MethodPost || o.method == http.MethodPut {
			rq.Body = []byte("{}")
		}
		env.Clock.Advance(time.Second)
		res := p.Do(t, rq) // the answer is checked against openapi.yaml too
		if res.Status == http.StatusUnauthorized {
			t.Errorf("%s %s signed as %q: %s", o.method, o.path, o.name, res)
		}
	}
}

// TestOpenAPIExamplesMatchTheirSchemas checks that openapi.yaml is a valid
// OpenAPI document and every request and response example in it matches the
// schema it illustrates.
func TestOpenAPIExamplesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	doc, err := libopenapi.NewDocument(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %s", validationErrors(errs))
	}
	m := openAPIModel(t)
	checked := 0
	for _, o := range documentedOperations(t, m) {
		path := samplePath(o.path)
		newRequest := func(body []byte) *http.Request {
			var rd io.Reader = http.NoBody
			if body != nil {
				rd = bytes.NewReader(body)
			}
			req := httptest.NewRequest(o.method, "http://localhost:8080"+path, rd)
			req.Header.Set("Content-Type", "application/json")
			for _, h := range []string{"x-api-key", "x-timestamp", "x-hash"} {
				req.Header.Set(h, "1")
			}
			return req
		}
		if o.op.RequestBody != nil {
			if mt := o.op.RequestBody.Content.GetOrZero("application/json"); mt != nil && mt.Examples != nil {
				for name, ex := range mt.Examples.FromOldest() {
					if ex.Value == nil {
						t.Fatalf("%s %s request example %s has no value", o.method, o.path, name)
					}
					body := exampleJSON(t, ex.Value)
					if ok, errs := v.ValidateHttpRequest(newRequest(body)); !ok {
						t.Errorf("%s %s request example %s: %s", o.method, o.path, name, validationErrors(errs))
					}
					checked++
				}
			}
		}
		for status, resp := range o.op.Responses.Codes.FromOldest() {
			mt := resp.Content.GetOrZero("application/json")
			if mt == nil || mt.Examples == nil {
				continue
			}
			code, _ := strconv.Atoi(status)
			for name, ex := range mt.Examples.FromOldest() {
				if ex.Value == nil {
					t.Fatalf("%s %s %s example %s has no value", o.method, o.path, status, name)
				}
				body := exampleJSON(t, ex.Value)
				res := &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
					Body: io.NopCloser(bytes.NewReader(body))}
				if ok, errs := v.ValidateHttpResponse(newRequest(nil), res); !ok {
					t.Errorf("%s %s %s example %s: %s", o.method, o.path, status, name, validationErrors(errs))
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no example checked")
	}
}

// exampleJSON turns an example's YAML value into JSON.
func exampleJSON(t *testing.T, node interface{ Decode(any) error }) []byte {
	t.Helper()
	var v any
	if err := node.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validationErrors(errs []*verrors.ValidationError) string {
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error()+": "+e.Reason)
		for _, se := range e.SchemaValidationErrors {
			msgs = append(msgs, se.Reason+" at "+se.FieldPath)
		}
	}
	return strings.Join(msgs, "; ")
}

// TestOpenAPIDocumentsEveryCardAnswer runs every card operation through
// its answers, each checked against openapi.yaml by the partner client:
// the card shapes (virtual, plastic, non-personalized, with wallets,
// terminated), the reveals, the PIN text, the wallet payload and the card
// error codes.
func TestOpenAPIDocumentsEveryCardAnswer(t *testing.T) {
	t.Parallel()
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(gateway.Close)
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	account := func() string {
		return createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)
	}
	expect := func(what string, r apptest.Response, code, status int) apptest.Response {
		t.Helper()
		apptest.Expect(t, what, r, code, status)
		return r
	}
	cardOp := func(method, card, suffix, op string, body any) apptest.Response {
		t.Helper()
		return call(t, env, p, method, "/v2/cards/"+card+suffix, op, body)
	}
	delivery := map[string]any{"first_name": "Mara", "last_name": "Velikova", "address1": "12 Glavna Str.", "city": "Plovdiv",
		"zip": "4000", "country": "BG", "phone": "+359 888 123 456"}

	acc := account()
	v := expect("create virtual", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": acc, "type": "virtual", "alias": "everyday"}), 0, http.StatusCreated).Data["token"].(string)
	expect("second card of the account", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": acc, "type": "virtual"}), 12004, http.StatusConflict)
	expect("unknown field", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": acc, "type": "virtual", "colour": "red"}), 12001, http.StatusBadRequest)
	expect("plastic without delivery", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": account(), "type": "plastic"}), 12007, http.StatusBadRequest)
	expect("unusable account", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": kernel.NewToken(), "type": "virtual"}), 12003, http.StatusConflict)
	expect("program mismatch", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"program": "account_multi", "type": "virtual"}), 12008, http.StatusConflict)

	expect("details", cardOp(http.MethodGet, v, "", "card_details", nil), 0, http.StatusOK)
	expect("unknown card", cardOp(http.MethodGet, kernel.NewToken(), "", "card_details", nil), 12002, http.StatusNotFound)
	list := expect("list", call(t, env, p, http.MethodGet, "/v2/cards/1/100?user="+user, "cards_list", nil), 0, http.StatusOK)
	if list.Data["total"].(float64) != 1 {
		t.Fatalf("list: %s", list)
	}
	expect("list limit", call(t, env, p, http.MethodGet, "/v2/cards/1/101", "cards_list", nil), 12001, http.StatusBadRequest)
	expect("list filter", call(t, env, p, http.MethodGet, "/v2/cards/1/10?colour=red", "cards_list", nil), 12001, http.StatusBadRequest)

	first := expect("first half", cardOp(http.MethodGet, v, "/first-half", "card_number", nil), 0, http.StatusOK)
	second := expect("second half", cardOp(http.MethodGet, v, "/second-half", "card_number", nil), 0, http.StatusOK)
	if pan := first.Data["first_half"].(string) + second.Data["second_half"].(string); !cards.LuhnValid(pan) {
		t.Fatalf("halves %s %s", first, second)
	}
	expect("pin", cardOp(http.MethodGet, v, "/pin", "card_retrieve_pin", nil), 0, http.StatusOK)

	expect("groups", cardOp(http.MethodPut, v, "/groups", "card_groups", map[string]any{"limits": "limits_high", "mcc": ""}), 0, http.StatusOK)
	expect("group not in program", cardOp(http.MethodPut, v, "/groups", "card_groups", map[string]any{"limits": "not_in_program"}),
		12006, http.StatusConflict)
	expect("freeze", cardOp(http.MethodPut, v, "/status", "card_status", map[string]any{"status": "inactive"}), 0, http.StatusOK)
	expect("unfreeze", cardOp(http.MethodPut, v, "/status", "card_status", map[string]any{"status": "active"}), 0, http.StatusOK)
	expect("3ds without a method", cardOp(http.MethodPost, v, "/3ds", "card_3ds_enrol", map[string]any{}), 12010, http.StatusConflict)
	expect("3ds update before enrolment", cardOp(http.MethodPut, v, "/3ds", "card_3ds_update", map[string]any{"otp_sms": "+359888123456"}),
		12005, http.StatusConflict)
	expect("3ds enrol", cardOp(http.MethodPost, v, "/3ds", "card_3ds_enrol", map[string]any{"biometric": true}), 0, http.StatusOK)
	expect("3ds update", cardOp(http.MethodPut, v, "/3ds", "card_3ds_update", map[string]any{"otp_sms": "+359888123456"}), 0, http.StatusOK)
	expect("3ds remove", cardOp(http.MethodDelete, v, "/3ds", "card_3ds_remove", map[string]any{"type": "biometric"}), 0, http.StatusOK)
	expect("3ds remove type", cardOp(http.MethodDelete, v, "/3ds", "card_3ds_remove", map[string]any{"type": "face"}), 12001, http.StatusBadRequest)
	expect("reset pin", cardOp(http.MethodDelete, v, "/pin/reset", "card_reset_pin", nil), 0, http.StatusOK)
	sent := expect("send pin", cardOp(http.MethodPost, v, "/pin/send", "card_send_pin", nil), 0, http.StatusOK)
	if sent.Data["to"] != "+35*******456" {
		t.Fatalf("send pin: %s", sent)
	}
	expect("wallet", cardOp(http.MethodPost, v, "/wallets", "card_wallet_provision",
		map[string]any{"wallet": "apple_pay", "device_name": "Mara's iPhone"}), 0, http.StatusCreated)
	if w := expect("details with wallet", cardOp(http.MethodGet, v, "", "card_details", nil), 0, http.StatusOK).Data["wallets"].([]any); len(w) != 1 {
		t.Fatalf("wallets: %v", w)
	}
	expect("wallet name", cardOp(http.MethodPost, v, "/wallets", "card_wallet_provision", map[string]any{"wallet": "samsung_pay"}),
		12001, http.StatusBadRequest)
	expect("activate a virtual card", cardOp(http.MethodPut, v, "/activate", "card_activate", nil), 12005, http.StatusConflict)
	expect("convert", cardOp(http.MethodPut, v, "/convert", "card_convert", map[string]any{"delivery_details": delivery}), 0, http.StatusOK)
	expect("convert twice", cardOp(http.MethodPut, v, "/convert", "card_convert", nil), 12005, http.StatusConflict)
	expect("terminate", cardOp(http.MethodDelete, v, "", "card_terminate", nil), 0, http.StatusOK)
	expect("terminate twice", cardOp(http.MethodDelete, v, "", "card_terminate", nil), 12005, http.StatusConflict)
	expect("pin of a terminated card", cardOp(http.MethodGet, v, "/pin", "card_retrieve_pin", nil), 12005, http.StatusConflict)
	expect("cvv of a terminated card", cardOp(http.MethodGet, v, "/first-half", "card_number", nil), 12005, http.StatusConflict)

	plastic := expect("create plastic", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": account(), "type": "plastic", "delivery_details": delivery, "pin": "4821"}), 0, http.StatusCreated)
	if plastic.Data["activated"] != false {
		t.Fatalf("plastic: %s", plastic)
	}
	pc := plastic.Data["token"].(string)
	expect("activate", cardOp(http.MethodPut, pc, "/activate", "card_activate", map[string]any{}), 0, http.StatusOK)
	for i := 0; i < 4; i++ {
		expect("send pin", cardOp(http.MethodPost, pc, "/pin/send", "card_send_pin", nil), 0, http.StatusOK)
	}
	expect("fifth text", cardOp(http.MethodPost, pc, "/pin/send", "card_send_pin", nil), 0, http.StatusOK)
	expect("six texts in a day", cardOp(http.MethodPost, pc, "/pin/send", "card_send_pin", nil), 10029, http.StatusTooManyRequests)

	np := expect("create non-personalized", call(t, env, p, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"program": "card_eur", "type": "virtual"}), 0, http.StatusCreated).Data["token"].(string)
	expect("wallet without account", cardOp(http.MethodPost, np, "/wallets", "card_wallet_provision", map[string]any{"wallet": "google_pay"}),
		12005, http.StatusConflict)
	expect("no mobile", cardOp(http.MethodPost, np, "/pin/send", "card_send_pin", nil), 12010, http.StatusConflict)
	expect("assign without account", cardOp(http.MethodPut, np, "/assign", "card_assign", map[string]any{}), 12001, http.StatusBadRequest)
	expect("assign", cardOp(http.MethodPut, np, "/assign", "card_assign", map[string]any{"account": account()}), 0, http.StatusOK)
	expect("assign twice", cardOp(http.MethodPut, np, "/assign", "card_assign", map[string]any{"account": account()}), 12005, http.StatusConflict)

	t.Run("the SMS gateway refuses the text", func(t *testing.T) {
		down := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.SMSURL = gateway.URL }})
		q := down.NewPartner(t, emi.PartnerCreate{Name: "Q"})
		u := createUser(t, down, q, validUser(q))
		a := createAccount(t, down, q, map[string]any{"program": "account_eur", "user": u}).Data["token"].(string)
		c := call(t, down, q, http.MethodPost, "/v2/cards", "card_create", map[string]any{"account": a, "type": "virtual",
			"three_ds": map[string]any{"otp_sms": "+359888123456"}})
		apptest.Expect(t, "create", c, 0, http.StatusCreated)
		r := call(t, down, q, http.MethodPost, "/v2/cards/"+c.Data["token"].(string)+"/pin/send", "card_send_pin", nil)
		apptest.Expect(t, "gateway down", r, 12011, http.StatusServiceUnavailable)
	})
}

// TestEveryErrorHasADescriptionAndADocURL: every catalogue error the API
// can answer has a human description, and an answer carries it with a
// doc_url into /docs/errors under EMI_PUBLIC_URL, beside the unchanged code
// and message (the old envelope had neither).
func TestEveryErrorHasADescriptionAndADocURL(t *testing.T) {
	t.Parallel()
	for _, e := range emi.Catalogue() {
		if d := e.Description(); len(d) < 20 || !strings.HasSuffix(d, ".") {
			t.Errorf("%d %s: description %q is missing or not a sentence", e.Code, e.Key, d)
		}
	}
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{})
	for _, c := range []struct {
		rq  apptest.Request
		err *emi.Error
	}{
		{apptest.Request{Method: http.MethodGet, Path: "/v2/cards/" + kernel.NewToken(), Operation: "card_details"}, emi.ErrCardNotFound},
		{apptest.Request{Method: http.MethodPost, Path: "/v2/cards", Operation: "card_create", Body: []byte(`{"colour":"red"}`)}, emi.ErrCardValidation},
		{apptest.Request{Method: http.MethodGet, Path: "/v2/partner", NoAuth: true}, emi.ErrAuthInvalid},
		{apptest.Request{Method: http.MethodGet, Path: "/v2/nowhere", NoAuth: true, SkipOpenAPI: true}, emi.ErrRouteNotFound},
		{apptest.Request{Method: http.MethodPost, Path: "/v2/partner", NoAuth: true, SkipOpenAPI: true}, emi.ErrMethodNotAllowed},
	} {
		env.Clock.Advance(time.Second)
		r := p.Do(t, c.rq)
		var body struct {
			Code        int    `json:"code"`
			Message     string `json:"message"`
			Description string `json:"description"`
			DocURL      string `json:"doc_url"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		if body.Code != c.err.Code || body.Message != c.err.Key || body.Description != c.err.Description() ||
			body.DocURL != env.Config.PublicURL+"/docs/errors#"+c.err.Key {
			t.Errorf("%s %s: %s", c.rq.Method, c.rq.Path, r.Raw)
		}
	}
}
