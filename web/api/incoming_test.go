package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// moneyEnv starts an application and checks the ledger when the test ends:
// every transaction sums to zero per currency and every balance's posted
// figure is the sum of its entries.
func moneyEnv(t *testing.T, opts apptest.Options) *apptest.Env {
	t.Helper()
	env := apptest.New(t, opts)
	t.Cleanup(func() { ledgerBalanced(t, env) })
	return env
}

// ledgerBalanced checks the ledger's invariants (checkLedger, which ends
// with the product's own verification).
func ledgerBalanced(t *testing.T, env *apptest.Env) {
	t.Helper()
	checkLedger(t, env)
}

// incoming sends sandbox_incoming_credit.
func incoming(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) apptest.Response {
	t.Helper()
	return call(t, env, p, http.MethodPost, "/v2/sandbox/incoming", "sandbox_incoming_credit", body)
}

func sepaCredit(amount, iban string) map[string]any {
	return map[string]any{"scheme": "sepa", "amount": amount, "currency": "EUR", "reference": "Invoice 7",
		"payer": map[string]any{"name": "Acme GmbH", "iban": "DE89 3704 0044 0532 0130 00"}, "destination": map[string]any{"iban": iban}}
}

// suspenseReason reads an item's reason and status.
func suspenseReason(t *testing.T, env *apptest.Env, token string) (reason, status string) {
	t.Helper()
	var row struct {
		Reason string `db:"reason"`
		Status string `db:"status"`
	}
	if err := env.App.DB.Get(&row, `SELECT reason, status FROM suspense_items WHERE token = $1`, token); err != nil {
		t.Fatalf("suspense item %s: %v", token, err)
	}
	return row.Reason, row.Status
}

// internalPosition is the sum of an internal ledger account's entries.
func TestSandboxIncomingSEPA(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, bal, iban := openFunded(t, env, p, "account_eur", 0)
	spaced := strings.ToLower(iban[:4] + " " + iban[4:])

	r := incoming(t, env, p, sepaCredit("250.00", spaced))
	apptest.Expect(t, "sepa", r, 0, http.StatusCreated)
	if r.Data["status"] != "credited" || r.Data["suspense_item"] != nil {
		t.Fatalf("sepa: %s", r)
	}
	tr := r.Data["transfer"].(map[string]any)
	src, dst := tr["source"].(map[string]any), tr["destination"].(map[string]any)
	if tr["type"] != "incoming" || tr["status"] != "completed" || tr["amount"] != "250.00" || tr["currency"] != "EUR" ||
		tr["reference"] != "Invoice 7" || dst["account"] != acc || dst["balance"] != bal || dst["iban"] != iban ||
		src["name"] != "Acme GmbH" || src["iban"] != "DE89370400440532013000" || src["scheme"] != "sepa" || src["account"] != nil {
		t.Fatalf("transfer: %s", r)
	}
	if got := available(t, env, p, acc); got != "250.00" {
		t.Fatalf("available %s", got)
	}
	d := call(t, env, p, http.MethodGet, "/v2/transfers/"+tr["token"].(string), "transfer_details", nil)
	apptest.Expect(t, "details", d, 0, http.StatusOK)
	if d.Data["source"].(map[string]any)["name"] != "Acme GmbH" {
		t.Fatalf("details: %s", d)
	}
	// The ledger: incoming clearing -> the customer, kind incoming.
	var kinds []string
	if err := env.App.DB.Select(&kinds, `SELECT t.kind FROM ledger_transactions t JOIN transfers x ON x.txn = t.id WHERE x.token = $1`,
		tr["token"]); err != nil || len(kinds) != 1 || kinds[0] != emi.TxnIncoming {
		t.Fatalf("ledger kind %v %v", kinds, err)
	}
	if got := internalPosition(t, env, emi.LedgerIncomingClearing, "EUR"); got != -25000 {
		t.Fatalf("incoming clearing %d", got)
	}
	// The receiving partner is told, with the payer.
	ev := listEvents(t, env, p, "/v2/events/1/10?type=transfer.completed")
	apptest.Expect(t, "events", ev, 0, http.StatusOK)
	items := ev.Data["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("events: %s", ev)
	}
	data := items[0].(map[string]any)["data"].(map[string]any)
	cp, _ := data["counterparty"].(map[string]any)
	if data["transfer"] != tr["token"] || data["type"] != "incoming" || data["destination_account"] != acc ||
		data["destination_balance"] != bal || cp["name"] != "Acme GmbH" || cp["scheme"] != "sepa" {
		t.Fatalf("event: %v", data)
	}
	// A retry with the same Idempotency-Key replays the answer: the money
	// arrives once.
	for i := range 2 {
		env.Clock.Advance(time.Second)
		rq := apptest.Request{Method: http.MethodPost, Path: "/v2/sandbox/incoming", Operation: "sandbox_incoming_credit",
			JSON: sepaCredit("1.00", iban), Header: map[string]string{"Idempotency-Key": "incoming-1"}}
		r := p.Do(t, rq)
		apptest.Expect(t, "idempotent credit", r, 0, http.StatusCreated)
		if (i == 1) != (r.Header.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("attempt %d: Idempotent-Replayed %q", i, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if got := available(t, env, p, acc); got != "251.00" {
		t.Fatalf("available after a retried credit %s", got)
	}
	// Audited.
	var audits int
	if err := env.App.DB.Get(&audits, `SELECT count(*) FROM audit_log WHERE action = 'incoming.credit' AND resource_token = $1`,
		tr["token"]); err != nil || audits != 1 {
		t.Fatalf("audit rows %d %v", audits, err)
	}
}

func TestSandboxIncomingVirtualIBAN(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainTok, mainBal := main.Data["token"].(string), balancesOf(main)[0]["token"].(string)
	v := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainTok})
	vTok, vIBAN := v.Data["token"].(string), balancesOf(v)[0]["iban"].(string)

	r := incoming(t, env, p, sepaCredit("10.00", vIBAN))
	apptest.Expect(t, "to the virtual IBAN", r, 0, http.StatusCreated)
	dst := r.Data["transfer"].(map[string]any)["destination"].(map[string]any)
	if dst["account"] != vTok || dst["balance"] != mainBal || dst["iban"] != vIBAN {
		t.Fatalf("destination: %s", r)
	}
	if got := available(t, env, p, mainTok); got != "10.00" {
		t.Fatalf("main available %s", got)
	}
	var shownOn string
	if err := env.App.DB.Get(&shownOn, `SELECT account::text FROM ledger_entries WHERE balance = $1`, mainBal); err != nil || shownOn != vTok {
		t.Fatalf("the entry shows on %q (%v), want the virtual account", shownOn, err)
	}
}

func TestSandboxIncomingFasterPayments(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	gbp := createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user})
	acc, b := gbp.Data["token"].(string), balancesOf(gbp)[0]
	number, sort, gbIBAN := b["account_number"].(string), b["sort_code"].(string), b["iban"].(string)
	fps := func(amount string, dest map[string]any) map[string]any {
		return map[string]any{"scheme": "faster_payments", "amount": amount, "currency": "GBP",
			"payer": map[string]any{"name": "J Smith", "account_number": "31926819", "sort_code": "60-16-13"}, "destination": dest}
	}

	r := incoming(t, env, p, fps("40.00", map[string]any{"account_number": number, "sort_code": sort[:2] + "-" + sort[2:4] + "-" + sort[4:]}))
	apptest.Expect(t, "by account number", r, 0, http.StatusCreated)
	src := r.Data["transfer"].(map[string]any)["source"].(map[string]any)
	if r.Data["status"] != "credited" || src["account_number"] != "31926819" || src["sort_code"] != "601613" || src["scheme"] != "faster_payments" {
		t.Fatalf("fps: %s", r)
	}
	apptest.Expect(t, "by GB IBAN", incoming(t, env, p, fps("2.50", map[string]any{"iban": gbIBAN})), 0, http.StatusCreated)
	if got := available(t, env, p, acc); got != "42.50" {
		t.Fatalf("available %s", got)
	}

	// A virtual GBP account is found by its own account number and sort code.
	v := createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user, "main": acc})
	vTok, vIBAN := v.Data["token"].(string), balancesOf(v)[0]["iban"].(string)
	r = incoming(t, env, p, fps("1.00", map[string]any{"account_number": vIBAN[14:], "sort_code": vIBAN[8:14]}))
	apptest.Expect(t, "virtual by account number", r, 0, http.StatusCreated)
	if r.Data["status"] != "credited" || r.Data["transfer"].(map[string]any)["destination"].(map[string]any)["account"] != vTok {
		t.Fatalf("virtual: %s", r)
	}
	if got := available(t, env, p, acc); got != "43.50" {
		t.Fatalf("available %s", got)
	}

	// A payer GB IBAN is accepted (and must be GB).
	body := fps("1.00", map[string]any{"iban": gbIBAN})
	body["payer"] = map[string]any{"name": "J Smith", "iban": "GB29NWBK60161331926819"}
	r = incoming(t, env, p, body)
	apptest.Expect(t, "payer GB IBAN", r, 0, http.StatusCreated)
	if src := r.Data["transfer"].(map[string]any)["source"].(map[string]any); src["iban"] != "GB29NWBK60161331926819" || src["sort_code"] != "601613" {
		t.Fatalf("payer: %s", r)
	}
	body["payer"] = map[string]any{"name": "J Smith", "iban": "DE89370400440532013000"}
	apptest.ExpectField(t, "payer IBAN not GB", incoming(t, env, p, body), "payer.iban")
}

func TestSandboxIncomingCardTopUp(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, bal, _ := openFunded(t, env, p, "account_eur", 0)
	card := func(dest map[string]any) map[string]any {
		return map[string]any{"scheme": "card", "amount": "20.00", "currency": "EUR",
			"payer": map[string]any{"name": "Mara Velikova", "card_last4": "4242"}, "destination": dest}
	}
	r := incoming(t, env, p, card(map[string]any{"account": acc}))
	apptest.Expect(t, "card to account", r, 0, http.StatusCreated)
	src := r.Data["transfer"].(map[string]any)["source"].(map[string]any)
	if r.Data["status"] != "credited" || src["card_last4"] != "4242" || src["scheme"] != "card" || src["name"] != "Mara Velikova" {
		t.Fatalf("card: %s", r)
	}
	apptest.Expect(t, "card to balance", incoming(t, env, p, card(map[string]any{"balance": bal})), 0, http.StatusCreated)
	if got := available(t, env, p, acc); got != "40.00" {
		t.Fatalf("available %s", got)
	}
	// Only the last four digits: a full card number is refused, and never stored.
	full := card(map[string]any{"account": acc})
	full["payer"] = map[string]any{"name": "Mara", "card_last4": "4111111111111111"}
	r = incoming(t, env, p, full)
	apptest.Expect(t, "full card number", r, 14001, http.StatusBadRequest)
	apptest.ExpectField(t, "full card number", r, "payer.card_last4")
	var leaks int
	if err := env.App.DB.Get(&leaks, `SELECT (SELECT count(*) FROM transfers WHERE counterparty::text LIKE '%4111111111111111%')
		+ (SELECT count(*) FROM audit_log WHERE changes::text LIKE '%4111111111111111%')`); err != nil || leaks != 0 {
		t.Fatalf("card number stored: %d %v", leaks, err)
	}
	noCard := card(map[string]any{"account": acc})
	noCard["payer"] = map[string]any{"name": "Mara"}
	apptest.ExpectField(t, "card_last4 required", incoming(t, env, p, noCard), "payer.card_last4")
}

func TestSandboxIncomingSuspense(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	suspended := func(what string, r apptest.Response, reason string) string {
		t.Helper()
		apptest.Expect(t, what, r, 0, http.StatusCreated)
		if r.Data["status"] != "suspense" || r.Data["transfer"] != nil {
			t.Fatalf("%s: %s", what, r)
		}
		item := r.Data["suspense_item"].(string)
		if got, st := suspenseReason(t, env, item); got != reason || st != "open" {
			t.Fatalf("%s: reason %s status %s, want %s open", what, got, st, reason)
		}
		return item
	}

	t.Run("unknown IBAN", func(t *testing.T) {
		item := suspended("unknown", incoming(t, env, p, sepaCredit("5.00", "DE89370400440532013000")), emi.SuspenseUnknownIdentifier)
		var ident string
		_ = env.App.DB.Get(&ident, `SELECT identifier FROM suspense_items WHERE token = $1`, item)
		if ident != "IBAN DE89370400440532013000" {
			t.Fatalf("identifier %q", ident)
		}
	})
	t.Run("unknown UK account and card token", func(t *testing.T) {
		suspended("unknown uk", incoming(t, env, p, map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP",
			"payer":       map[string]any{"name": "J Smith"},
			"destination": map[string]any{"account_number": "12345678", "sort_code": "040069"}}), emi.SuspenseUnknownIdentifier)
		suspended("unknown token", incoming(t, env, p, map[string]any{"scheme": "card", "amount": "1.00", "currency": "EUR",
			"payer":       map[string]any{"name": "J Smith", "card_last4": "1234"},
			"destination": map[string]any{"account": kernel.NewToken()}}), emi.SuspenseUnknownIdentifier)
	})
	t.Run("blocked account", func(t *testing.T) {
		acc, _, iban := openFunded(t, env, p, "account_eur", 0)
		apptest.Expect(t, "block", call(t, env, p, http.MethodPut, "/v2/accounts/"+acc+"/status", "account_status",
			map[string]any{"status": "blocked"}), 0, http.StatusOK)
		suspended("blocked", incoming(t, env, p, sepaCredit("7.00", iban)), emi.SuspenseAccountBlocked)
		if got := available(t, env, p, acc); got != "0.00" {
			t.Fatalf("blocked account credited: %s", got)
		}
	})
	t.Run("blocked main account of a virtual IBAN", func(t *testing.T) {
		user := createUser(t, env, p, validUser(p))
		main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)
		v := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": main})
		apptest.Expect(t, "block main", call(t, env, p, http.MethodPut, "/v2/accounts/"+main+"/status", "account_status",
			map[string]any{"status": "blocked"}), 0, http.StatusOK)
		suspended("blocked main", incoming(t, env, p, sepaCredit("7.00", balancesOf(v)[0]["iban"].(string))), emi.SuspenseAccountBlocked)
	})
	t.Run("terminated account", func(t *testing.T) {
		acc, _, iban := openFunded(t, env, p, "account_eur", 0)
		apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+acc, "account_terminate", nil), 0, http.StatusOK)
		suspended("terminated", incoming(t, env, p, sepaCredit("8.00", iban)), emi.SuspenseAccountTerminated)
	})
	t.Run("currency the balance does not hold", func(t *testing.T) {
		acc, bal, _ := openFunded(t, env, p, "account_eur", 0)
		for _, dest := range []map[string]any{{"account": acc}, {"balance": bal}} {
			suspended("GBP top-up of an EUR account", incoming(t, env, p, map[string]any{"scheme": "card", "amount": "3.00", "currency": "GBP",
				"payer": map[string]any{"name": "J Smith", "card_last4": "1234"}, "destination": dest}), emi.SuspenseCurrencyNotHeld)
		}
		// A SEPA credit (EUR) to a GBP balance's GB IBAN.
		user := createUser(t, env, p, validUser(p))
		gbp := createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user})
		suspended("EUR to a GBP IBAN", incoming(t, env, p, sepaCredit("3.00", balancesOf(gbp)[0]["iban"].(string))), emi.SuspenseCurrencyNotHeld)
	})
	// Everything parked sits on suspense, taken from incoming clearing.
	var parked int64
	if err := env.App.DB.Get(&parked, `SELECT coalesce(sum(amount), 0) FROM suspense_items WHERE currency = 'EUR'`); err != nil {
		t.Fatal(err)
	}
	if got := internalPosition(t, env, emi.LedgerSuspense, "EUR"); got != parked || parked == 0 {
		t.Fatalf("suspense position %d, items %d", got, parked)
	}
	var audits int
	if err := env.App.DB.Get(&audits, `SELECT count(*) FROM audit_log WHERE action = 'incoming.suspense'`); err != nil {
		t.Fatal(err)
	}
	var items int
	_ = env.App.DB.Get(&items, `SELECT count(*) FROM suspense_items`)
	if audits != items {
		t.Fatalf("%d suspense items, %d audit rows", items, audits)
	}
}

func TestSandboxIncomingRefusals(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	acc, _, iban := openFunded(t, env, p, "account_eur", 0)
	otherAcc, _, otherIBAN := openFunded(t, env, q, "account_eur", 0)

	with := func(k string, v any) map[string]any {
		b := sepaCredit("1.00", iban)
		b[k] = v
		return b
	}
	for _, c := range []struct {
		what  string
		body  map[string]any
		field string
	}{
		{"no scheme", with("scheme", ""), "scheme"},
		{"unknown scheme", with("scheme", "swift"), "scheme"},
		{"zero amount", with("amount", "0"), "amount"},
		{"negative amount", with("amount", "-5.00"), "amount"},
		{"too many decimals", with("amount", "1.001"), "amount"},
		{"too large", with("amount", "1000000000.01"), "amount"},
		{"unknown currency", with("currency", "USD"), "currency"},
		{"SEPA in GBP", with("currency", "GBP"), "currency"},
		{"reference with a control character", with("reference", "a\u0007b"), "reference"},
		{"reference too long", with("reference", strings.Repeat("x", 141)), "reference"},
		{"no payer name", with("payer", map[string]any{"iban": "DE89370400440532013000"}), "payer.name"},
		{"bad payer IBAN", with("payer", map[string]any{"name": "A", "iban": "DE00370400440532013000"}), "payer.iban"},
		{"SEPA payer with a card", with("payer", map[string]any{"name": "A", "card_last4": "1234"}), "payer"},
		{"bad destination IBAN", with("destination", map[string]any{"iban": "BG00EMIB96611000000001"}), "destination.iban"},
		{"two destinations", with("destination", map[string]any{"iban": iban, "account": acc}), "destination"},
		{"no destination", with("destination", map[string]any{}), "destination"},
		{"SEPA to an account token", with("destination", map[string]any{"account": acc}), "destination"},
		{"unknown field", with("colour", "red"), "colour"},
		{"FPS in EUR", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "EUR", "payer": map[string]any{"name": "A"},
			"destination": map[string]any{"account_number": "12345678", "sort_code": "040069"}}, "currency"},
		{"FPS to a BG IBAN", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP", "payer": map[string]any{"name": "A"},
			"destination": map[string]any{"iban": iban}}, "destination"},
		{"FPS short account number", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP", "payer": map[string]any{"name": "A"},
			"destination": map[string]any{"account_number": "1234", "sort_code": "040069"}}, "destination"},
		{"FPS account number without sort code", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP",
			"payer": map[string]any{"name": "A"}, "destination": map[string]any{"account_number": "12345678"}}, "destination"},
		{"FPS payer account without sort code", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP",
			"payer": map[string]any{"name": "A", "account_number": "12345678"}, "destination": map[string]any{"account_number": "12345678", "sort_code": "040069"}},
			"payer.account_number"},
		{"card to an IBAN", map[string]any{"scheme": "card", "amount": "1.00", "currency": "EUR", "payer": map[string]any{"name": "A", "card_last4": "1234"},
			"destination": map[string]any{"iban": iban}}, "destination"},
		{"card to a malformed token", map[string]any{"scheme": "card", "amount": "1.00", "currency": "EUR", "payer": map[string]any{"name": "A", "card_last4": "1234"},
			"destination": map[string]any{"account": "not-a-token"}}, "destination.account"},
		{"card payer's last4 in letters", map[string]any{"scheme": "card", "amount": "1.00", "currency": "EUR",
			"payer": map[string]any{"name": "A", "card_last4": "abcd"}, "destination": map[string]any{"account": acc}}, "payer.card_last4"},
		{"FPS payer account number in letters", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP",
			"payer":       map[string]any{"name": "A", "account_number": "abcdefgh", "sort_code": "040069"},
			"destination": map[string]any{"account_number": "12345678", "sort_code": "040069"}}, "payer.account_number"},
		{"FPS payer sort code in letters", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP",
			"payer":       map[string]any{"name": "A", "account_number": "12345678", "sort_code": "zz-yy-xx"},
			"destination": map[string]any{"account_number": "12345678", "sort_code": "040069"}}, "payer.account_number"},
		{"FPS account number in letters", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP", "payer": map[string]any{"name": "A"},
			"destination": map[string]any{"account_number": "abcdefgh", "sort_code": "040069"}}, "destination"},
		{"FPS sort code in letters", map[string]any{"scheme": "faster_payments", "amount": "1.00", "currency": "GBP", "payer": map[string]any{"name": "A"},
			"destination": map[string]any{"account_number": "12345678", "sort_code": "zz-yy-xx"}}, "destination"},
		{"card payer with an IBAN", map[string]any{"scheme": "card", "amount": "1.00", "currency": "EUR",
			"payer": map[string]any{"name": "A", "card_last4": "1234", "iban": "DE89370400440532013000"}, "destination": map[string]any{"account": acc}}, "payer"},
	} {
		r := incoming(t, env, p, c.body)
		apptest.Expect(t, c.what, r, 14001, http.StatusBadRequest)
		apptest.ExpectField(t, c.what, r, c.field)
	}
	if got := available(t, env, p, acc); got != "0.00" {
		t.Fatalf("a refused credit moved money: %s", got)
	}
	var n int
	if err := env.App.DB.Get(&n, `SELECT (SELECT count(*) FROM suspense_items) + (SELECT count(*) FROM ledger_transactions)`); err != nil || n != 0 {
		t.Fatalf("refusals left %d rows (%v)", n, err)
	}

	// Another partner's customer's identifier is treated exactly as one
	// that matches nothing (S4): the credit waits in suspense as an unknown
	// identifier and the other partner's account is not credited.
	r := incoming(t, env, p, sepaCredit("1.00", otherIBAN))
	apptest.Expect(t, "another partner's IBAN", r, 0, http.StatusCreated)
	if r.Data["status"] != "suspense" {
		t.Fatalf("another partner's IBAN: %s", r)
	}
	var reason string
	if err := env.App.DB.Get(&reason, `SELECT reason FROM suspense_items WHERE token = $1`, r.Data["suspense_item"]); err != nil || reason != emi.SuspenseUnknownIdentifier {
		t.Fatalf("suspense reason %q (%v)", reason, err)
	}
	if got := available(t, env, q, otherAcc); got != "0.00" {
		t.Fatalf("another partner's account credited: %s", got)
	}
}

// In production the operation is an unknown route, and nothing moves.
func TestSandboxIncomingProduction(t *testing.T) {
	t.Parallel()
	env := moneyEnv(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, iban := openFunded(t, env, p, "account_eur", 0)
	apptest.Expect(t, "production", incoming(t, env, p, sepaCredit("1.00", iban)), 10004, http.StatusNotFound)
	apptest.Expect(t, "production, invalid body", incoming(t, env, p, map[string]any{"colour": "red"}), 10004, http.StatusNotFound)
	if got := available(t, env, p, acc); got != "0.00" {
		t.Fatalf("available %s", got)
	}
	// The service refuses partners outside the sandbox too.
	_, err := env.App.Incoming.Credit(partnerCtx(p), emi.IncomingCredit{Scheme: "sepa"})
	if !errorsIs(err, emi.ErrRouteNotFound) {
		t.Fatalf("service in production: %v", err)
	}
}

// partnerCtx is a context with p's principal, for calling a service
// directly.
func partnerCtx(p *apptest.Partner) context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID})
}
