package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// authorizationEvent returns the data of the partner's event of typ about
// the authorization, failing when there is not exactly one.
func authorizationEvent(t *testing.T, env *apptest.Env, typ emi.EventType, auth string) map[string]any {
	t.Helper()
	var bodies [][]byte
	if err := env.App.DB.Select(&bodies, `SELECT body FROM events WHERE type = $1 AND resource_token = $2`, typ, auth); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d %s events for %s, want 1", len(bodies), typ, auth)
	}
	var ev struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(bodies[0], &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Data
}

// TestCardPaymentEventsAndBalanceFigures: each card payment decision
// (approved or declined), clearing and reversal raises its event in the
// same transaction, and account_details shows the balance's current
// (ledger) and held figures beside available. On the old code no event was
// written and balances had available only.
func TestCardPaymentEventsAndBalanceFigures(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Card events"})
	c := newPayCard(t, env, p, "account_eur", 100000, nil) // 1000.00

	balance := func(what string, current, held, available string) {
		t.Helper()
		d := call(t, env, p, http.MethodGet, "/v2/accounts/"+c.acc, "account_details", nil)
		apptest.Expect(t, what, d, 0, http.StatusOK)
		b := d.Data["balances"].([]any)[0].(map[string]any)
		if b["current"] != current || b["held"] != held || b["available"] != available {
			t.Fatalf("%s: current %v held %v available %v, want %s %s %s", what, b["current"], b["held"], b["available"], current, held, available)
		}
	}
	balance("funded", "1000.00", "0.00", "1000.00")

	a1 := c.decide(t, "approved", pos("40.00"), emi.ReasonApproved).Data["token"].(string)
	ev := authorizationEvent(t, env, emi.EventAuthorizationDecided, a1)
	if ev["authorization"] != a1 || ev["card"] != c.card || ev["status"] != "approved" || ev["amount"] != "40.00" || ev["held"] != "40.00" {
		t.Fatalf("authorization.decided: %v", ev)
	}
	balance("held", "1000.00", "40.00", "960.00")

	bad := pos("5.00")
	bad["pin"] = "0000"
	d := c.decide(t, "declined", bad, emi.ReasonIncorrectPIN).Data["token"].(string)
	if ev := authorizationEvent(t, env, emi.EventAuthorizationDecided, d); ev["status"] != "declined" || ev["reason_code"] != emi.ReasonIncorrectPIN {
		t.Fatalf("a decline's event: %v", ev)
	}

	r := call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+a1+"/clear", "sandbox_authorization_clear", map[string]any{"amount": "30.00"})
	apptest.Expect(t, "clear", r, 0, http.StatusOK)
	if ev := authorizationEvent(t, env, emi.EventAuthorizationCleared, a1); ev["status"] != "cleared" || ev["cleared"] != "30.00" {
		t.Fatalf("authorization.cleared: %v", ev)
	}
	balance("cleared", "970.00", "0.00", "970.00")

	a2 := c.decide(t, "approved again", pos("20.00"), emi.ReasonApproved).Data["token"].(string)
	r = call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+a2+"/reverse", "sandbox_authorization_reverse", nil)
	apptest.Expect(t, "reverse", r, 0, http.StatusOK)
	if ev := authorizationEvent(t, env, emi.EventAuthorizationReversed, a2); ev["status"] != "released" {
		t.Fatalf("authorization.reversed: %v", ev)
	}
	balance("reversed", "970.00", "0.00", "970.00")

	// The events reach the partner's events_list, documented shapes.
	l := call(t, env, p, http.MethodGet, "/v2/events/1/100?type=authorization.decided", "events_list", nil)
	apptest.Expect(t, "events_list", l, 0, http.StatusOK)
	if n := len(l.Data["items"].([]any)); n != 3 {
		t.Fatalf("events_list: %d authorization.decided events, want 3", n)
	}
}
