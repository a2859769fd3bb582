package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestCardSearchByOwnerToken: the card search by a person's token lists
// that person's cards (their page lists the same), with a line naming
// whose cards these are and linking to the person; any other person's
// cards stay out. A token of nobody, or of a person without cards, is an
// empty list that says so (not a 500); something shaped like a token
// that is not one is refused beside the field (422). The old search
// looked the token up among card tokens only and found nothing: this
// test failed there.
func TestCardSearchByOwnerToken(t *testing.T) {
	t.Parallel()
	e := newCardsEnv(t)
	// One card an account: Mara's second card is on a second account.
	acc2 := openAccount(t, e.env, e.p, map[string]any{"program": "account_eur", "user": e.user})["token"].(string)
	second := issueCard(t, e.env, e.p, emi.CardCreate{Account: acc2, Type: emi.CardVirtual})
	e.pans = append(e.pans, cardPAN(t, e.env, e.p, second.Token))
	link := func(c emi.Card) string { return `href="/backoffice/cards/` + c.Token + `"` }
	search := func(b scanner, q string) apptest.Page {
		return b.Post(t, "/backoffice/cards", url.Values{"q": {q}})
	}
	nobodyEmpty := "No card has this token, and no person or company with this token has a card."

	t.Run("a person's token lists their cards and names them", func(t *testing.T) {
		for _, q := range []string{e.user, strings.ToUpper(e.user), " " + e.user + " "} {
			pg := search(e.cs, q)
			contains(t, "person's token", pg, link(e.card), link(second))
			lacks(t, "person's token", pg, link(e.plastic), link(e.loose))
			if n := cardRowCount(t, pg); n != 2 {
				t.Errorf("%q: %d rows, want Mara's 2", q, n)
			}
			textHas(t, "person's token", pg, "cards-owner", "The 2 cards of the person", "Mara Velikova")
			if h := testID(dom(t, pg), "cards-owner-link").AttrOr("href", ""); h != "/backoffice/users/"+e.user {
				t.Errorf("%q: the owner line links to %q, want the person's page", q, h)
			}
		}
		pg := search(e.cs, e.other)
		contains(t, "Ivo's token", pg, link(e.plastic))
		lacks(t, "Ivo's token", pg, link(e.card), link(second))
		textHas(t, "Ivo's token", pg, "cards-owner", "The card of the person", "Ivo Petrov")
	})

	t.Run("a card's own token lists that card without an owner line", func(t *testing.T) {
		pg := search(e.cs, e.card.Token)
		if n := cardRowCount(t, pg); n != 1 {
			t.Errorf("%d rows, want the card", n)
		}
		lacksTestIDs(t, "card token", pg, "cards-owner")
	})

	t.Run("GET ?q= with a person's token works and its sort links keep the token", func(t *testing.T) {
		pg := e.cs.Get(t, "/backoffice/cards?q="+e.user+"&sort=created&dir=asc")
		contains(t, "GET person's token", pg, link(e.card), link(second))
		hasTestIDs(t, "GET person's token", pg, "cards-owner")
		if h := testID(dom(t, pg), "sort-status").AttrOr("href", ""); !strings.Contains(h, "q="+e.user) {
			t.Errorf("a header drops the token: %q", h)
		}
	})

	t.Run("a token of nobody or of a person without cards is an empty list that says so", func(t *testing.T) {
		cardless := createPerson(t, e.env, e.p, map[string]any{"first_name": "Nadia", "last_name": "Cardless", "email": cardsEmail("nadia")})
		for _, q := range []string{"6f1c9a2e-0b7d-4c1e-9a3f-2d8e5b7c1a40", cardless} {
			pg := search(e.cs, q)
			if pg.Status != http.StatusOK {
				t.Fatalf("%s: HTTP %d", q, pg.Status)
			}
			if n := cardRowCount(t, pg); n != 0 {
				t.Errorf("%s: %d rows", q, n)
			}
			contains(t, q, pg, nobodyEmpty)
			lacksTestIDs(t, q, pg, "cards-owner")
		}
	})

	t.Run("a malformed token is refused beside the field and finds nothing", func(t *testing.T) {
		for _, q := range []string{"6f1c9a2e-0b7d-4c1e-9a3f-2d8e5b7c1zzz", e.user[:35] + "g"} {
			pg := search(e.cs, q)
			if pg.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%q: HTTP %d, want 422", q, pg.Status)
			}
			contains422(t, q, pg, `id="q-error"`, "is not a token")
			if n := cardRowCount(t, pg); n != 0 {
				t.Errorf("%q: %d rows", q, n)
			}
		}
		// A token cut short is no token and no name either: nothing
		// matches, and the page says so.
		pg := search(e.cs, e.user[:23])
		contains(t, "a cut token", pg, "No cards match.")
		// The global search answers a malformed token (the other areas'
		// hits, none of the cards), not an error page.
		if pg := e.cs.Get(t, "/backoffice/search?q="+url.QueryEscape("6f1c9a2e-0b7d-4c1e-9a3f-2d8e5b7c1zzz")); pg.Status != http.StatusOK {
			t.Fatalf("global search, malformed token: HTTP %d", pg.Status)
		}
	})

	t.Run("the global search lists a person's cards by their token", func(t *testing.T) {
		contains(t, "global search", e.cs.Get(t, "/backoffice/search?q="+e.user), link(e.card), link(second))
	})

	t.Run("attack: a role that may not see cards gets none by a person's token", func(t *testing.T) {
		uw := e.env.NewBrowser()
		uw.SignIn(t, apptest.UnderwriterEmail)
		if pg := uw.Post(t, "/backoffice/cards", url.Values{"q": {e.user}}); pg.Status != http.StatusForbidden {
			t.Fatalf("underwriter, card search by a person's token: HTTP %d", pg.Status)
		}
		lacks(t, "underwriter's global search", uw.Get(t, "/backoffice/search?q="+e.user), link(e.card), link(second))
		// The auditor may see cards: the same list.
		contains(t, "auditor", search(e.auditor, e.user), link(e.card), link(second))
	})

	t.Run("attack: a token made of card-number digits never reaches an address", func(t *testing.T) {
		// Hexadecimal digits only, so it is a well-formed token of nobody
		// holding runs of 13 digits and more: the result's links must not
		// carry it (no sortable headers), as for any long digit run.
		q := "41111111-1111-4111-8111-111111111111"
		pg := search(e.cs, q)
		contains(t, "digit token", pg, nobodyEmpty)
		if strings.Contains(pg.Body, "q=4111") || strings.Contains(pg.Body, "q=41111111") {
			t.Fatal("a token of card-number digits was put in a link")
		}
	})
}
