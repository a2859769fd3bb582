package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// bodyRefs says, for every operation whose request names a resource of the
// caller in its body, how S4 checks it: a valid body of partner B's own
// (from B's tokens) and the field to replace with partner A's token.
// An operation with such a field that is missing here fails the test.
var bodyRefs = map[string][]bodyRef{
	"account_create": {
		{"user", func(b *tenant) map[string]any { return map[string]any{"program": "account_eur", "user": b.tok["user"]} }, "user"},
		{"merchant", func(b *tenant) map[string]any {
			return map[string]any{"program": "account_eur", "merchant": b.p.Merchant}
		}, "merchant"},
	},
	"card_create": {
		{"account", func(b *tenant) map[string]any { return map[string]any{"account": b.tok["account"], "type": "virtual"} }, "account"},
	},
	"kyc_init": {
		{"user", func(b *tenant) map[string]any { return map[string]any{"user": b.tok["user"]} }, "user"},
	},
	"user_create": {
		{"merchant", func(b *tenant) map[string]any { return validUser(b.p) }, "merchant"},
	},
	"application_create": {
		{"merchant", func(b *tenant) map[string]any {
			return map[string]any{"merchant": b.p.Merchant, "products": []string{"account-opening"}, "due_diligence": "CDD"}
		}, "merchant"},
	},
	"transfer_create": {
		{"source.account", func(b *tenant) map[string]any {
			return map[string]any{"source": map[string]any{"account": b.tok["account"]}, "destination": map[string]any{"account": b.tok["account"]},
				"amount": "1.00", "currency": "EUR", "reference": "S4"}
		}, "source.account"},
		// Another partner's customer is paid by IBAN; its account token
		// answers as an unknown one (14006).
		{"destination.account", func(b *tenant) map[string]any {
			return map[string]any{"source": map[string]any{"account": b.tok["account"]}, "destination": map[string]any{"account": b.tok["account"]},
				"amount": "1.00", "currency": "EUR", "reference": "S4"}
		}, "destination.account"},
	},
	"transfer_external_create": {
		{"source.account", func(b *tenant) map[string]any { return sepa(b.tok["account"], "1.00") }, "source.account"},
	},
}

type bodyRef struct {
	name  string
	body  func(b *tenant) map[string]any
	field string // dotted path of the field that gets A's token
}

// resourceFields are request fields that name a resource of the caller.
var resourceFields = map[string]bool{"user": true, "account": true, "merchant": true, "main": true, "source": true,
	"card": true, "application": true, "balance": true}

// TestS4EveryResourceOfAnotherPartnerIsNotFound: every route found by
// walking the router, called with partner B's key on partner A's
// resources, answers exactly as for a token that does not exist (contract
// §2), with the resource's not-found code, and changes nothing; list and
// other answers of B never carry a token of A.
func TestS4EveryResourceOfAnotherPartnerIsNotFound(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	a := newTenant(t, env, "Tenant A")
	b := newTenant(t, env, "Tenant B")
	routes := walkAPI(t, env)
	run := newHostileRun(t, env, b.p)
	aTokens := []string{a.p.ID, a.p.Merchant, a.p.KeyID}
	for _, v := range a.tok {
		aTokens = append(aTokens, v)
	}
	checked := 0
	for _, rt := range routes {
		var resourceParams []string
		for _, p := range rt.params {
			if p != "page" && p != "limit" {
				resourceParams = append(resourceParams, p)
			}
		}
		// Every resource in the path, one at a time: A's token and a
		// token that does not exist get the same answer, the not-found
		// code of the resource, and nothing changes.
		for _, param := range resourceParams {
			nf := notFound[param]
			for _, v := range []struct{ what, tok string }{{"partner A's", a.tok[param]}, {"an unknown", kernel.NewToken()}} {
				s := sent{what: "B's key, " + v.what + " {" + param + "}", path: fill(rt.pattern, b.tok, param, v.tok),
					status: http.StatusNotFound, code: nf.Code}
				if rt.body {
					s.body = validBody(rt)
				}
				run.do(rt, s)
			}
			checked++
		}
		// Every resource named in the body.
		var refFields []string
		for name := range rt.props {
			if resourceFields[name] {
				refFields = append(refFields, name)
			}
		}
		sort.Strings(refFields)
		refs, listed := bodyRefs[rt.op]
		if len(refFields) > 0 && !listed && len(resourceParams) == 0 {
			t.Errorf("%s %s (%s) names %v in its body: say in bodyRefs how S4 checks it", rt.method, rt.pattern, rt.op, refFields)
		}
		for _, ref := range refs {
			// The answer for a token that does not exist, first.
			unknown := ref.body(b)
			setPath(unknown, ref.field, kernel.NewToken())
			foreign := ref.body(b)
			setPath(foreign, ref.field, tokenOfA(a, ref.field))
			path := fill(rt.pattern, b.tok, "", "")
			want := run.answer(rt, path, jsonOf(unknown))
			if want.Status < 400 || want.Status >= 500 {
				t.Errorf("%s with an unknown %s: HTTP %d code %d, want a refusal", rt.op, ref.field, want.Status, want.Code)
				continue
			}
			run.do(rt, sent{what: "B's key, partner A's " + ref.field, path: path, body: jsonOf(foreign), status: want.Status, code: want.Code})
			checked++
		}
		// Nothing B reads names anything of A. The GETs without a
		// resource of their own (lists, partner_details) are read as B.
		if rt.method == http.MethodGet && len(resourceParams) == 0 {
			res := run.answer(rt, fill(rt.pattern, b.tok, "", ""), nil)
			// B's sandbox runs on the real time: its test clock is not
			// found, whoever else has one (TestTestClockIsThePartnersOwn).
			ownClockMissing := rt.op == "sandbox_test_clock_details" && res.Code == emi.ErrTestClockNotFound.Code
			if res.Status != http.StatusOK && !ownClockMissing {
				t.Errorf("%s as B: %s", rt.op, res)
			}
			for _, tok := range aTokens {
				if strings.Contains(string(res.Raw), tok) {
					t.Errorf("%s as B shows partner A's %s: %.300s", rt.op, tok, res.Raw)
				}
			}
			checked++
		}
	}
	// sandbox_incoming_credit changes the database for any destination
	// (an unknown identifier goes to suspense), so it is checked here: an
	// identifier of A's customer, named by B, is treated exactly as an
	// unknown one (suspense, reason unknown_identifier) and A's account
	// is not credited. transfer_create's destination is in bodyRefs; B
	// pays A's customer by IBAN only, and B's answer then shows nothing
	// else of A.
	balanceOfA := func() int64 {
		var n int64
		if err := env.App.DB.Get(&n, `SELECT coalesce(sum(posted), 0) FROM balances WHERE account = $1`, a.tok["account"]); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var balOfA, ibanOfA string
	if err := env.App.DB.QueryRow(`SELECT token, coalesce(iban, '') FROM balances WHERE account = $1`, a.tok["account"]).Scan(&balOfA, &ibanOfA); err != nil || ibanOfA == "" {
		t.Fatalf("A's balance %q, IBAN %q (%v)", balOfA, ibanOfA, err)
	}
	posted := balanceOfA()
	for _, dest := range []map[string]any{{"account": a.tok["account"]}, {"account": kernel.NewToken()}} {
		credit := call(t, env, b.p, http.MethodPost, "/v2/sandbox/incoming", "sandbox_incoming_credit", map[string]any{
			"scheme": "card", "amount": "1.00", "currency": "EUR", "payer": map[string]any{"name": "J Smith", "card_last4": "1234"},
			"destination": dest})
		apptest.Expect(t, fmt.Sprintf("incoming credit to %v with B's key", dest), credit, 0, http.StatusCreated)
		var reason string
		if err := env.App.DB.Get(&reason, `SELECT reason FROM suspense_items WHERE token = $1`, credit.Data["suspense_item"]); err != nil ||
			credit.Data["status"] != "suspense" || reason != emi.SuspenseUnknownIdentifier {
			t.Errorf("incoming credit to %v with B's key: %s, suspense reason %q (%v)", dest, credit, reason, err)
		}
	}
	if after := balanceOfA(); after != posted {
		t.Errorf("B's incoming credit reached partner A's account: posted %d -> %d", posted, after)
	}
	pay := call(t, env, b.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": b.tok["account"]}, "destination": map[string]any{"iban": ibanOfA},
		"amount": "1.00", "currency": "EUR", "reference": "S4"})
	apptest.Expect(t, "transfer to partner A's IBAN with B's key", pay, 0, http.StatusCreated)
	for _, tok := range append(aTokens, balOfA) {
		if strings.Contains(string(pay.Raw), tok) {
			t.Errorf("B's transfer to A's customer shows partner A's %s: %s", tok, pay.Raw)
		}
	}
	run.sent += 2
	checked += 2
	// The same lists as A show A's own resources: the check above is not
	// vacuous.
	for _, list := range []struct{ path, op, tok string }{
		{"/v2/accounts/1/10", "accounts_list", "account"}, {"/v2/cards/1/10", "cards_list", "card"},
	} {
		res := call(t, env, a.p, http.MethodGet, list.path, list.op, nil)
		if !strings.Contains(string(res.Raw), a.tok[list.tok]) {
			t.Errorf("%s as A does not show A's own %s: the cross-partner check is vacuous", list.op, list.tok)
		}
	}
	t.Logf("S4: %d routes, %d checks, %d requests, %d wrong answers", len(routes), checked, run.sent, run.fails)
}

// answer sends one request signed by r.p and returns the decoded answer,
// checked against openapi.yaml.
func (r *hostileRun) answer(rt apiRoute, path string, body []byte) apptest.Response {
	r.t.Helper()
	r.sent++
	if body == nil {
		return call(r.t, r.env, r.p, rt.method, path, rt.op, nil)
	}
	return call(r.t, r.env, r.p, rt.method, path, rt.op, rawJSON(body))
}

// rawJSON lets call send bytes as they are.
type rawJSON []byte

func (j rawJSON) MarshalJSON() ([]byte, error) {
	if j == nil {
		return []byte("null"), nil
	}
	return j, nil
}

// setPath sets a dotted field of a body.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	m[parts[len(parts)-1]] = v
}

// tokenOfA is A's token for a body field.
func tokenOfA(a *tenant, field string) string {
	last := field[strings.LastIndex(field, ".")+1:]
	if last == "merchant" {
		return a.p.Merchant
	}
	return a.tok[last]
}
