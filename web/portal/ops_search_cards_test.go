package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestNameSearchListsThePersonsCards: customer service searching a person
// by name sees each person's cards under them (last four digits, status,
// account), linked to the card page, and the global search lists the cards
// too. A namesake at another partner keeps their own cards, a card tied to
// a person of another partner is not listed under a name of that partner,
// and a role that does not see cards gets none. The old search listed the
// person without cards, and the global search found no card by a name: this
// test failed there.
func TestNameSearchListsThePersonsCards(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t) // Mara Velikova, with accounts, at "Accounts Partner"
	card := issueCard(t, a.env, a.p, emi.CardCreate{Account: a.eurTok, Type: emi.CardVirtual})
	other := a.env.NewPartner(t, emi.PartnerCreate{Name: "Namesake Partner"})
	namesake := createPerson(t, a.env, other, map[string]any{"first_name": "Mara", "last_name": "Velikova"})
	nsAcc := openAccount(t, a.env, other, map[string]any{"program": "account_eur", "user": namesake})["token"].(string)
	nsCard := issueCard(t, a.env, other, emi.CardCreate{Account: nsAcc, Type: emi.CardVirtual})
	// A card of the first partner wrongly tied to a person of the other
	// one (as a broken import would): a name must not reach it.
	stray := issueCard(t, a.env, a.p, emi.CardCreate{Account: a.gbpTok, Type: emi.CardVirtual})
	if _, err := a.env.App.DB.Exec(`UPDATE cards SET user_token = $1 WHERE token = $2`, namesake, stray.Token); err != nil {
		t.Fatal(err)
	}

	p := a.cs.Get(t, "/backoffice/users?q="+url.QueryEscape("mara velik"))
	if p.Status != http.StatusOK {
		t.Fatalf("HTTP %d", p.Status)
	}
	page := doc(t, p.Body)
	cardsOf := map[string][]string{}
	page.Find(`[data-testid="user-row"]`).Each(func(_ int, row *goquery.Selection) {
		user := strings.TrimPrefix(row.Find(`a[href^="/backoffice/users/"]`).AttrOr("href", ""), "/backoffice/users/")
		row.Find(`[data-testid="person-card"]`).Each(func(_ int, c *goquery.Selection) {
			link := c.Find(`[data-testid="person-card-link"]`)
			cardsOf[user] = append(cardsOf[user], link.AttrOr("href", "")+" "+strings.TrimSpace(link.Text())+" "+
				strings.TrimSpace(c.Find(".badge").Text())+" "+c.Find(`a[href^="/backoffice/accounts/"]`).AttrOr("href", ""))
		})
	})
	want := map[string][]string{
		a.user:   {"/backoffice/cards/" + card.Token + " •••• " + card.Last4 + " active /backoffice/accounts/" + a.eurTok},
		namesake: {"/backoffice/cards/" + nsCard.Token + " •••• " + nsCard.Last4 + " active /backoffice/accounts/" + nsAcc},
	}
	for user, w := range want {
		if got := cardsOf[user]; len(got) != 1 || got[0] != w[0] {
			t.Errorf("cards under %s: %q, want %q", user, got, w)
		}
	}
	if strings.Contains(p.Body, stray.Token) {
		t.Error("a card of another partner's person is listed under a name")
	}
	if pg := a.cs.Get(t, "/backoffice/users?q="+url.QueryEscape(a.email)); !strings.Contains(pg.Body, "/backoffice/cards/"+card.Token) {
		t.Error("a search by e-mail does not list the person's card")
	}

	s := doc(t, a.cs.Post(t, "/backoffice/search", url.Values{"q": {"Velikova"}}).Body)
	if s.Find(`a[href="/backoffice/cards/`+card.Token+`"]`).Length() != 1 || s.Find(`a[href="/backoffice/cards/`+nsCard.Token+`"]`).Length() != 1 {
		t.Error("the global search by name does not list both namesakes' cards")
	}
	if s.Find(`a[href="/backoffice/cards/`+stray.Token+`"]`).Length() != 0 {
		t.Error("the global search reaches a card through another partner's person")
	}

	uw := a.env.NewBrowser()
	uw.SignIn(t, apptest.UnderwriterEmail)
	if pg := uw.Get(t, "/backoffice/users?q=Velikova"); pg.Status != http.StatusOK || strings.Contains(pg.Body, `data-testid="person-card"`) {
		t.Errorf("an underwriter (no cards permission): HTTP %d, cards shown: %v", pg.Status, strings.Contains(pg.Body, "person-card"))
	}
}
