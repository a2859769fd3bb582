package api_test

import (
	"net/http"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// openFunded opens an account of program for a new user of p and credits
// minor units to its first balance; it returns the account and balance
// tokens and the IBAN.
func openFunded(t *testing.T, env *apptest.Env, p *apptest.Partner, program string, minor int64) (acc, bal, ibanOf string) {
	t.Helper()
	user := createUser(t, env, p, validUser(p))
	r := createAccount(t, env, p, map[string]any{"program": program, "user": user})
	b := balancesOf(r)[0]
	acc, bal, ibanOf = r.Data["token"].(string), b["token"].(string), b["iban"].(string)
	if minor > 0 {
		env.Fund(t, acc, bal, b["currency"].(string), minor)
	}
	return acc, bal, ibanOf
}

func available(t *testing.T, env *apptest.Env, p *apptest.Partner, acc string) string {
	t.Helper()
	r := call(t, env, p, http.MethodGet, "/v2/accounts/"+acc, "account_details", nil)
	apptest.Expect(t, "account_details", r, 0, http.StatusOK)
	return balancesOf(r)[0]["available"].(string)
}

func TestTransferInternal(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	srcAcc, srcBal, srcIBAN := openFunded(t, env, p, "account_eur", 10000)
	dstAcc, _, dstIBAN := openFunded(t, env, q, "account_eur", 0)

	r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": srcAcc}, "destination": map[string]any{"iban": dstIBAN},
		"amount": "12.50", "currency": "EUR", "reference": "Invoice 7"})
	apptest.Expect(t, "transfer", r, 0, http.StatusCreated)
	if r.Data["status"] != "completed" || r.Data["amount"] != "12.50" || r.Data["type"] != "internal" {
		t.Fatalf("transfer: %s", r)
	}
	src, dst := r.Data["source"].(map[string]any), r.Data["destination"].(map[string]any)
	if src["account"] != srcAcc || src["balance"] != srcBal || src["iban"] != srcIBAN || dst["account"] != nil || dst["iban"] != dstIBAN {
		t.Fatalf("sides as the sender sees them: %s", r)
	}
	if got := available(t, env, p, srcAcc); got != "87.50" {
		t.Fatalf("source available %s", got)
	}
	if got := available(t, env, q, dstAcc); got != "12.50" {
		t.Fatalf("destination available %s", got)
	}
	tok := r.Data["token"].(string)
	d := call(t, env, q, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil)
	apptest.Expect(t, "details as receiver", d, 0, http.StatusOK)
	if d.Data["source"].(map[string]any)["account"] != nil || d.Data["destination"].(map[string]any)["account"] != dstAcc {
		t.Fatalf("receiver's view: %s", d)
	}
	stranger := env.NewPartner(t, emi.PartnerCreate{Name: "S"})
	apptest.Expect(t, "stranger", call(t, env, stranger, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil), 14002, http.StatusNotFound)

	short := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"balance": srcBal}, "destination": map[string]any{"account": dstAcc},
		"amount": "87.51", "currency": "EUR"})
	apptest.Expect(t, "insufficient", short, 14003, http.StatusConflict)
	if got := available(t, env, p, srcAcc); got != "87.50" {
		t.Fatalf("source after refusal %s", got)
	}
}
