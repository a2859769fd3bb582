package portal_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/service/kernel"
)

// moneyLedgerBalanced registers the ledger check for the end of the test:
// every transaction sums to zero per currency and every balance's posted
// figure is the sum of its entries.
func moneyLedgerBalanced(t *testing.T, env *apptest.Env) {
	t.Helper()
	t.Cleanup(func() {
		var bad []int64
		if err := env.App.DB.Select(&bad, `SELECT txn FROM ledger_entries GROUP BY txn, currency HAVING sum(amount) <> 0`); err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Errorf("ledger transactions that do not sum to zero: %v", bad)
		}
		var drift []string
		if err := env.App.DB.Select(&drift, `SELECT b.token::text FROM balances b LEFT JOIN (SELECT balance, sum(amount) AS s
			FROM ledger_entries WHERE balance IS NOT NULL GROUP BY balance) e ON e.balance = b.token WHERE b.posted <> coalesce(e.s, 0)`); err != nil {
			t.Fatal(err)
		}
		if len(drift) > 0 {
			t.Errorf("balances whose posted figure is not the sum of their entries: %v", drift)
		}
	})
}

// availableOf reads a balance's available figure.
func availableOf(t *testing.T, env *apptest.Env, balance string) int64 {
	t.Helper()
	var n int64
	if err := env.App.DB.Get(&n, `SELECT available FROM balances WHERE token = $1`, balance); err != nil {
		t.Fatal(err)
	}
	return n
}

// openItems returns the tokens of open suspense items, oldest first.
func openItems(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	var out []string
	if err := env.App.DB.Select(&out, `SELECT token::text FROM suspense_items WHERE status = 'open' ORDER BY created_at, token`); err != nil {
		t.Fatal(err)
	}
	return out
}

func simulateForm(amount, toIBAN string) url.Values {
	return url.Values{"scheme": {"sepa"}, "amount": {amount}, "currency": {"EUR"}, "reference": {"Invoice 9"},
		"payer_name": {"Acme GmbH"}, "payer_iban": {"DE89370400440532013000"}, "to_iban": {toIBAN}}
}

func TestSuspenseQueuePage(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	moneyLedgerBalanced(t, a.env)
	eurIBAN, eurBal := balance(a.eur, "iban"), balance(a.eur, "token")

	// Simulated payments that cannot be credited land in the queue.
	p := a.cs.Post(t, "/backoffice/suspense/simulate", simulateForm("12.50", "DE75 5121 0800 1245 1261 99"))
	if p.Status != http.StatusSeeOther || p.Location != "/backoffice/suspense" {
		t.Fatalf("simulate: HTTP %d to %q", p.Status, p.Location)
	}
	page := follow(t, a.cs, p)
	contains(t, "suspense page", page, "it is in the suspense queue", `data-testid="suspense-row"`, "12.50\u00a0EUR", "Acme GmbH",
		"IBAN DE89370400440532013000", "IBAN DE75512108001245126199", "unknown identifier", "Invoice 9", " s</td>",
		`data-testid="assign-form"`, `data-testid="return-form"`, `data-testid="simulate-form"`, "1 item")
	apiBlock := api(t, a.env, a.p, http.MethodPut, "/v2/accounts/"+a.gbpTok+"/status", "account_status", map[string]any{"status": "blocked"})
	if apiBlock.Status != http.StatusOK {
		t.Fatalf("block: %s", apiBlock)
	}
	p = a.cs.Post(t, "/backoffice/suspense/simulate", url.Values{"scheme": {"faster_payments"}, "amount": {"3.00"}, "currency": {"GBP"},
		"payer_name": {"J Smith"}, "payer_sort_code": {"60-16-13"}, "payer_account_number": {"31926819"},
		"to_sort_code": {balance(a.gbp, "sort_code")}, "to_account_number": {balance(a.gbp, "account_number")}})
	page = follow(t, a.cs, p)
	contains(t, "blocked account", page, "account blocked", "60-16-13 31926819", "3.00\u00a0GBP", "matched account", "2 items")
	items := openItems(t, a.env)
	if len(items) != 2 {
		t.Fatalf("items %v", items)
	}

	// A simulated payment the service refuses comes back (422) with the
	// form open, what was typed kept and the error beside its field, and
	// nothing moves.
	bad := simulateForm("12.50", "not an iban")
	p = a.cs.Post(t, "/backoffice/suspense/simulate", bad)
	if p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("refused simulation: HTTP %d, want 422", p.Status)
	}
	contains422(t, "refused simulation", p, "please correct the marked fields", `id="to_iban-error"`, `value="not an iban"`,
		`data-testid="simulate-details" open`)
	bad = simulateForm("12.5.0", eurIBAN)
	p = a.cs.Post(t, "/backoffice/suspense/simulate", bad)
	contains422(t, "bad amount", p, `id="amount-error">must be an amount`, `value="12.5.0"`, `value="`+eurIBAN+`"`)

	// The auditor sees the queue but cannot act; the underwriter does not see it.
	auditor := a.env.NewBrowser()
	auditor.SignIn(t, apptest.AuditorEmail)
	ap := auditor.Get(t, "/backoffice/suspense")
	contains(t, "auditor's queue", ap, "Acme GmbH", `href="/backoffice/suspense"`)
	lacks(t, "auditor's queue", ap, `data-testid="assign-form"`, `data-testid="return-form"`, `data-testid="simulate-form"`)
	under := a.env.NewBrowser()
	under.SignIn(t, apptest.UnderwriterEmail)
	if p := under.Get(t, "/backoffice/suspense"); p.Status != http.StatusForbidden {
		t.Fatalf("underwriter: HTTP %d", p.Status)
	}
	lacks(t, "underwriter's navigation", under.Get(t, "/backoffice/"), `href="/backoffice/suspense"`)

	// Request an assignment: a reason is required, the target must be
	// usable; a refused form comes back (422) with what was typed.
	request := func(b *apptest.Browser, item, to, reason string) apptest.Page {
		return b.Post(t, "/backoffice/suspense/"+item+"/assign", url.Values{"to": {to}, "reason": {reason}})
	}
	contains422(t, "no reason", request(a.cs, items[0], eurIBAN, ""), "reason: give a reason", `value="`+eurIBAN+`"`,
		`data-testid="assign-error"`)
	contains422(t, "unknown IBAN", request(a.cs, items[0], "DE75512108001245126199", "found it"), "matches no balance held in emi",
		`value="DE75512108001245126199"`, ">found it</textarea>")
	contains422(t, "other currency", request(a.cs, items[0], a.gbpTok, "found"), "has no EUR balance", `value="`+a.gbpTok+`"`)
	if availableOf(t, a.env, eurBal) != 0 {
		t.Fatal("a refused assignment moved money")
	}
	page = follow(t, a.cs, request(a.cs, items[0], eurIBAN, "customer sent the payment slip"))
	contains(t, "requested", page, "Assignment to account "+a.eurTok+" requested", `data-testid="pending-assignment"`,
		"customer sent the payment slip", "Sandbox Customer Service (you)", `data-testid="assignment-awaiting-second"`,
		`data-testid="reject-assignment-form"`, "Withdraw", "as typed: "+strings.ReplaceAll(eurIBAN, " ", ""), `data-testid="return-blocked"`)
	lacks(t, "the requester's page", page, `data-testid="approve-assignment-form"`)
	if availableOf(t, a.env, eurBal) != 0 || len(openItems(t, a.env)) != 2 {
		t.Fatal("a request moved money")
	}
	var assignment string
	if err := a.env.App.DB.Get(&assignment, `SELECT token::text FROM suspense_assignment_requests WHERE item = $1`, items[0]); err != nil {
		t.Fatal(err)
	}
	approve := func(b *apptest.Browser) apptest.Page {
		return b.Post(t, "/backoffice/suspense/assignments/"+assignment+"/approve", url.Values{"item": {items[0]}})
	}
	// The requester's forged approval is refused (four-eyes); nothing moves.
	contains422(t, "own approval", approve(a.cs), "You already took part in this decision")
	if availableOf(t, a.env, eurBal) != 0 {
		t.Fatal("the requester approved their own assignment")
	}
	contains422(t, "a second request", request(a.cs, items[0], eurIBAN, "again"), "already waits for a second person")

	// Compliance sees who asked, the target and the reason, and may
	// approve; the auditor sees it without the forms.
	comp := a.env.NewBrowser()
	comp.SignIn(t, apptest.ComplianceEmail)
	cp := comp.Get(t, "/backoffice/suspense")
	contains(t, "compliance's queue", cp, `data-testid="pending-assignment"`, "Sandbox Customer Service", a.eurTok,
		"customer sent the payment slip", `data-testid="approve-assignment-form"`, "Reject…", "Approve and credit 12.50\u00a0EUR")
	lacks(t, "compliance's queue", cp, `data-testid="assignment-awaiting-second"`)
	ap = auditor.Get(t, "/backoffice/suspense")
	contains(t, "auditor's queue", ap, `data-testid="pending-assignment"`, "customer sent the payment slip")
	lacks(t, "auditor's queue", ap, `data-testid="approve-assignment-form"`, `data-testid="reject-assignment-form"`)
	// Returned while the assignment waits: refused, the reason says why.
	contains422(t, "return while pending", comp.Post(t, "/backoffice/suspense/"+items[0]+"/return", url.Values{"reason": {"recalled"}}),
		"already waits for a second person")
	page = follow(t, comp, approve(comp))
	contains(t, "approved", page, "Approved and assigned: 12.50 EUR credited to account "+a.eurTok)
	if availableOf(t, a.env, eurBal) != 1250 {
		t.Fatalf("available %d", availableOf(t, a.env, eurBal))
	}
	contains422(t, "approve twice", approve(comp), "waits any more")
	contains422(t, "request an assigned item", request(a.cs, items[0], eurIBAN, "again"), "already assigned or returned")
	if availableOf(t, a.env, eurBal) != 1250 {
		t.Fatal("assigned twice")
	}

	// Return, by compliance.
	page = follow(t, comp, comp.Post(t, "/backoffice/suspense/"+items[1]+"/return", url.Values{"reason": {"account closed for fraud"}}))
	contains(t, "returned", page, "Returned to the sender.", "No open suspense items.")
	resolved := comp.Get(t, "/backoffice/suspense?status=resolved")
	contains(t, "resolved tab", resolved, "assigned", "returned", "customer sent the payment slip", "account closed for fraud",
		"requested by Sandbox Customer Service, approved by Sandbox Compliance Officer (you)", a.eurTok)
	// Customer service sees the assigned account as a link.
	contains(t, "resolved tab for customer service", a.cs.Get(t, "/backoffice/suspense?status=resolved"), `href="/backoffice/accounts/`+a.eurTok+`"`)
	// Unknown items.
	if p := comp.Post(t, "/backoffice/suspense/"+kernel.NewToken()+"/return", url.Values{"reason": {"x y z"}}); p.Status != http.StatusNotFound {
		t.Fatalf("unknown item: HTTP %d", p.Status)
	}
	if p := comp.Post(t, "/backoffice/suspense/nope/assign", url.Values{"reason": {"x y z"}}); p.Status != http.StatusNotFound {
		t.Fatalf("malformed item: HTTP %d", p.Status)
	}
	for _, tok := range []string{kernel.NewToken(), "nope"} {
		if p := comp.Post(t, "/backoffice/suspense/assignments/"+tok+"/approve", nil); p.Status != http.StatusNotFound {
			t.Fatalf("unknown assignment %s: HTTP %d", tok, p.Status)
		}
	}
}

// One staff member used to assign suspense money to an account of their
// choice through the back office's assign form, and it was credited at
// once. The same form now only requests the assignment: the money stays on
// the suspense account and the item open until someone else approves, and a
// rejection needs a reason (the form keeps what was typed). This test
// failed on the code before the decision engine covered suspense (the
// balance held 5,000.00 EUR after one POST).
func TestC9SuspenseAssignedByOnePerson(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	moneyLedgerBalanced(t, a.env)
	eurBal := balance(a.eur, "token")
	follow(t, a.cs, a.cs.Post(t, "/backoffice/suspense/simulate", simulateForm("5000.00", "DE75 5121 0800 1245 1261 99")))
	items := openItems(t, a.env)
	if len(items) != 1 {
		t.Fatalf("items %v", items)
	}
	p := a.cs.Post(t, "/backoffice/suspense/"+items[0]+"/assign", url.Values{"to": {a.eurTok}, "reason": {"customer called"}})
	if p.Status >= 500 {
		t.Fatalf("HTTP %d", p.Status)
	}
	if got := availableOf(t, a.env, eurBal); got != 0 {
		t.Fatalf("one person assigned suspense money: the balance holds %d", got)
	}
	if len(openItems(t, a.env)) != 1 {
		t.Fatal("one person resolved the suspense item")
	}
	// The requester withdraws (a reason is required, and a refused form
	// keeps what was typed); another person rejects a second request.
	var tok string
	if err := a.env.App.DB.Get(&tok, `SELECT a.token::text FROM suspense_assignment_requests a JOIN control_requests r ON r.id = a.token WHERE a.item = $1 AND r.status = 'pending'`,
		items[0]); err != nil {
		t.Fatal(err)
	}
	reject := func(b *apptest.Browser, reason string) apptest.Page {
		return b.Post(t, "/backoffice/suspense/assignments/"+tok+"/reject", url.Values{"item": {items[0]}, "reason": {reason}})
	}
	contains422(t, "withdraw without a reason", reject(a.cs, "x"), "give a reason", ">x</textarea>")
	contains(t, "withdrawn", follow(t, a.cs, reject(a.cs, "wrong customer")), "Assignment request withdrawn", `data-testid="assign-form"`)
	follow(t, a.cs, a.cs.Post(t, "/backoffice/suspense/"+items[0]+"/assign", url.Values{"to": {a.eurTok}, "reason": {"right customer"}}))
	if err := a.env.App.DB.Get(&tok, `SELECT a.token::text FROM suspense_assignment_requests a JOIN control_requests r ON r.id = a.token WHERE a.item = $1 AND r.status = 'pending'`,
		items[0]); err != nil {
		t.Fatal(err)
	}
	comp := a.env.NewBrowser()
	comp.SignIn(t, apptest.ComplianceEmail)
	contains(t, "rejected", follow(t, comp, reject(comp, "no evidence it is theirs")), "Assignment request rejected")
	var statuses []string
	if err := a.env.App.DB.Select(&statuses, `SELECT r.status FROM suspense_assignment_requests a JOIN control_requests r ON r.id = a.token WHERE a.item = $1 ORDER BY r.status DESC`,
		items[0]); err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 2 || statuses[0] != "withdrawn" || statuses[1] != "rejected" || availableOf(t, a.env, eurBal) != 0 {
		t.Fatalf("requests %v, available %d", statuses, availableOf(t, a.env, eurBal))
	}
}

func TestAdjustmentPages(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	moneyLedgerBalanced(t, a.env)
	eurBal, acc := balance(a.eur, "token"), accountHref(a.eurTok)

	// The account page: the simulator (sandbox) and the request form.
	page := a.cs.Get(t, acc)
	contains(t, "account page", page, `data-testid="account-adjustments"`, `data-testid="request-adjustment-form"`,
		`data-testid="simulate-form"`, "iban:"+balance(a.eur, "iban"), "account:"+a.eurTok, "No adjustment of this account waits for approval.")
	p := a.cs.Post(t, acc+"/incoming", url.Values{"scheme": {"sepa"}, "amount": {"30.00"}, "currency": {"EUR"}, "payer_name": {"Acme GmbH"},
		"to": {"iban:" + balance(a.eur, "iban")}})
	if p.Location != acc {
		t.Fatalf("simulate on the account page: HTTP %d to %q", p.Status, p.Location)
	}
	contains(t, "credited", a.cs.Get(t, acc), "Credited: 30.00 EUR to account "+a.eurTok)
	if availableOf(t, a.env, eurBal) != 3000 {
		t.Fatalf("available %d", availableOf(t, a.env, eurBal))
	}
	// A card top-up to the virtual account (its main balance).
	p = a.cs.Post(t, accountHref(a.virtualTok)+"/incoming", url.Values{"scheme": {"card"}, "amount": {"1.00"}, "currency": {"EUR"},
		"payer_name": {"Mara"}, "payer_card_last4": {"4242"}, "to": {"account:" + a.virtualTok}})
	contains(t, "virtual top-up", follow(t, a.cs, p), "Credited: 1.00 EUR to account "+a.virtualTok)
	// The card shows on the transfer's page and on the statement.
	var topUp string
	if err := a.env.App.DB.Get(&topUp, `SELECT token::text FROM transfers WHERE type = 'incoming' AND destination_account = $1`,
		a.virtualTok); err != nil {
		t.Fatal(err)
	}
	contains(t, "card top-up's page", a.cs.Get(t, "/backoffice/transfers/"+topUp), "Source (external)", "card •••• 4242", ">Mara<")
	contains(t, "card top-up on the statement", a.cs.Get(t, accountHref(a.virtualTok)), "card •••• 4242")

	// A refused request answers the page itself (422, the form kept open);
	// an accepted one redirects to it.
	request := func(b *apptest.Browser, dir, amount, reason string) apptest.Page {
		p := b.Post(t, acc+"/adjustments", url.Values{"direction": {dir}, "currency": {"EUR"}, "amount": {amount}, "reason": {reason}})
		if p.Status == http.StatusUnprocessableEntity {
			return p
		}
		return follow(t, b, p)
	}
	contains422(t, "debit over available", request(a.cs, "debit", "31.01", "fee"), "more than the balance&#39;s available amount", "an adjustment never overdraws")
	contains422(t, "no reason", request(a.cs, "credit", "5.00", ""), `id="reason-error">give a reason`)
	contains422(t, "bad amount", request(a.cs, "credit", "abc", "goodwill"), `id="amount-error">must be an amount with at most two decimals`)
	page = request(a.cs, "credit", "5.00", "goodwill for the outage")
	contains(t, "requested", page, "Adjustment requested (credit 5.00 EUR)", `data-testid="adjustment-awaiting-second"`, "goodwill for the outage",
		"Sandbox Customer Service (you)")
	lacks(t, "requester's page", page, `data-testid="approve-adjustment-form"`)
	if availableOf(t, a.env, eurBal) != 3100 {
		t.Fatal("a request moved money")
	}
	var token string
	if err := a.env.App.DB.Get(&token, `SELECT id::text FROM control_requests WHERE control = 'adjustment.approve' AND status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	// The requester cannot approve it, even by a forged form.
	p = a.cs.Post(t, "/backoffice/adjustments/"+token+"/approve", url.Values{"back": {acc}})
	contains(t, "self-approval", follow(t, a.cs, p), "You already took part in this decision (you proposed it or approved it)")
	if availableOf(t, a.env, eurBal) != 3100 {
		t.Fatal("self-approval moved money")
	}

	// Compliance approves it from the queue.
	comp := a.env.NewBrowser()
	comp.SignIn(t, apptest.ComplianceEmail)
	q := comp.Get(t, "/backoffice/adjustments")
	contains(t, "queue", q, `data-testid="approve-adjustment-form"`, "goodwill for the outage", "Sandbox Customer Service", "5.00\u00a0EUR",
		`href="/backoffice/adjustments"`)
	page = follow(t, comp, comp.Post(t, "/backoffice/adjustments/"+token+"/approve", url.Values{"reason": {"ok"}}))
	contains(t, "approved", page, "Adjustment approved and posted: credit 5.00 EUR.", "approved", "Sandbox Compliance Officer (you)")
	if availableOf(t, a.env, eurBal) != 3600 {
		t.Fatalf("available %d", availableOf(t, a.env, eurBal))
	}
	contains(t, "approve twice", follow(t, comp, comp.Post(t, "/backoffice/adjustments/"+token+"/approve", nil)),
		"waits any more")

	// A rejection needs a reason; from the account page it returns there.
	request(a.cs, "debit", "6.00", "duplicate credit")
	if err := a.env.App.DB.Get(&token, `SELECT id::text FROM control_requests WHERE control = 'adjustment.approve' AND status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	contains(t, "reject without reason", follow(t, comp, comp.Post(t, "/backoffice/adjustments/"+token+"/reject", nil)), "reason: give a reason")
	p = comp.Post(t, "/backoffice/adjustments/"+token+"/reject", url.Values{"reason": {"not a duplicate"}, "back": {acc}})
	if p.Location != acc {
		t.Fatalf("reject from the account page: to %q", p.Location)
	}
	// A forged back link elsewhere is ignored.
	request(a.cs, "debit", "1.00", "duplicate credit")
	_ = a.env.App.DB.Get(&token, `SELECT id::text FROM control_requests WHERE control = 'adjustment.approve' AND status = 'pending'`)
	if p := comp.Post(t, "/backoffice/adjustments/"+token+"/reject", url.Values{"reason": {"not needed"}, "back": {"https://evil.example/"}}); p.Location != "/backoffice/adjustments" {
		t.Fatalf("forged back link: to %q", p.Location)
	}
	if availableOf(t, a.env, eurBal) != 3600 {
		t.Fatal("a rejection moved money")
	}
	decided := comp.Get(t, "/backoffice/adjustments")
	contains(t, "decided", decided, "No adjustment waits for approval.", "rejected", "not a duplicate")

	// The auditor sees the queue without actions; the underwriter not at all.
	auditor := a.env.NewBrowser()
	auditor.SignIn(t, apptest.AuditorEmail)
	request(a.cs, "credit", "2.00", "goodwill")
	ap := auditor.Get(t, "/backoffice/adjustments")
	contains(t, "auditor's queue", ap, "goodwill")
	lacks(t, "auditor's queue", ap, `data-testid="approve-adjustment-form"`, `data-testid="reject-adjustment-form"`)
	aa := auditor.Get(t, acc)
	contains(t, "auditor's account page", aa, `data-testid="account-adjustments"`, "adjustment.requested")
	lacks(t, "auditor's account page", aa, `data-testid="request-adjustment-form"`, `data-testid="simulate-form"`)
	under := a.env.NewBrowser()
	under.SignIn(t, apptest.UnderwriterEmail)
	if p := under.Get(t, "/backoffice/adjustments"); p.Status != http.StatusForbidden {
		t.Fatalf("underwriter: HTTP %d", p.Status)
	}
	if p := comp.Post(t, "/backoffice/adjustments/"+kernel.NewToken()+"/approve", nil); p.Status != http.StatusNotFound {
		t.Fatalf("unknown adjustment: HTTP %d", p.Status)
	}
	// The navigation counts the pending request.
	contains(t, "navigation", comp.Get(t, "/backoffice/"), `href="/backoffice/adjustments"`)
}

// Outside the sandbox the simulators are hidden and their routes unknown.
func TestMoneySimulatorsAreSandboxOnly(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	moneyLedgerBalanced(t, a.env)
	// The same database and services behind a back office configured for
	// production (staff can only be seeded in the sandbox).
	prod := *a.env
	prod.App.Config.Mode = config.ModeProduction
	prod.Server = httptest.NewServer(a.env.App.Handler())
	t.Cleanup(prod.Server.Close)
	cs := prod.NewBrowser()
	cs.SignIn(t, apptest.CSEmail)
	acc := accountHref(a.eurTok)
	page := cs.Get(t, acc)
	contains(t, "production account page", page, `data-testid="request-adjustment-form"`)
	lacks(t, "production account page", page, `data-testid="simulate-form"`)
	lacks(t, "production suspense page", cs.Get(t, "/backoffice/suspense"), `data-testid="simulate-form"`)
	for _, path := range []string{acc + "/incoming", "/backoffice/suspense/simulate"} {
		p := cs.Post(t, path, url.Values{"scheme": {"sepa"}, "amount": {"1.00"}, "currency": {"EUR"}, "payer_name": {"A"},
			"to": {"iban:" + balance(a.eur, "iban")}, "to_iban": {balance(a.eur, "iban")}})
		if p.Status != http.StatusNotFound || !strings.Contains(p.Body, `data-testid="error-404"`) {
			t.Fatalf("%s in production: HTTP %d", path, p.Status)
		}
	}
	if availableOf(t, a.env, balance(a.eur, "token")) != 0 {
		t.Fatal("production simulated a payment")
	}
}

func accountHref(token string) string { return "/backoffice/accounts/" + token }
