package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

func availableMinor(t *testing.T, env *apptest.Env, account string) int64 {
	t.Helper()
	var n int64
	if err := env.App.DB.Get(&n, `SELECT available FROM balances WHERE account = $1`, account); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMoneyInTheBrowser: customer service simulates an incoming SEPA
// credit on an account page and asks for a manual adjustment; a payment to
// an unknown IBAN lands in the suspense queue and customer service
// requests its assignment to the account (a refused request keeps what
// was typed); compliance approves the adjustment and the assignment (the
// requester could not), then returns a second suspense item.
func TestMoneyInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	t.Cleanup(func() {
		var bad []int64
		if err := env.App.DB.Select(&bad, `SELECT txn FROM ledger_entries GROUP BY txn, currency HAVING sum(amount) <> 0`); err != nil || len(bad) > 0 {
			t.Errorf("ledger transactions that do not sum to zero: %v %v", bad, err)
		}
	})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Money Partner"})
	eur, _ := accountHolder(t, env, p)
	tok := eur["token"].(string)

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.open("/backoffice/accounts/" + tok)
	b.do("open the simulator", chromedp.Click(chromedp.CSS(`[data-testid="simulate-details"] > summary`)))
	b.waitVisible(`[data-testid="simulate-form"] input[name="amount"]`)
	b.do("fill the payment",
		sendKeys(`[data-testid="simulate-form"] input[name="amount"]`, "120.00"),
		sendKeys(`[data-testid="simulate-form"] input[name="payer_name"]`, "Acme GmbH"),
		sendKeys(`[data-testid="simulate-form"] input[name="reference"]`, "Invoice 7"))
	screenshot(b, "money-simulate-on-account")
	b.clickNav(`[data-testid="simulate"]`)
	if f := flashText(b); !strings.Contains(f, "Credited: 120.00 EUR") {
		t.Fatalf("flash %q", f)
	}
	if got := availableMinor(t, env, tok); got != 12000 {
		t.Fatalf("available %d", got)
	}

	b.do("open the adjustment form", chromedp.Click(chromedp.CSS(`[data-testid="request-adjustment-details"] > summary`)))
	b.waitVisible(`[data-testid="request-adjustment-form"] input[name="amount"]`)
	b.do("fill the adjustment",
		chromedp.SetValue(chromedp.CSS(`[data-testid="request-adjustment-form"] select[name="direction"]`), "debit"),
		sendKeys(`[data-testid="request-adjustment-form"] input[name="amount"]`, "20.00"),
		sendKeys(`[data-testid="request-adjustment-form"] textarea[name="reason"]`, "Duplicate credit of invoice 7"))
	b.clickNav(`[data-testid="request-adjustment"]`)
	if f := flashText(b); !strings.Contains(f, "Awaiting a second staff member") {
		t.Fatalf("flash %q", f)
	}
	if n := b.count(`[data-testid="approve-adjustment"]`); n != 0 {
		t.Fatal("the requester is offered the approval")
	}
	screenshot(b, "money-adjustment-requested")

	b.open("/backoffice/suspense")
	b.do("open the simulator", chromedp.Click(chromedp.CSS(`[data-testid="simulate-details"] > summary`)))
	b.waitVisible(`[data-testid="simulate-form"] input[name="to_iban"]`)
	b.do("fill the payment",
		sendKeys(`[data-testid="simulate-form"] input[name="amount"]`, "9.99"),
		sendKeys(`[data-testid="simulate-form"] input[name="payer_name"]`, "Unknown Sender Ltd"),
		sendKeys(`[data-testid="simulate-form"] input[name="to_iban"]`, "DE75 5121 0800 1245 1261 99"))
	b.clickNav(`[data-testid="simulate"]`)
	if f := flashText(b); !strings.Contains(f, "suspense queue") {
		t.Fatalf("flash %q", f)
	}
	rows := b.texts(`[data-testid="suspense-row"]`)
	if len(rows) != 1 || !strings.Contains(rows[0], "9.99 EUR") || !strings.Contains(rows[0], "Unknown Sender Ltd") ||
		!strings.Contains(rows[0], "unknown identifier") {
		t.Fatalf("suspense rows %q", rows)
	}
	screenshot(b, "money-suspense-queue")

	// Customer service requests the assignment: a wrong IBAN first (the
	// form comes back with what was typed), then the account.
	b.do("open the assign form", chromedp.Click(chromedp.CSS(`[data-testid="assign-details"] > summary`)))
	b.waitVisible(`[data-testid="assign-form"] input[name="to"]`)
	b.do("fill the assignment",
		sendKeys(`[data-testid="assign-form"] input[name="to"]`, "DE75 5121 0800 1245 1261 99"),
		sendKeys(`[data-testid="assign-form"] textarea[name="reason"]`, "Customer sent the payment slip"))
	if st := b.clickNav(`[data-testid="assign"]`); st != 422 {
		t.Fatalf("refused request: HTTP %d", st)
	}
	to := run(b, "the kept target", chromedp.Value(chromedp.CSS(`[data-testid="assign-form"] input[name="to"]`)))
	reason := run(b, "the kept reason", chromedp.Value(chromedp.CSS(`[data-testid="assign-form"] textarea[name="reason"]`)))
	if to != "DE75 5121 0800 1245 1261 99" || reason != "Customer sent the payment slip" ||
		!strings.Contains(b.text(`[data-testid="assign-error"]`), "matches no balance held in emi") {
		t.Fatalf("kept form: to %q reason %q error %q", to, reason, b.text(`[data-testid="assign-error"]`))
	}
	screenshot(b, "money-suspense-assign-refused")
	b.typeInto(`[data-testid="assign-form"] input[name="to"]`, tok)
	b.clickNav(`[data-testid="assign"]`)
	if f := flashText(b); !strings.Contains(f, "Nothing moves until a second staff member approves it") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="assignment-awaiting-second"]`); !strings.Contains(got, "someone other than you must approve it") {
		t.Fatalf("awaiting %q", got)
	}
	if n := b.count(`[data-testid="approve-assignment"]`); n != 0 {
		t.Fatal("the requester is offered the approval")
	}
	if got := availableMinor(t, env, tok); got != 12000 {
		t.Fatalf("available after the request %d", got)
	}
	screenshot(b, "money-suspense-assignment-requested")

	c := newTab(t, env)
	c.signIn(env, apptest.ComplianceEmail)
	c.clickNav(`nav[aria-label="Main"] a[href="/backoffice/adjustments"]`)
	screenshot(c, "money-adjustments-queue")
	c.clickNav(`[data-testid="approve-adjustment"]`)
	if f := flashText(c); !strings.Contains(f, "Adjustment approved and posted: debit 20.00 EUR") {
		t.Fatalf("flash %q", f)
	}
	if got := availableMinor(t, env, tok); got != 10000 {
		t.Fatalf("available after the debit %d", got)
	}
	c.clickNav(`nav[aria-label="Main"] a[href="/backoffice/suspense"]`)
	pending := c.text(`[data-testid="pending-assignment"]`)
	for _, want := range []string{"Sandbox Customer Service", tok, "Customer sent the payment slip"} {
		if !strings.Contains(pending, want) {
			t.Fatalf("pending assignment %q lacks %q", pending, want)
		}
	}
	screenshot(c, "money-suspense-assignment-pending")
	c.clickNav(`[data-testid="approve-assignment"]`)
	if f := flashText(c); !strings.Contains(f, "Approved and assigned: 9.99 EUR credited to account "+tok) {
		t.Fatalf("flash %q", f)
	}
	if got := availableMinor(t, env, tok); got != 10999 {
		t.Fatalf("available after the assignment %d", got)
	}
	if n := c.count(`[data-testid="suspense-row"]`); n != 0 {
		t.Fatalf("%d open items after the assignment", n)
	}

	// A second unknown payment, returned.
	c.do("open the simulator", chromedp.Click(chromedp.CSS(`[data-testid="simulate-details"] > summary`)))
	c.waitVisible(`[data-testid="simulate-form"] input[name="to_iban"]`)
	c.do("fill the payment",
		sendKeys(`[data-testid="simulate-form"] input[name="amount"]`, "5.00"),
		sendKeys(`[data-testid="simulate-form"] input[name="payer_name"]`, "Unknown Sender Ltd"),
		sendKeys(`[data-testid="simulate-form"] input[name="to_iban"]`, "DE75 5121 0800 1245 1261 99"))
	c.clickNav(`[data-testid="simulate"]`)
	c.do("open the return form", chromedp.Click(chromedp.CSS(`[data-testid="return-details"] > summary`)))
	c.waitVisible(`[data-testid="return-form"] textarea[name="reason"]`)
	c.do("write the reason", sendKeys(`[data-testid="return-form"] textarea[name="reason"]`, "No such customer"))
	c.clickNav(`[data-testid="return"]`)
	if f := flashText(c); !strings.Contains(f, "Returned to the sender") {
		t.Fatalf("flash %q", f)
	}
	if n := c.count(`[data-testid="suspense-row"]`); n != 0 {
		t.Fatalf("%d open items after the return", n)
	}
	noCSPViolations(t, b, c)
}
