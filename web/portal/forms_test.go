package portal_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestRefusedAdjustmentKeepsWhatWasTyped: a refused adjustment request
// answers the account page (422) with the form open, the direction,
// balance, amount and reason as typed, each error beside its field and the
// first refused field focused; a decimal comma is an amount. On the old
// code the page was a redirect with the form folded and empty, and "12,50"
// was refused: this test failed there.
func TestRefusedAdjustmentKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	acc := accountHref(a.eurTok)
	post := func(form url.Values) string {
		t.Helper()
		p := a.cs.Post(t, acc+"/adjustments", form)
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%v: HTTP %d (to %q), want the page again with 422", form, p.Status, p.Location)
		}
		if !regexp.MustCompile(`<details class="confirm account-action" data-testid="request-adjustment-details" open`).MatchString(p.Body) {
			t.Errorf("%v: the form is folded", form)
		}
		return p.Body
	}

	body := post(url.Values{"direction": {"debit"}, "currency": {"EUR"}, "amount": {"999,99"}, "reason": {"refund of the double fee"}})
	for _, want := range []string{`<option value="debit" selected>`, `value="999,99"`, `refund of the double fee</textarea>`,
		`id="amount-error">is more than the available balance`, `aria-describedby="amount-error" aria-invalid="true" autofocus`} {
		if !strings.Contains(body, want) {
			t.Errorf("a debit over the balance: %s missing", want)
		}
	}
	body = post(url.Values{"direction": {"credit"}, "currency": {"EUR"}, "amount": {"1,250"}, "reason": {""}})
	for _, want := range []string{`value="1,250"`, `id="amount-error">must be an amount`, `id="reason-error">give a reason`} {
		if !strings.Contains(body, want) {
			t.Errorf("an ambiguous amount and no reason: %s missing", want)
		}
	}
	var n int
	if err := a.env.App.DB.Get(&n, `SELECT count(*) FROM adjustment_requests`); err != nil || n != 0 {
		t.Fatalf("refused requests left %d rows (%v)", n, err)
	}

	p := a.cs.Post(t, acc+"/adjustments", url.Values{"direction": {"credit"}, "currency": {"EUR"}, "amount": {"12,50"}, "reason": {"goodwill"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("12,50: HTTP %d", p.Status)
	}
	var amount int64
	if err := a.env.App.DB.Get(&amount, `SELECT amount FROM adjustment_requests`); err != nil || amount != 1250 {
		t.Fatalf("12,50 was requested as %d minor units (%v)", amount, err)
	}
}

// TestWatchlistSourceIsAWebLink: a watch-list source is an http(s) address
// shown as a link; javascript:, data: and other schemes are refused at
// input, beside the field, with the entry kept. The old code stored
// "javascript:alert(1)": this test failed there.
func TestWatchlistSourceIsAWebLink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.env.NewBrowser()
	c.SignIn(t, "compliance@sandbox.emi")
	for _, src := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd",
		"ftp://news.example/x", "news.example/article", "https://", "https://user:pw@news.example/"} {
		p := c.Post(t, "/backoffice/watchlist", url.Values{"name": {"Ivo Hostile"}, "category": {"fraud"}, "note": {"kept"}, "source": {src}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="source-error">must be a web address`) ||
			!strings.Contains(p.Body, `value="Ivo Hostile"`) {
			t.Errorf("source %q: HTTP %d, want 422 with the reason beside the source and the name kept", src, p.Status)
		}
	}
	var n int
	if err := f.env.App.DB.Get(&n, `SELECT count(*) FROM adverse_media_watchlist WHERE name = 'Ivo Hostile'`); err != nil || n != 0 {
		t.Fatalf("refused sources stored %d entries (%v)", n, err)
	}
	p := c.Post(t, "/backoffice/watchlist", url.Values{"name": {"Ivo Linked"}, "category": {"fraud"}, "source": {"https://news.example/ivo?a=1&b=2"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("an https source: HTTP %d", p.Status)
	}
	if l := c.Get(t, "/backoffice/watchlist"); !strings.Contains(l.Body, `href="https://news.example/ivo?a=1&amp;b=2"`) {
		t.Error("the source is not a link")
	}
}
