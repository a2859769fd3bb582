package portal_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"emi/internal/app/apptest"
)

// Portal tests read pages as HTML documents (goquery) and find elements
// by their data-testid attribute, instead of matching substrings of the
// markup: a test then fails for what the page shows, not for a changed
// attribute order, class or whitespace. These helpers are their one home.

// dom parses a page's body.
func dom(t *testing.T, p apptest.Page) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(p.Body))
	if err != nil {
		t.Fatalf("parse the page: %v", err)
	}
	return d
}

// testID selects the elements with data-testid id.
func testID(d *goquery.Document, id string) *goquery.Selection {
	return d.Find(`[data-testid="` + id + `"]`)
}

// squash collapses runs of white space into one space and trims.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// textOf returns the text of the first element with data-testid id, white
// space collapsed; the test fails when the page has none.
func textOf(t *testing.T, what string, p apptest.Page, id string) string {
	t.Helper()
	s := testID(dom(t, p), id)
	if s.Length() == 0 {
		t.Fatalf("%s: no element with data-testid %q", what, id)
	}
	return squash(s.First().Text())
}

// textHas fails the test for each wanted text the element with
// data-testid id lacks.
func textHas(t *testing.T, what string, p apptest.Page, id string, wants ...string) {
	t.Helper()
	got := textOf(t, what, p, id)
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %s reads %q, lacks %q", what, id, got, w)
		}
	}
}

// hasTestIDs fails the test for each data-testid the page (HTTP 200)
// has no element with.
func hasTestIDs(t *testing.T, what string, p apptest.Page, ids ...string) {
	t.Helper()
	if p.Status != 200 {
		t.Fatalf("%s: HTTP %d", what, p.Status)
	}
	d := dom(t, p)
	for _, id := range ids {
		if testID(d, id).Length() == 0 {
			t.Errorf("%s lacks data-testid %q", what, id)
		}
	}
}

// lacksTestIDs fails the test for each data-testid the page has an
// element with.
func lacksTestIDs(t *testing.T, what string, p apptest.Page, ids ...string) {
	t.Helper()
	d := dom(t, p)
	for _, id := range ids {
		if n := testID(d, id).Length(); n > 0 {
			t.Errorf("%s has %d element(s) with data-testid %q", what, n, id)
		}
	}
}

// textsOf returns the text of every element with data-testid id, white
// space collapsed, in page order.
func textsOf(t *testing.T, p apptest.Page, id string) []string {
	t.Helper()
	var out []string
	testID(dom(t, p), id).Each(func(_ int, s *goquery.Selection) { out = append(out, squash(s.Text())) })
	return out
}

// attrsOf returns the attribute attr of every element with data-testid
// id, in page order.
func attrsOf(t *testing.T, p apptest.Page, id, attr string) []string {
	t.Helper()
	var out []string
	testID(dom(t, p), id).Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.AttrOr(attr, ""))
	})
	return out
}

// formOf returns the values a browser would submit from the form s: its
// text, number and hidden inputs, and the selected option of its selects.
func formOf(s *goquery.Selection) url.Values {
	v := url.Values{}
	s.Find(`input[type="text"], input[type="number"], input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
		if name, ok := in.Attr("name"); ok {
			v.Set(name, in.AttrOr("value", ""))
		}
	})
	s.Find("select[name]").Each(func(_ int, sel *goquery.Selection) {
		v.Set(sel.AttrOr("name", ""), sel.Find("option[selected]").First().AttrOr("value", ""))
	})
	return v
}

// textIs fails the test unless the first element with data-testid id reads
// exactly want (white space collapsed).
func textIs(t *testing.T, what string, p apptest.Page, id, want string) {
	t.Helper()
	if got := textOf(t, what, p, id); got != want {
		t.Errorf("%s: %s reads %q, want %q", what, id, got, want)
	}
}

// badgeIs fails the test unless the element with data-testid id holds a
// badge of tone reading text.
func badgeIs(t *testing.T, what string, p apptest.Page, id, tone, text string) {
	t.Helper()
	s := testID(dom(t, p), id).First()
	b := s.Find("span.badge").First()
	if s.Length() == 0 || b.Length() == 0 {
		t.Fatalf("%s: no badge in data-testid %q", what, id)
	}
	if got := squash(b.Text()); got != text || !b.HasClass(tone) {
		t.Errorf("%s: %s badge %q (class %q), want %q (%s)", what, id, got, b.AttrOr("class", ""), text, tone)
	}
}

// opened reports whether the element with data-testid id is there and open
// (a <details> the page opened, e.g. the form of a refused action).
func opened(t *testing.T, p apptest.Page, id string) bool {
	t.Helper()
	return testID(dom(t, p), id).Is("[open]")
}
