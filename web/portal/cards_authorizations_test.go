package portal_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
)

// fundCard credits minor units to the balance of the card's account.
func (e *cardsEnv) fund(t *testing.T, minor int64) string {
	t.Helper()
	var bal string
	if err := e.env.App.DB.Get(&bal, `SELECT token::text FROM balances WHERE account = $1`, e.account); err != nil {
		t.Fatal(err)
	}
	e.env.Fund(t, e.account, bal, "EUR", minor)
	return bal
}

func simulation(amount, channel, pin, threeDS string) url.Values {
	return url.Values{"amount": {amount}, "currency": {"EUR"}, "mcc": {"5411"}, "channel": {channel}, "pin": {pin},
		"three_ds": {threeDS}, "merchant_name": {"Corner Shop"}, "merchant_country": {"bg"}}
}

// paymentTokens returns the authorization tokens of the card's payments
// table, newest first.
func paymentTokens(body string) []string {
	var out []string
	for _, part := range strings.Split(body, `data-authorization="`)[1:] {
		out = append(out, part[:36])
	}
	return out
}

func TestCardPaymentSimulator(t *testing.T) {
	t.Parallel()
	e := newCardsEnv(t)
	bal := e.fund(t, 500_00)
	page := e.page(e.card)
	figures := func() (posted, held, available int64) {
		t.Helper()
		if err := e.env.App.DB.QueryRow(`SELECT posted, held, available FROM balances WHERE token = $1`, bal).Scan(&posted, &held, &available); err != nil {
			t.Fatal(err)
		}
		return
	}

	pg := e.cs.Get(t, page)
	contains(t, "card page", pg, `data-testid="card-payments"`, `data-testid="payment-simulator"`, "Payment simulator (sandbox)",
		"No payment was authorized or declined on this card.", `name="pin" value=""`,
		"3 wrong PINs in a row block PIN use", "holds the amount for 7 days")

	// An approval holds the money and lists the payment with Clear and Reverse.
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("12.50", "pos", chosenPIN, "passed")))
	contains(t, "after an approval", pg, "Approved (00): 12.50 EUR held until", `data-testid="payment-row"`,
		`data-testid="payment-reason-code">00<`, "approved", "held 12.50 EUR", `data-testid="payment-clear"`, `data-testid="payment-reverse"`,
		"Corner Shop", "MCC 5411", "BG", "with PIN")
	if p, h, a := figures(); p != 500_00 || h != 12_50 || a != 487_50 {
		t.Fatalf("after approval: %d %d %d", p, h, a)
	}
	approved := paymentTokens(pg.Body)[0]

	// A wrong PIN is declined with 55, counted, and never shown back.
	const wrongPIN = "739264" // distinctive: the leak checks look for the bare value
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("3.00", "atm", wrongPIN, "passed")))
	contains(t, "after a wrong PIN", pg, "Declined (55 incorrect PIN). Nothing was held.", `data-testid="payment-reason-code">55<`,
		"incorrect PIN", "declined")
	lacks(t, "after a wrong PIN", pg, `"`+wrongPIN+`"`, `value="`+chosenPIN+`"`)
	if n := e.count(t, `SELECT pin_errors FROM cards WHERE token = $1`, e.card.Token); n != 1 {
		t.Fatalf("pin errors %d", n)
	}

	// Online: the outcome of the 3DS challenge.
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("1.00", "online", "", "failed")))
	contains(t, "3DS failed", pg, "Declined (63 3DS authentication failed)", "3DS failed")
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("1.00", "online", "", "none")))
	contains(t, "no 3DS", pg, "Declined (1A 3DS authentication required)")

	// Invalid input comes back on the open form, without the PIN. (12,50 is
	// an amount; 1,250 is ambiguous and refused.)
	bad := e.cs.Post(t, page+"/authorizations", url.Values{"amount": {"1,250"}, "currency": {"EUR"}, "mcc": {"54"}, "channel": {"pos"},
		"pin": {wrongPIN}, "merchant_name": {"Kiosk"}})
	if bad.Status != http.StatusUnprocessableEntity {
		t.Fatalf("invalid simulation: HTTP %d", bad.Status)
	}
	if !strings.Contains(bad.Body, `value="1,250"`) || !strings.Contains(bad.Body, `value="Kiosk"`) || !strings.Contains(bad.Body, "must be a decimal amount") ||
		!strings.Contains(bad.Body, `open data-testid="payment-simulator-details"`) {
		t.Fatalf("invalid simulation form: %.2000s", bad.Body)
	}
	lacks(t, "refused form", apptest.Page{Body: bad.Body}, `"`+wrongPIN+`"`)
	bad = e.cs.Post(t, page+"/authorizations", simulation("1.00", "pos", "", "passed"))
	if bad.Status != http.StatusUnprocessableEntity || !strings.Contains(bad.Body, "is required for pos payments") {
		t.Fatalf("POS without PIN: HTTP %d", bad.Status)
	}

	// Partial clear: 10.00 paid, the other 2.50 released.
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations/"+approved+"/clear", url.Values{"amount": {"10.00"}}))
	contains(t, "cleared", pg, "Cleared: 10.00 EUR paid to card clearing, the other 2.50 EUR released.", "cleared 10.00 EUR")
	if p, h, a := figures(); p != 490_00 || h != 0 || a != 490_00 {
		t.Fatalf("after clearing: %d %d %d", p, h, a)
	}
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations/"+approved+"/clear", url.Values{}))
	contains(t, "clear twice", pg, "Nothing changed: the payment is no longer held")
	if p, _, _ := figures(); p != 490_00 {
		t.Fatalf("cleared twice: posted %d", p)
	}

	// Reverse.
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("20.00", "pos", chosenPIN, "passed")))
	second := paymentTokens(pg.Body)[0]
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations/"+second+"/reverse", url.Values{}))
	contains(t, "reversed", pg, "Reversed: the hold of 20.00 EUR was released.", `data-testid="payment-hold">`, "released")
	if p, h, a := figures(); p != 490_00 || h != 0 || a != 490_00 {
		t.Fatalf("after reversal: %d %d %d", p, h, a)
	}
	lacks(t, "nothing left to settle", pg, `data-testid="payment-clear"`)
	// A refused amount answers the page (422): the form is kept in its row
	// while the hold is open; this one is not, so the flash says why.
	pg = e.cs.Post(t, page+"/authorizations/"+second+"/clear", url.Values{"amount": {"abc"}})
	if pg.Status != http.StatusUnprocessableEntity {
		t.Fatalf("bad clear amount: HTTP %d", pg.Status)
	}
	contains422(t, "bad clear amount", pg, "Not cleared: the amount must be a decimal amount")
	if n := e.count(t, `SELECT count(*) FROM card_authorizations WHERE card = $1`, e.card.Token); n != 5 {
		t.Fatalf("recorded decisions %d, want 5", n)
	}

	// Payments are audited on the authorization, not on the card: the
	// card's audit trail (and its reveals, made before the payments) is
	// not pushed out by payments.
	if n := e.count(t, `SELECT count(*) FROM audit_log WHERE action LIKE 'card.authorization%' AND resource_type = 'card'`); n != 0 {
		t.Fatalf("%d payment audit rows on the card", n)
	}
	if n := e.count(t, `SELECT count(*) FROM audit_log l JOIN card_authorizations a ON a.token::text = l.resource_token
		WHERE l.resource_type = 'card_authorization' AND a.card = $1 AND l.changes->>'card' = $2`, e.card.Token, e.card.Token); n != 7 {
		t.Fatalf("payment audit rows %d, want 7 (5 decisions, a clearing, a reversal)", n)
	}
	contains422(t, "reveals after payments", pg, `data-testid="card-reveals"`, `data-testid="card-payments-table"`)

	// The PIN typed is never stored or logged.
	for _, pin := range []string{wrongPIN, chosenPIN} {
		if n := e.count(t, `SELECT count(*) FROM audit_log WHERE changes::text LIKE '%"' || $1 || '"%'`, pin); n != 0 {
			t.Fatalf("the PIN reached the audit log")
		}
		if logs := e.env.Logs.String(); strings.Contains(logs, `"`+pin+`"`) || strings.Contains(logs, "pin="+pin) {
			t.Fatalf("the PIN reached the logs")
		}
	}
	// The distinctive wrong PIN, bare, anywhere (not next to other hex
	// digits, so a token that happens to contain it is not taken for it).
	bare := `(^|[^0-9a-fA-F])` + wrongPIN + `([^0-9a-fA-F]|$)`
	if n := e.count(t, `SELECT count(*) FROM audit_log WHERE changes::text ~ $1`, bare); n != 0 {
		t.Fatalf("the PIN reached the audit log (%d)", n)
	}
	if n := e.count(t, `SELECT count(*) FROM events WHERE data::text ~ $1 OR convert_from(body, 'UTF8') ~ $1`, bare); n != 0 {
		t.Fatalf("the PIN reached the events (%d)", n)
	}
	if regexp.MustCompile(bare).MatchString(e.env.Logs.String()) {
		t.Fatalf("the PIN reached the server log")
	}

	// Roles that may not manage cards see the payments but no simulator
	// and no settle buttons, and cannot post.
	pg = e.auditor.Get(t, page)
	contains(t, "auditor's card page", pg, `data-testid="card-payments-table"`, "incorrect PIN")
	lacks(t, "auditor's card page", pg, `data-testid="payment-simulator"`, `data-testid="payment-clear"`)
	if p := e.auditor.Post(t, page+"/authorizations", simulation("1.00", "pos", chosenPIN, "passed")); p.Status != http.StatusForbidden {
		t.Fatalf("auditor simulates: HTTP %d", p.Status)
	}

	// Production has no simulator: the page lacks it, the routes are unknown.
	e.env.Config.Mode = config.ModeProduction
	prod := apptest.Attach(t, e.env)
	b := prod.NewBrowser()
	b.Client.Jar = e.cs.Client.Jar // the session lives in the shared database
	pg = b.Get(t, page)
	contains(t, "production card page", pg, `data-testid="card-payments-table"`)
	lacks(t, "production card page", pg, `data-testid="payment-simulator"`, `data-testid="payment-clear"`, "Payment simulator")
	if p := b.Post(t, page+"/authorizations", simulation("1.00", "pos", chosenPIN, "passed")); p.Status != http.StatusNotFound {
		t.Fatalf("production simulation: HTTP %d", p.Status)
	}
}

// An expired card cannot pay: the card page says so, and the simulator's
// payment is declined with 54.
func TestCardPaymentExpiredCardCannotPay(t *testing.T) {
	t.Parallel()
	e := newCardsEnv(t)
	e.fund(t, 100_00)
	page := e.page(e.card)
	canPay := regexp.MustCompile(`Can pay</dt>\s*<dd[^>]*>(yes|no)<`)
	if m := canPay.FindStringSubmatch(e.cs.Get(t, page).Body); m == nil || m[1] != "yes" {
		t.Fatalf("active card: can pay %q", m)
	}
	if _, err := e.env.App.DB.Exec(`UPDATE cards SET expiry_month = 1, expiry_year = 2020 WHERE token = $1`, e.card.Token); err != nil {
		t.Fatal(err)
	}
	pg := e.cs.Get(t, page)
	if m := canPay.FindStringSubmatch(pg.Body); m == nil || m[1] != "no" {
		t.Fatalf("expired card: can pay %q", m)
	}
	pg = e.cs.follow(t, e.cs.Post(t, page+"/authorizations", simulation("1.00", "pos", chosenPIN, "passed")))
	contains(t, "expired card's payment", pg, "Declined (54 card expired)")
}
