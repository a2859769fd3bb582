package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestUnknownQueryParametersAreRefusedEverywhere: one rule on every
// operation (walked from the router): a query parameter the reference does
// not document for it answers 400 with the operation's validation code,
// naming the parameter, before the operation runs (a typo in a filter
// never returns everything). A documented one still works.
func TestUnknownQueryParametersAreRefusedEverywhere(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	tn := newTenant(t, env, "Query rule")
	routes := walkAPI(t, env)
	if len(routes) < 60 {
		t.Fatalf("walked %d routes", len(routes))
	}
	for _, rt := range routes {
		path := rt.pattern
		for _, p := range rt.params {
			tok := tn.tok[p]
			switch p {
			case "page":
				tok = "1"
			case "limit":
				tok = "10"
			}
			if tok == "" {
				tok = "00000000-0000-7000-8000-000000000000"
			}
			path = strings.ReplaceAll(path, "{"+p+"}", tok)
		}
		var body any
		if rt.body {
			body = map[string]any{}
		}
		r := call(t, env, tn.p, rt.method, path+"?zz_unknown=1", rt.op, body)
		name := rt.method + " " + rt.pattern
		if r.Status == http.StatusNotFound && r.Code == emi.ErrRouteNotFound.Code {
			continue // sandbox-only routes are all mounted here; none should be
		}
		if r.Status != http.StatusBadRequest || r.Code != rt.invalid.Code {
			t.Errorf("%s?zz_unknown=1: %s, want 400 / %d", name, r, rt.invalid.Code)
			continue
		}
		if !slices.ContainsFunc(r.Errors, func(e emi.FieldError) bool { return e.Field == "zz_unknown" }) {
			t.Errorf("%s: errors %v do not name zz_unknown", name, r.Errors)
		}
	}
	apptest.Expect(t, "a documented filter", call(t, env, tn.p, http.MethodGet, "/v2/events/1/10?type=transfer.completed", "events_list", nil),
		0, http.StatusOK)
	apptest.Expect(t, "no query at all", call(t, env, tn.p, http.MethodGet, "/v2/partner", "partner_details", nil), 0, http.StatusOK)
}
