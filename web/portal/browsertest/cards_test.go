package browser_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/cards"
)

// cardPartnerCtx acts as the partner's API key, as the partner API does.
func cardPartnerCtx(p *apptest.Partner) context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID,
		PartnerID: p.ID, MasterMerchant: p.Merchant})
}

// cardHolder creates Elena Dimova with an EUR account and a virtual card
// on it; it returns the card and its number (read through the partner's
// reveal halves).
func cardHolder(t *testing.T, env *apptest.Env, p *apptest.Partner) (emi.Card, string) {
	t.Helper()
	r := partnerCall(t, env, p, "/v2/users", "user_create", map[string]any{"first_name": "Elena", "last_name": "Dimova",
		"email": "elena.dimova@cards.test"})
	if r.Status != http.StatusCreated {
		t.Fatalf("user_create: %s", r)
	}
	acc := openAccountVia(t, env, p, map[string]any{"program": "account_eur", "user": r.Data["token"]})
	ctx := cardPartnerCtx(p)
	c, err := env.App.Cards.Create(ctx, emi.CardCreate{Account: acc["token"].(string), Type: emi.CardVirtual})
	if err != nil {
		t.Fatal(err)
	}
	first, err := env.App.Cards.Reveal(ctx, c.Token, cards.RevealFirstHalf)
	if err != nil {
		t.Fatal(err)
	}
	second, err := env.App.Cards.Reveal(ctx, c.Token, cards.RevealSecondHalf)
	if err != nil {
		t.Fatal(err)
	}
	return c, first.FirstHalf + second.SecondHalf
}

// luhnRun finds digit runs (single spaces allowed) standing on their own.
var luhnRun = regexp.MustCompile(`(?:^|[^0-9A-Za-z])([0-9](?: ?[0-9]){12,})(?:$|[^0-9A-Za-z])`)

// cardNumbersIn returns the Luhn-valid 13–19 digit runs of a page.
func cardNumbersIn(html string) []string {
	var out []string
	for _, m := range luhnRun.FindAllStringSubmatch(html, -1) {
		d := strings.ReplaceAll(m[1], " ", "")
		if len(d) >= 13 && len(d) <= 19 && cards.LuhnValid(d) {
			out = append(out, d)
		}
	}
	return out
}

// noCardNumber fails the test when the page shows a card number (P2).
func noCardNumber(b *tab, what, pan string) {
	b.t.Helper()
	h := b.html()
	if runs := cardNumbersIn(h); len(runs) > 0 {
		b.t.Fatalf("%s shows Luhn-valid digit runs %v", what, runs)
	}
	for _, form := range []string{pan, groupByFour(pan, " "), groupByFour(pan, "-")} {
		if strings.Contains(h, form) {
			b.t.Fatalf("%s shows the card number", what)
		}
	}
}

func groupByFour(pan, sep string) string {
	var parts []string
	for i := 0; i < len(pan); i += 4 {
		parts = append(parts, pan[i:min(i+4, len(pan))])
	}
	return strings.Join(parts, sep)
}

// TestCardSearchBlockAndRevealInTheBrowser: customer service finds a card
// by its full number (which no page shows back), then by its holder's
// token (the holder's cards under a line linking to them; the old search
// found nothing by it), opens it, blocks it with a
// reason code (fraud suspected) and a note behind a second click, then
// reveals its number (an action of the bar) with a current TOTP code (one code, one reveal) and a reason: the number
// appears, the reveal is audited and listed, and the number disappears
// after the timeout. A wrong code shows the error in place.
func TestCardSearchBlockAndRevealInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Cards Partner"})
	card, pan := cardHolder(t, env, p)
	page := "/backoffice/cards/" + card.Token

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	if nav := b.navLinks(); !slices.Contains(nav, "Cards") || !slices.Contains(nav, "SMS outbox") {
		t.Fatalf("customer service navigation %q", nav)
	}

	// Search by the full number, typed as printed on the card.
	b.clickNav(`nav[aria-label="Main"] a[href="/backoffice/cards"]`)
	b.typeInto(`[data-testid="cards-search"] input[name="q"]`, groupByFour(pan, " "))
	b.clickNav(`[data-testid="cards-search"] button[type="submit"]`)
	if got := b.path(); got != "/backoffice/cards" {
		t.Fatalf("after the search the browser is at %s: the number must not be in the address", got)
	}
	rows := b.texts(`[data-testid="card-row"]`)
	if len(rows) != 1 || !strings.Contains(rows[0], card.MaskedPAN()) || !strings.Contains(rows[0], "Elena Dimova") {
		t.Fatalf("search rows %q", rows)
	}
	if v := eval[string](b, `document.querySelector('[data-testid="cards-search"] input[name="q"]').value`); v != cards.MaskPAN(pan) {
		t.Fatalf("the search box shows %q, want the masked number", v)
	}
	noCardNumber(b, "search results", pan)
	screenshot(b, "cards-search")

	// Search by the cardholder's token (copied from their page): their
	// cards, under a line naming them with a link to their page.
	b.typeInto(`[data-testid="cards-search"] input[name="q"]`, card.User)
	b.clickNav(`[data-testid="cards-search"] button[type="submit"]`)
	if rows := b.texts(`[data-testid="card-row"]`); len(rows) != 1 || !strings.Contains(rows[0], card.MaskedPAN()) {
		t.Fatalf("search by the cardholder's token: rows %q", rows)
	}
	if got := b.text(`[data-testid="cards-owner"]`); !strings.Contains(got, "The card of the person Elena Dimova") {
		t.Fatalf("the owner line reads %q", got)
	}
	if h := eval[string](b, `document.querySelector('[data-testid="cards-owner-link"]').getAttribute('href')`); h != "/backoffice/users/"+card.User {
		t.Fatalf("the owner line links to %q", h)
	}
	screenshot(b, "cards-search-owner")

	b.clickNav(`[data-testid="card-row"] a[href="` + page + `"]`)
	if got := b.text(`[data-testid="card-status"]`); got != "active" {
		t.Fatalf("status %q", got)
	}
	noCardNumber(b, "card page", pan)

	// Block: behind a second click, and the reason code is required.
	if eval[bool](b, `document.querySelector('[data-testid="card-block-form"] button').checkVisibility()`) {
		t.Fatal("the block button is visible before the details are opened")
	}
	b.do("open the form", chromedp.Click(chromedp.CSS(`[data-testid="card-block-details"] > summary`)))
	b.waitVisible(`[data-testid="card-block-form"] select[name="reason_code"]`)
	b.do("submit without a reason code", chromedp.Click(chromedp.CSS(`[data-testid="card-block"]`)))
	if !eval[bool](b, `document.querySelector('[data-testid="card-block-form"] select[name="reason_code"]').validity.valueMissing`) {
		t.Fatal("the reason code is not required by the form")
	}
	if st := dbCardStatus(t, env, card.Token); st != emi.CardActive {
		t.Fatalf("status after the empty submit: %s", st)
	}
	b.do("choose the reason", chromedp.SetValue(chromedp.CSS(`[data-testid="card-block-form"] select[name="reason_code"]`), emi.BlockFraudSuspected))
	b.do("write the note", sendKeys(`[data-testid="card-block-form"] textarea[name="reason"]`, "Customer reports payments they did not make"))
	screenshot(b, "card-block-form")
	b.clickNav(`[data-testid="card-block"]`)
	if f := flashText(b); !strings.Contains(f, "Card blocked (fraud suspected)") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="card-status"]`); got != "inactive" {
		t.Fatalf("status after the change %q", got)
	}
	hist := b.texts(`[data-testid="card-history-row"]`)
	if len(hist) < 2 || !strings.Contains(hist[0], "Customer reports payments they did not make") || !strings.Contains(hist[0], "fraud suspected") ||
		!strings.Contains(hist[0], "Sandbox Customer Service (you)") {
		t.Fatalf("history %q", hist)
	}
	if st := dbCardStatus(t, env, card.Token); st != emi.CardInactive {
		t.Fatalf("database status %s", st)
	}

	// The reveal is an action of the bar too: behind a second click.
	b.do("open the reveal", chromedp.Click(chromedp.CSS(`[data-testid="card-reveal-details"] > summary`)))
	b.waitVisible(`[data-testid="card-reveal-form"] input[name="secret"]`)

	// A wrong code: the error shows in place, nothing is revealed.
	env.Clock.Advance(30 * time.Second)
	good := env.TOTP(t, apptest.CSEmail)
	wrong := string('0'+(good[0]-'0'+1)%10) + good[1:]
	b.typeInto(`[data-testid="card-reveal-form"] input[name="secret"]`, wrong)
	writeReason(b, "Customer asks for the number")
	b.do("reveal with a wrong password", chromedp.Click(chromedp.CSS(`[data-testid="card-reveal-button"]`)))
	b.waitVisible(`#card-reveal #secret-error`)
	if got := b.text(`#card-reveal #secret-error`); got != "is not correct" {
		t.Fatalf("secret error %q", got)
	}
	if got := b.path(); got != page {
		t.Fatalf("the refused reveal left the page for %s", got)
	}
	noCardNumber(b, "refused reveal", pan)

	// The reveal. The production timeout is 30 seconds; the test shortens
	// it to 2 on the client, before the page's script arms it, and checks
	// the server asked for 30.
	eval[bool](b, `document.addEventListener("htmx:afterSwap", function (e) {
		var el = e.target.querySelector && e.target.querySelector("[data-autohide]");
		if (el) { window.__autohide = el.getAttribute("data-autohide"); el.setAttribute("data-autohide", "2"); }
	}, true); true`)
	env.Clock.Advance(30 * time.Second)
	b.typeInto(`[data-testid="card-reveal-form"] input[name="secret"]`, env.TOTP(t, apptest.CSEmail))
	writeReason(b, "Customer must pay a hotel by phone")
	b.do("reveal", chromedp.Click(chromedp.CSS(`[data-testid="card-reveal-button"]`)))
	b.waitVisible(`[data-testid="pan"]`)
	if got := b.text(`[data-testid="pan"]`); got != groupByFour(pan, " ") {
		t.Fatalf("revealed %q, want the card number in groups of four", cards.MaskPAN(strings.ReplaceAll(got, " ", "")))
	}
	if got := eval[string](b, `window.__autohide || ""`); got != "30" {
		t.Fatalf("the server asked to hide the number after %q seconds, want 30", got)
	}
	if got := b.path(); got != page {
		t.Fatalf("the reveal changed the address to %s", got)
	}
	screenshot(b, "card-revealed")
	var audited int
	if err := env.App.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'card.reveal' AND resource_token = $1
		AND actor_type = 'staff' AND outcome = 'success' AND changes->>'reason' = 'Customer must pay a hotel by phone'`, card.Token); err != nil || audited != 1 {
		t.Fatalf("audit rows of the reveal: %d %v", audited, err)
	}
	var denied int
	_ = env.App.DB.Get(&denied, `SELECT count(*) FROM audit_log WHERE action = 'card.reveal' AND resource_token = $1
		AND actor_type = 'staff' AND outcome = 'denied'`, card.Token)
	if denied != 1 {
		t.Fatalf("%d denied reveal rows, want the wrong password's", denied)
	}

	// The number leaves the page after the timeout.
	b.do("wait for the number to be hidden", pollTrue(`document.querySelector('[data-testid="revealed-pan"]').hasAttribute("data-hidden")`))
	if got := b.text(`[data-testid="revealed-pan"]`); !strings.HasPrefix(got, "Hidden.") {
		t.Fatalf("after the timeout the box shows %q", got)
	}
	noCardNumber(b, "card page after the timeout", pan)

	// The card page lists the reveal, and never shows the number itself.
	b.open(page)
	reveals := b.texts(`[data-testid="reveal-row"]`)
	if len(reveals) == 0 || !strings.Contains(reveals[0], "Customer must pay a hotel by phone") || !strings.Contains(reveals[0], "card number") ||
		!strings.Contains(reveals[0], "success") || !strings.Contains(reveals[0], "Sandbox Customer Service (you)") {
		t.Fatalf("reveals %q", reveals)
	}
	noCardNumber(b, "card page with its reveals", pan)
	screenshot(b, "card-page")
	noCSPViolations(t, b)
}

// writeReason replaces the reveal form's reason (chromedp.Clear needs a
// text node, which an empty textarea has not).
func writeReason(b *tab, text string) {
	b.t.Helper()
	const sel = `[data-testid="card-reveal-form"] textarea[name="reason"]`
	eval[bool](b, `document.querySelector('`+sel+`').value = ""; true`)
	b.do("write the reason", sendKeys(sel, text))
}

func dbCardStatus(t *testing.T, env *apptest.Env, token string) string {
	t.Helper()
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM cards WHERE token = $1`, token); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCardActionBarStolenAndReplacementInTheBrowser: at 1440 px the card's
// actions sit at the top of its page, within the first viewport, beside its
// status; customer service blocks the card as stolen (a reason code), the
// history shows it, the card is terminated and the bar offers a
// replacement, which is issued on the account and links back to the old
// card. No horizontal page scroll at 390 px. The old page put "Set
// inactive…" 1,600 px down, without reason codes or replacement: this test
// failed there.
func TestCardActionBarStolenAndReplacementInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Stolen Cards Partner"})
	card, pan := cardHolder(t, env, p)
	page := "/backoffice/cards/" + card.Token

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.open(page)
	inFirstViewport := func(sel string) bool {
		return eval[bool](b, `(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect();
			return window.scrollY === 0 && r.top >= 0 && r.top < window.innerHeight && r.bottom <= window.innerHeight; })()`)
	}
	for _, sel := range []string{`[data-testid="card-actions"] h2`, `[data-testid="card-block-details"] > summary`,
		`[data-testid="card-reveal-details"] > summary`, `[data-testid="card-pin-send-details"] > summary`} {
		if !inFirstViewport(sel) {
			t.Fatalf("%s is not in the first viewport at 1440 px (top %v)", sel,
				eval[float64](b, `document.querySelector('`+sel+`').getBoundingClientRect().top`))
		}
	}
	if top, details := eval[float64](b, `document.querySelector('[data-testid="card-actions"]').getBoundingClientRect().top`),
		eval[float64](b, `document.querySelector('[data-testid="card-details"]').getBoundingClientRect().top`); top > details {
		t.Fatalf("the actions (top %v) are below the card's details (top %v)", top, details)
	}
	shootAt(b, "card-actionbar", 1440)
	shootAt(b, "card-actionbar", 390)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the card page is %d px wide at 390 px", w)
	}
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	// Block as stolen, with a note.
	b.do("open the block form", chromedp.Click(chromedp.CSS(`[data-testid="card-block-details"] > summary`)))
	b.waitVisible(`[data-testid="card-block-form"] select[name="reason_code"]`)
	b.do("choose stolen", chromedp.SetValue(chromedp.CSS(`[data-testid="card-block-form"] select[name="reason_code"]`), emi.BlockStolen))
	b.do("write the note", sendKeys(`[data-testid="card-block-form"] textarea[name="reason"]`, "Handbag stolen on the tram"))
	shootAt(b, "card-block-stolen", 1440)
	b.clickNav(`[data-testid="card-block"]`)
	if f := flashText(b); !strings.Contains(f, "Card reported stolen and terminated") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="card-status"]`); got != "terminated" {
		t.Fatalf("status %q", got)
	}
	if got := b.text(`[data-testid="card-status-reason"]`); got != "reported stolen" {
		t.Fatalf("status reason %q", got)
	}
	hist := b.texts(`[data-testid="card-history-row"]`)
	if len(hist) < 2 || !strings.Contains(hist[0], "stolen") || !strings.Contains(hist[0], "Handbag stolen on the tram") ||
		!strings.Contains(hist[0], "terminated") {
		t.Fatalf("history %q", hist)
	}
	if st := dbCardStatus(t, env, card.Token); st != emi.CardTerminated {
		t.Fatalf("database status %s", st)
	}
	// No unblock is offered; the replacement is, at the top.
	if n := b.count(`[data-testid="card-active-form"]`); n != 0 {
		t.Fatal("a stolen card offers an unblock")
	}
	if !inFirstViewport(`[data-testid="card-replace-offer"]`) {
		t.Fatal("the replacement offer is not in the first viewport")
	}
	shootAt(b, "card-stolen", 1440)
	shootAt(b, "card-stolen", 390)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the stolen card's page is %d px wide at 390 px", w)
	}
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.do("open the replacement form", chromedp.Click(chromedp.CSS(`[data-testid="card-replace-details"] > summary`)))
	b.waitVisible(`[data-testid="card-replace"]`)
	b.do("write the reason", sendKeys(`[data-testid="card-replace-form"] textarea[name="reason"]`, "Replacement after the theft"))
	b.clickNav(`[data-testid="card-replace"]`)
	if f := flashText(b); !strings.Contains(f, "Replacement card") || !strings.Contains(f, "card.replaced") {
		t.Fatalf("flash %q", f)
	}
	newPath := b.path()
	if newPath == page || !strings.HasPrefix(newPath, "/backoffice/cards/") {
		t.Fatalf("after the replacement the browser is at %s", newPath)
	}
	if got := b.text(`[data-testid="card-status"]`); got != "active" {
		t.Fatalf("replacement status %q", got)
	}
	if href := eval[string](b, `document.querySelector('[data-testid="card-replaces"]').getAttribute("href")`); href != page {
		t.Fatalf("the replacement links %q, want the old card", href)
	}
	var replaces string
	if err := env.App.DB.Get(&replaces, `SELECT replaces::text FROM cards WHERE token = $1`, strings.TrimPrefix(newPath, "/backoffice/cards/")); err != nil ||
		replaces != card.Token {
		t.Fatalf("replaces %q %v", replaces, err)
	}
	noCardNumber(b, "the replacement's page", pan)
	shootAt(b, "card-replacement", 1440)
	shootAt(b, "card-replacement", 390)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.open(page)
	if href := eval[string](b, `document.querySelector('[data-testid="card-replaced-by"]').getAttribute("href")`); href != newPath {
		t.Fatalf("the old card links %q, want the replacement", href)
	}
	if n := b.count(`[data-testid="card-replace-form"]`); n != 0 {
		t.Fatal("a replaced card still offers a replacement")
	}
	noCSPViolations(t, b)
}
