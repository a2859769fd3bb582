package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/cards"
)

// TestCardPaymentSimulatorInTheBrowser: customer service sends a payment
// with the simulator (behind a second click, the PIN in a password field),
// sees the decision with its reason code in the card's payments, then
// clears it.
func TestCardPaymentSimulatorInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Payments Partner"})
	card, pan := cardHolder(t, env, p)
	pin, err := env.App.Cards.Reveal(cardPartnerCtx(p), card.Token, cards.RevealPIN)
	if err != nil {
		t.Fatal(err)
	}
	var bal string
	if err := env.App.DB.Get(&bal, `SELECT token::text FROM balances WHERE account = $1`, card.Account); err != nil {
		t.Fatal(err)
	}
	env.Fund(t, card.Account, bal, "EUR", 100_00)
	page := "/backoffice/cards/" + card.Token

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.open(page)
	if eval[bool](b, `document.querySelector('[data-testid="payment-simulator"] button').checkVisibility()`) {
		t.Fatal("the simulator's button is visible before the details are opened")
	}
	if typ := eval[string](b, `document.querySelector('[data-testid="payment-simulator"] input[name="pin"]').type`); typ != "password" {
		t.Fatalf("the PIN field is a %s field", typ)
	}
	b.do("open the simulator", chromedp.Click(chromedp.CSS(`[data-testid="payment-simulator-details"] > summary`)))
	b.waitVisible(`[data-testid="payment-simulator"] input[name="amount"]`)
	b.typeInto(`[data-testid="payment-simulator"] input[name="amount"]`, "42.50")
	b.typeInto(`[data-testid="payment-simulator"] input[name="pin"]`, pin.PIN)
	b.typeInto(`[data-testid="payment-simulator"] input[name="merchant_name"]`, "Corner Shop")
	b.clickNav(`[data-testid="payment-simulate"]`)
	if f := flashText(b); !strings.Contains(f, "Approved (00): 42.50 EUR held") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="payment-reason-code"]`); got != "00" {
		t.Fatalf("reason code %q", got)
	}
	if strings.Contains(b.html(), `value="`+pin.PIN+`"`) {
		t.Fatal("the PIN is shown back")
	}
	noCardNumber(b, "card page with payments", pan)
	screenshot(b, "card-payments")

	// A refused amount comes back in the payment's row as typed, marked and
	// explained, focused; the page fits 390 px. The old page redirected and
	// lost it: this part failed there.
	b.typeInto(`[data-testid="payment-clear-form"] input[name="amount"]`, "1,250")
	b.clickNav(`[data-testid="payment-clear"]`)
	clearAmount := `[data-testid="payment-clear-form"] input[name="amount"]`
	if got := eval[string](b, `document.querySelector('`+clearAmount+`').value`); got != "1,250" {
		t.Fatalf("the refused amount is %q", got)
	}
	if eval[string](b, `document.querySelector('`+clearAmount+`').getAttribute('aria-invalid')`) != "true" ||
		!strings.Contains(b.text(`[data-testid="payment-clear-form"] #amount-error`), "at most two decimals") {
		t.Fatal("the refused amount is not marked and explained beside it")
	}
	if !eval[bool](b, `document.activeElement === document.querySelector('`+clearAmount+`')`) {
		t.Error("the refused amount is not focused")
	}
	shootAt(b, "card-clear-refused", 1440)
	shootAt(b, "card-clear-refused", 390)
	noPageScroll(b, "the card page with a refused clear amount")
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.do("correct the amount", chromedp.SetValue(chromedp.CSS(clearAmount), "40"))
	b.clickNav(`[data-testid="payment-clear"]`)
	if f := flashText(b); !strings.Contains(f, "Cleared: 40.00 EUR paid to card clearing, the other 2.50 EUR released.") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="payment-hold"]`); !strings.Contains(got, "cleared") {
		t.Fatalf("hold %q", got)
	}
	var posted, held int64
	if err := env.App.DB.QueryRow(`SELECT posted, held FROM balances WHERE token = $1`, bal).Scan(&posted, &held); err != nil || posted != 60_00 || held != 0 {
		t.Fatalf("posted %d held %d (%v)", posted, held, err)
	}
}
