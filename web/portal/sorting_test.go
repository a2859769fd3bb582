package portal_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// copyPeople adds n people to the partner of the person template, named
// "<prefix> NNN" in a scrambled creation order, with the same KYC status
// (ties for the kyc sort), straight in the table (the API is not what is
// tested here). It returns their tokens in name order.
func copyPeople(t *testing.T, env *apptest.Env, template, prefix string, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	for i := range n {
		k := (i * 37) % n // every number once, not in order
		name := fmt.Sprintf("%03d", k)
		err := env.App.DB.Get(&tokens[k], `INSERT INTO users SELECT (jsonb_populate_record(NULL::users, to_jsonb(u) || jsonb_build_object(
			'token', gen_random_uuid(), 'email', $2::text, 'first_name', $3::text, 'last_name', $4::text,
			'created_at', now() + make_interval(secs => $5)))).* FROM users u WHERE token = $1 RETURNING token`,
			template, uniqueEmail("sort"), prefix, name, i)
		if err != nil {
			t.Fatal(err)
		}
	}
	return tokens
}

// listed reads the people of a people page (their tokens) and its
// next-page link.
func listed(t *testing.T, b *apptest.Browser, path string) (tokens []string, next string, page *goquery.Document) {
	t.Helper()
	p := b.Get(t, path)
	if p.Status != http.StatusOK {
		t.Fatalf("%s: HTTP %d", path, p.Status)
	}
	page = doc(t, p.Body)
	page.Find(`[data-testid="user-row"] td:first-child > a`).Each(func(_ int, s *goquery.Selection) {
		tokens = append(tokens, strings.TrimPrefix(s.AttrOr("href", ""), "/backoffice/users/"))
	})
	next = html.UnescapeString(page.Find(`nav.pager a[rel="next"]`).AttrOr("href", ""))
	return tokens, next, page
}

// TestPeopleListSortsAndPagesByColumn: the people list sorts server-side by
// name, e-mail, KYC status and creation, both ways; its keyset paging
// follows the order, so the pages together hold every match once and in
// order, also where the sorted values tie (the token breaks ties); the
// headers are links that keep the search and mark the active column with
// aria-sort. The old list had one fixed order: this test failed there.
func TestPeopleListSortsAndPagesByColumn(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	names := copyPeople(t, a.env, a.user, "Sortperson", 63)
	all := func(path string) []string {
		var out []string
		for path != "" && len(out) < 200 {
			n, next, _ := listed(t, a.cs, path)
			out = append(out, n...)
			path = next
		}
		return out
	}
	if got := all("/backoffice/users?q=sortperson&sort=name&dir=asc"); !slices.Equal(got, names) {
		t.Errorf("by name, ascending, over two pages:\n got %q\nwant %q", got, names)
	}
	desc := slices.Clone(names)
	slices.Reverse(desc)
	if got := all("/backoffice/users?q=sortperson&sort=name&dir=desc"); !slices.Equal(got, desc) {
		t.Errorf("by name, descending, over two pages:\n got %q\nwant %q", got, desc)
	}
	// Every one ties on the KYC status: the pages still hold each once.
	got := all("/backoffice/users?q=sortperson&sort=kyc&dir=asc")
	slices.Sort(got)
	sorted := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, sorted) {
		t.Errorf("by KYC status (all tied), over two pages: %d people, want %d", len(got), len(names))
	}

	_, _, page := listed(t, a.cs, "/backoffice/users?q=sortperson&kyc_status=none&sort=email&dir=desc")
	th := page.Find(`th[aria-sort]`)
	if th.Length() != 1 || th.AttrOr("data-sort", "") != "email" || th.AttrOr("aria-sort", "") != "descending" {
		t.Errorf("aria-sort is on %q (%q)", th.AttrOr("data-sort", ""), th.AttrOr("aria-sort", ""))
	}
	href, _ := url.Parse(page.Find(`[data-testid="sort-email"]`).AttrOr("href", ""))
	if q := href.Query(); q.Get("dir") != "asc" || q.Get("q") != "sortperson" || q.Get("kyc_status") != "none" || q.Has("before_token") {
		t.Errorf("the active header's link is %q: want the other direction, the filters kept, the first page", href)
	}
	if h := page.Find(`[data-testid="sort-name"]`).AttrOr("href", ""); !strings.Contains(h, "sort=name") || !strings.Contains(h, "dir=asc") {
		t.Errorf("another header links to %q", h)
	}
}

// TestUnknownSortIsAMessage: an order a list does not know, or a direction
// that is not one, is answered 422 with a message above the list shown in
// its usual order; never a 500, never SQL.
func TestUnknownSortIsAMessage(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	admin := a.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	for _, c := range []struct {
		b    *apptest.Browser
		path string
	}{
		{a.cs, "/backoffice/users?sort=password_hash"},
		{a.cs, "/backoffice/users?sort=" + url.QueryEscape("name; DROP TABLE users --")},
		{a.cs, "/backoffice/users?sort=" + url.QueryEscape("(SELECT 1)") + "&dir=asc"},
		{a.cs, "/backoffice/users?sort=name&dir=" + url.QueryEscape("asc, (SELECT pg_sleep(5))")},
		{admin, "/backoffice/partners?sort=secret"},
		{admin, "/backoffice/partners?sort=name&dir=up"},
		{admin, "/backoffice/staff?sort=password"},
		{a.cs, "/backoffice/accounts?sort=balance_secret"},
		{a.cs, "/backoffice/accounts?sort=status&dir=" + url.QueryEscape("desc;")},
		{admin, "/backoffice/jobs?sort=payload"},
		{admin, "/backoffice/jobs?sort=kind&dir=sideways"},
		{a.cs, "/backoffice/adjustments?sort=" + url.QueryEscape("amount::text")},
		{a.cs, "/backoffice/suspense?sort=payer_iban"},
		{a.cs, "/backoffice/suspense?sort=resolved"}, // the open tab has no resolution column
		{a.cs, "/backoffice/suspense?status=resolved&sort=amount&dir=" + url.QueryEscape("desc NULLS FIRST")},
		{a.cs, "/backoffice/cards?q=Velikova&sort=pan"},
		{admin, "/backoffice/partners/" + a.p.ID + "?sort=secret"},
	} {
		p := c.b.Get(t, c.path)
		if p.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: HTTP %d, want 422", c.path, p.Status)
			continue
		}
		page := doc(t, p.Body)
		if msg := page.Find(`[data-testid="sort-error"]`).Text(); !strings.Contains(msg, "usual order") {
			t.Errorf("%s: message %q", c.path, msg)
		}
		if page.Find(`table`).Length() == 0 && page.Find(`.empty`).Length() == 0 {
			t.Errorf("%s: the list is not shown", c.path)
		}
	}
	var n int
	if err := a.env.App.DB.Get(&n, `SELECT count(*) FROM users`); err != nil || n == 0 {
		t.Fatalf("users: %d (%v)", n, err)
	}
	// The short lists sort too, by their columns.
	a.env.NewPartner(t, emi.PartnerCreate{Name: "Aardvark Sorting Ltd"})
	p := doc(t, admin.Get(t, "/backoffice/partners?sort=name&dir=asc").Body)
	if first := strings.TrimSpace(p.Find(`[data-testid="partners-table"] tbody tr:first-child td:first-child`).Text()); first != "Aardvark Sorting Ltd" {
		t.Errorf("partners by name: first is %q", first)
	}
}

// TestAccountListSortsByColumn: the account list sorts server-side by
// program, status and creation, both ways, and its headers keep the search.
// The old list had one fixed order: this test failed there.
func TestAccountListSortsByColumn(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	order := func(path string) []string {
		t.Helper()
		p := a.cs.Get(t, path)
		if p.Status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, p.Status)
		}
		var out []string
		doc(t, p.Body).Find(`[data-testid="accounts-table"] [data-testid="account-row"] td:first-child > a`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimPrefix(s.AttrOr("href", ""), "/backoffice/accounts/"))
		})
		return out
	}
	// The GBP account is the only account_gbp one; the others are account_eur.
	byProgram := order("/backoffice/accounts?q=velikova&sort=program&dir=desc")
	if len(byProgram) != 3 || byProgram[0] != a.gbpTok {
		t.Errorf("by program, descending: %v, want the GBP account (%s) first", byProgram, a.gbpTok)
	}
	if asc := order("/backoffice/accounts?q=velikova&sort=program&dir=asc"); len(asc) != 3 || asc[2] != a.gbpTok {
		t.Errorf("by program, ascending: %v, want the GBP account last", asc)
	}
	oldest := order("/backoffice/accounts?q=velikova&sort=created&dir=asc")
	newest := order("/backoffice/accounts?q=velikova")
	slices.Reverse(newest)
	if !slices.Equal(oldest, newest) || oldest[0] != a.eurTok {
		t.Errorf("oldest first %v is not the default order reversed %v", oldest, newest)
	}
	page := doc(t, a.cs.Get(t, "/backoffice/accounts?q=velikova&sort=status&dir=asc").Body)
	if th := page.Find(`th[aria-sort]`); th.AttrOr("data-sort", "") != "status" || th.AttrOr("aria-sort", "") != "ascending" {
		t.Errorf("aria-sort on %q", th.AttrOr("data-sort", ""))
	}
	if h := page.Find(`[data-testid="sort-created"]`).AttrOr("href", ""); !strings.Contains(h, "q=velikova") {
		t.Errorf("a header drops the search: %q", h)
	}
}

// TestAuditLogSortsAndPagesByColumn: the audit log sorts by action (and
// time, resource, outcome) both ways, its keyset paging by id follows the
// order across pages with ties, and the filter form keeps the order. The
// old log was newest first only: this test failed there.
func TestAuditLogSortsAndPagesByColumn(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	for i := range 70 {
		if _, err := a.env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, outcome, request_id, changes)
			VALUES ('system', 'test', $1, 'sorttest', $2, 'success', '', '{}')`, fmt.Sprintf("sort.%d", i%3), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	if err := a.env.App.DB.Select(&want, `SELECT resource_token FROM audit_log WHERE resource_type = 'sorttest' ORDER BY action DESC, id DESC`); err != nil {
		t.Fatal(err)
	}
	admin := a.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	var got []string
	path := "/backoffice/audit?resource_type=sorttest&sort=action&dir=desc"
	for path != "" && len(got) < 200 {
		p := admin.Get(t, path)
		if p.Status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, p.Status)
		}
		page := doc(t, p.Body)
		page.Find(`[data-testid="audit-table"] tbody tr`).Each(func(_ int, s *goquery.Selection) {
			resource := strings.Fields(s.Find("td").Eq(3).Text()) // "sorttest <token>"
			got = append(got, resource[len(resource)-1])
		})
		path = ""
		path = html.UnescapeString(page.Find(`nav.pager a[rel="next"]`).AttrOr("href", ""))
		if f := page.Find(`form.filters input[name="sort"]`); f.AttrOr("value", "") != "action" {
			t.Errorf("the filter form drops the order (%q)", f.AttrOr("value", ""))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("by action, descending, over two pages:\n got %q\nwant %q", got, want)
	}
	if p := admin.Get(t, "/backoffice/audit?sort=ip"); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `data-testid="sort-error"`) {
		t.Fatalf("an unknown audit order: HTTP %d", p.Status)
	}
}

// TestQueuesSortByColumn: the AML and KYC queues sort by their columns with
// a header link that keeps the tab; an unknown order is a 422 with the
// message. The old queues had one order: this test failed there.
func TestQueuesSortByColumn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.env.NewBrowser()
	c.SignIn(t, apptest.ComplianceEmail)
	people := func(path, table string) []string {
		t.Helper()
		p := c.Get(t, path)
		if p.Status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, p.Status)
		}
		page := doc(t, p.Body)
		var out []string
		page.Find(`[data-testid="` + table + `"] tbody tr`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimSpace(s.Find("td").First().Text()))
		})
		if h := page.Find(`[data-testid="sort-person"]`).AttrOr("href", ""); !strings.Contains(h, "status=all") {
			t.Errorf("%s: the person header drops the tab: %q", path, h)
		}
		return out
	}
	asc := people("/backoffice/aml?status=all&sort=person&dir=asc", "aml-table")
	desc := people("/backoffice/aml?status=all&sort=person&dir=desc", "aml-table")
	if len(asc) < 2 || !slices.IsSorted(asc) {
		t.Errorf("AML checks by person, ascending: %q", asc)
	}
	slices.Reverse(desc)
	if !slices.Equal(asc, desc) {
		t.Errorf("AML checks by person, descending is not the reverse: %q", desc)
	}
	if got := people("/backoffice/kyc?status=all&sort=person&dir=desc", "kyc-table"); len(got) == 0 {
		t.Error("the KYC tab lists nothing")
	}
	for _, path := range []string{"/backoffice/aml?sort=hits", "/backoffice/kyc?sort=person&dir=random"} {
		if p := c.Get(t, path); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `data-testid="sort-error"`) {
			t.Errorf("%s: HTTP %d, want 422 with the message", path, p.Status)
		}
	}
}

// TestMoreListsSortByColumn: the jobs, adjustments, suspense, cards search
// and webhook endpoint lists sort by their columns both ways, numbers as
// numbers (an amount of 100.00 after 12.50, an attempt 10 after 9), the
// active header marked with aria-sort. These lists had one fixed order and
// no sort links: this test failed there. A card-number search (POSTed,
// never in an address) has no sort links.
func TestMoreListsSortByColumn(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	admin := a.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	db := a.env.App.DB
	for _, attempt := range []int{9, 10, 2} {
		if _, err := db.Exec(`INSERT INTO jobs (kind, payload, state, attempt, max_attempts, run_at)
			VALUES ('sort.test', '{}', 'available', $1, 25, now() + interval '1 hour')`, attempt); err != nil {
			t.Fatal(err)
		}
	}
	for _, amount := range []string{"9,00", "100.00", "12.50"} {
		if p := a.cs.Post(t, accountHref(a.eurTok)+"/adjustments", url.Values{"direction": {"credit"}, "currency": {"EUR"},
			"amount": {amount}, "reason": {"sorting " + amount}}); p.Status != http.StatusSeeOther {
			t.Fatalf("adjustment %s: HTTP %d", amount, p.Status)
		}
		if p := a.cs.Post(t, "/backoffice/suspense/simulate", simulateForm(amount, "DE75 5121 0800 1245 1261 99")); p.Status != http.StatusSeeOther {
			t.Fatalf("suspense %s: HTTP %d", amount, p.Status)
		}
	}
	rc := newReceiver(t)
	for _, u := range []string{rc.URL + "/b", rc.URL + "/a", rc.URL + "/c"} {
		if p := admin.Post(t, "/backoffice/partners/"+a.p.ID+"/webhooks", url.Values{"url": {u}}); p.Status != http.StatusSeeOther && p.Status != http.StatusOK {
			t.Fatalf("endpoint %s: HTTP %d", u, p.Status)
		}
	}
	var pans []string
	for range 3 {
		acc := openAccount(t, a.env, a.p, map[string]any{"program": "account_eur", "user": a.user})["token"].(string)
		c := issueCard(t, a.env, a.p, emi.CardCreate{Account: acc, Type: emi.CardVirtual})
		pans = append(pans, cardPAN(t, a.env, a.p, c.Token))
	}

	number := func(s string) float64 {
		var f float64
		fmt.Sscanf(strings.Fields(s + " x")[0], "%g", &f) // 12.50\u00a0EUR, 9 of 25
		return f
	}
	text := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	for _, c := range []struct {
		b     *apptest.Browser
		path  string // with ?sort=<key>
		table string // the table's data-testid
		col   int    // the sorted column (1-based)
		num   bool
	}{
		{admin, "/backoffice/jobs?sort=attempt", "jobs-table", 4, true},
		{admin, "/backoffice/jobs?sort=kind", "jobs-table", 2, false},
		{a.cs, "/backoffice/adjustments?sort=amount", "pending-adjustments", 4, true},
		{a.cs, "/backoffice/adjustments?sort=requested_by", "pending-adjustments", 6, false},
		{a.cs, "/backoffice/suspense?sort=amount", "suspense-table", 3, true},
		{a.cs, "/backoffice/suspense?sort=reason", "suspense-table", 6, false},
		{a.cs, "/backoffice/cards?q=Velikova&sort=card", "cards-table", 1, false},
		{admin, "/backoffice/partners/" + a.p.ID + "?sort=url", "endpoints-table", 1, false},
	} {
		for _, dir := range []string{"asc", "desc"} {
			path := c.path + "&dir=" + dir
			p := c.b.Get(t, path)
			if p.Status != http.StatusOK {
				t.Errorf("%s: HTTP %d", path, p.Status)
				continue
			}
			page := doc(t, p.Body)
			table := page.Find(`table[data-testid="` + c.table + `"]`)
			key := strings.SplitN(strings.SplitN(c.path, "sort=", 2)[1], "&", 2)[0]
			if got := table.Find(`th[data-sort="`+key+`"]`).AttrOr("aria-sort", ""); got != map[string]string{"asc": "ascending", "desc": "descending"}[dir] {
				t.Errorf("%s: aria-sort %q", path, got)
			}
			var vals []string
			table.Find(`tbody > tr`).Each(func(_ int, tr *goquery.Selection) {
				vals = append(vals, tr.Children().Eq(c.col-1).Text())
			})
			if len(vals) < 3 {
				t.Errorf("%s: %d rows", path, len(vals))
				continue
			}
			for i := 1; i < len(vals); i++ {
				var cmp int
				if c.num {
					x, y := number(vals[i-1]), number(vals[i])
					cmp = map[bool]int{true: -1, false: 1}[x < y]
					if x == y {
						cmp = 0
					}
				} else if c.table == "cards-table" {
					x, y := strings.TrimSpace(vals[i-1]), strings.TrimSpace(vals[i])
					cmp = strings.Compare(x[len(x)-4:], y[len(y)-4:])
				} else {
					cmp = strings.Compare(text(vals[i-1]), text(vals[i]))
				}
				if (dir == "asc" && cmp > 0) || (dir == "desc" && cmp < 0) {
					t.Errorf("%s: %q before %q", path, vals[i-1], vals[i])
				}
			}
		}
	}
	// Paging links keep the suspense order.
	if href := doc(t, a.cs.Get(t, "/backoffice/suspense?sort=amount&dir=desc").Body).Find(`th[data-sort="payer"] a`).AttrOr("href", ""); !strings.HasPrefix(href, "/backoffice/suspense?") {
		t.Errorf("suspense header links to %q", href)
	}
	// A card number is searched by POST and never put in a link.
	p := a.cs.Post(t, "/backoffice/cards", url.Values{"q": {pans[0]}})
	if p.Status != http.StatusOK {
		t.Fatalf("card number search: HTTP %d", p.Status)
	}
	page := doc(t, p.Body)
	if page.Find(`[data-testid="card-row"]`).Length() != 1 || page.Find(`a[data-testid^="sort-"]`).Length() != 0 {
		t.Errorf("card number search: %d rows, %d sort links", page.Find(`[data-testid="card-row"]`).Length(), page.Find(`a[data-testid^="sort-"]`).Length())
	}
	if strings.Contains(p.Body, pans[0]) {
		t.Error("the card number is on the page")
	}
	// Nor is anything that could be one: an IBAN's account digits, or a
	// card number beside a word.
	for _, q := range []string{balance(a.eur, "iban"), pans[1] + " velikova"} {
		p := a.cs.Get(t, "/backoffice/cards?q="+url.QueryEscape(q))
		if n := doc(t, p.Body).Find(`a[data-testid^="sort-"]`).Length(); p.Status != http.StatusOK || n != 0 {
			t.Errorf("search %.6s…: HTTP %d, %d sort links", q, p.Status, n)
		}
	}
}

// TestPagerLabelsFollowTheOrder: the pager's links are called after the
// list's order. A list running by its time column pages to newer and
// older rows (newest first: "← Newer" / "Older →"; oldest first the other
// way round); any other order (a name, an action) to the previous and
// next page. Checked on the second page, where both links show, of two
// lists: the people list (by creation both ways, by name) and the audit
// log (by time both ways, by action). The old pager said Newer/Older
// whatever the order: this test failed there.
func TestPagerLabelsFollowTheOrder(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	copyPeople(t, a.env, a.user, "Pagerperson", 63)
	for i := range 70 {
		if _, err := a.env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, outcome, request_id, changes)
			VALUES ('system', 'test', $1, 'pagertest', $2, 'success', '', '{}')`, fmt.Sprintf("pager.%d", i%3), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	admin := a.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	for _, c := range []struct {
		b          *apptest.Browser
		path       string
		prev, next string
	}{
		{a.cs, "/backoffice/users?q=pagerperson", "← Newer", "Older →"},
		{a.cs, "/backoffice/users?q=pagerperson&sort=created&dir=desc", "← Newer", "Older →"},
		{a.cs, "/backoffice/users?q=pagerperson&sort=created&dir=asc", "← Older", "Newer →"},
		{a.cs, "/backoffice/users?q=pagerperson&sort=name&dir=asc", "← Previous", "Next →"},
		{a.cs, "/backoffice/users?q=pagerperson&sort=kyc&dir=desc", "← Previous", "Next →"},
		{admin, "/backoffice/audit?resource_type=pagertest", "← Newer", "Older →"},
		{admin, "/backoffice/audit?resource_type=pagertest&sort=time&dir=asc", "← Older", "Newer →"},
		{admin, "/backoffice/audit?resource_type=pagertest&sort=action&dir=asc", "← Previous", "Next →"},
		// A refused order shows the list in its usual order, and the
		// pager says so.
		{admin, "/backoffice/audit?resource_type=pagertest&sort=ip", "← Newer", "Older →"},
	} {
		first := c.b.Get(t, c.path)
		if first.Status != http.StatusOK && first.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: HTTP %d", c.path, first.Status)
		}
		d := dom(t, first)
		if d.Find(`nav.pager a[rel="prev"]`).Length() != 0 {
			t.Errorf("%s: the first page links to a previous one", c.path)
		}
		if got := squash(testID(d, "pager-next").Text()); got != c.next {
			t.Errorf("%s, first page: the next link reads %q, want %q", c.path, got, c.next)
		}
		href := html.UnescapeString(testID(d, "pager-next").AttrOr("href", ""))
		if href == "" {
			t.Fatalf("%s: no next page", c.path)
		}
		second := c.b.Get(t, href)
		if second.Status != http.StatusOK && second.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: HTTP %d", href, second.Status)
		}
		d = dom(t, second)
		if got := squash(testID(d, "pager-prev").Text()); got != c.prev {
			t.Errorf("%s, second page: the previous link reads %q, want %q", c.path, got, c.prev)
		}
	}
}
