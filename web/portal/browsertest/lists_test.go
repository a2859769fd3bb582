package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// noPageScroll fails the test when the page scrolls sideways at 390 px.
func noPageScroll(b *tab, what string) {
	b.t.Helper()
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		b.t.Errorf("%s is %d px wide at 390 px", what, w)
	}
}

// TestNameSearchCardsAndSortInTheBrowser: customer service searches a name
// and sees the person's card under them, opens it, then sorts the result by
// name with a click on the header and back with the keyboard (Enter on the
// focused header), aria-sort following. The old list showed no cards and
// had no sortable headers: this test failed there.
func TestNameSearchCardsAndSortInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Lists Partner"})
	// Ana Dimov first, then Elena Dimova with a card: newest first is
	// Elena, by name Ana.
	if r := partnerCall(t, env, p, "/v2/users", "user_create", map[string]any{"first_name": "Ana", "last_name": "Dimov",
		"email": "ana.dimov@lists.test"}); r.Status != http.StatusCreated {
		t.Fatalf("user_create: %s", r)
	}
	card, _ := cardHolder(t, env, p)

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.open("/backoffice/users?q=dimov")
	names := func() []string { return b.texts(`[data-testid="user-row"] td:first-child > a`) }
	if got := names(); len(got) != 2 || got[0] != "Elena Dimova" {
		t.Fatalf("newest first: %q", got)
	}
	if got := b.text(`[data-testid="person-card-link"]`); got != "•••• "+card.Last4 {
		t.Fatalf("the card under Elena Dimova reads %q", got)
	}
	shootAt(b, "people-search-cards", 1440)
	shootAt(b, "people-search-cards", 390)
	noPageScroll(b, "the people search")
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.clickNav(`[data-testid="sort-name"]`)
	if got := names(); len(got) != 2 || got[0] != "Ana Dimov" {
		t.Fatalf("after a click on Name: %q", got)
	}
	if s := b.text(`th[aria-sort="ascending"]`); !strings.Contains(s, "Name") {
		t.Errorf("aria-sort ascending is on %q", s)
	}
	if !strings.Contains(b.location(), "q=dimov") {
		t.Errorf("the sort dropped the search: %s", b.location())
	}
	b.do("focus the Name header", chromedp.Focus(chromedp.CSS(`[data-testid="sort-name"]`)))
	b.keyNav("\r")
	if got := names(); len(got) != 2 || got[0] != "Elena Dimova" {
		t.Fatalf("after Enter on Name: %q", got)
	}
	if s := b.text(`th[aria-sort="descending"]`); !strings.Contains(s, "Name") {
		t.Errorf("aria-sort descending is on %q", s)
	}
	shootAt(b, "people-sorted", 1440)
	shootAt(b, "people-sorted", 390)
	noPageScroll(b, "the sorted people list")
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.clickNav(`[data-testid="person-card-link"]`)
	if got := b.path(); got != "/backoffice/cards/"+card.Token {
		t.Fatalf("the card link leads to %s", got)
	}

	// An order the list does not know is a message, not an error page.
	b.open("/backoffice/users?sort=password")
	if msg := b.text(`[data-testid="sort-error"]`); !strings.Contains(msg, "cannot be sorted") {
		t.Errorf("unknown sort: %q", msg)
	}
}

// TestDeliveryLogFilterAndBulkReplayInTheBrowser: an administrator filters
// a partner's delivery log by failed deliveries, confirms "Replay failed
// deliveries" and is told how many were queued; each failed delivery then
// has its replay asked for once. The old log had neither: this test failed
// there.
func TestDeliveryLogFilterAndBulkReplayInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Failing Hooks", WebhookURL: "http://127.0.0.1:9/hooks"})
	var ep string
	if err := env.App.DB.Get(&ep, `SELECT id FROM webhook_endpoints WHERE partner_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := env.App.Webhooks.SendTest(systemCtx(), p.ID, ep); err != nil {
			t.Fatal(err)
		}
	}
	// Two were given up on, one still retries (no workers run here).
	if _, err := env.App.DB.Exec(`UPDATE webhook_deliveries SET state = 'failed', attempts = 1, last_status = 500, next_attempt_at = NULL
		WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id LIMIT 2)`, ep); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '5 minutes' WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE kind = $1`, kernel.JobWebhookDeliver); err != nil {
		t.Fatal(err)
	}

	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.open("/backoffice/partners/" + p.ID + "/events")
	if n := b.count(`[data-testid="next-retry"]`); n != 1 {
		t.Errorf("%d deliveries show a next retry, want the pending one", n)
	}
	b.do("choose failed", chromedp.SetValue(chromedp.CSS(`[data-testid="status-filter"]`), "failed"))
	b.clickNav(`[data-testid="events-filter"] button[type="submit"]`)
	states := b.texts(`[data-testid="delivery"] .badge`)
	if len(states) != 2 || states[0] != "failed" || states[1] != "failed" {
		t.Fatalf("filtered by failed: %q", states)
	}
	shootAt(b, "delivery-log-failed", 1440)
	shootAt(b, "delivery-log-failed", 390)
	noPageScroll(b, "the delivery log")
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.do("open the bulk replay", chromedp.Click(chromedp.CSS(`[data-testid="bulk-replay"] > summary`)))
	b.waitVisible(`[data-testid="bulk-replay-confirm"]`)
	b.clickNav(`[data-testid="bulk-replay-confirm"]`)
	if f := flashText(b); !strings.Contains(f, "New attempts were queued for 2 failed deliveries") {
		t.Fatalf("after the bulk replay: %q", f)
	}
	if !strings.Contains(b.location(), "status=failed") {
		t.Errorf("the answer left the filter: %s", b.location())
	}
	var asked int
	if err := env.App.DB.Get(&asked, `SELECT count(*) FROM webhook_deliveries WHERE replay_requested_at IS NOT NULL`); err != nil || asked != 2 {
		t.Fatalf("%d replays asked (%v), want 2", asked, err)
	}
	if n := b.count(`[data-testid="delivery"]`); n != 2 || !strings.Contains(b.html(), "replay queued") {
		t.Errorf("the log does not show the queued replays")
	}
	var audited int
	if err := env.App.DB.GetContext(context.Background(), &audited, `SELECT count(*) FROM audit_log WHERE action = 'webhook_delivery.bulk_replay'`); err != nil || audited != 1 {
		t.Fatalf("bulk replay audit rows: %d (%v)", audited, err)
	}
}

// TestRefusedSimulatedPaymentKeepsWhatWasTypedInTheBrowser: customer
// service types an ambiguous amount (1,250) into the account page's
// incoming-payment simulator; the page comes back with the form open, the
// amount, payer and reference as typed, the reason beside the amount
// (aria-describedby) and the amount focused; correcting it to 12,50 credits
// 12.50. The old page reloaded with the form folded and empty: this test
// failed there.
func TestRefusedSimulatedPaymentKeepsWhatWasTypedInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Kept Forms Partner"})
	eur, _ := accountHolder(t, env, p)
	tok := eur["token"].(string)

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.open("/backoffice/accounts/" + tok)
	b.do("open the simulator", chromedp.Click(chromedp.CSS(`[data-testid="simulate-details"] > summary`)))
	b.waitVisible(`[data-testid="simulate-form"] input[name="amount"]`)
	b.do("fill the payment",
		sendKeys(`[data-testid="simulate-form"] input[name="amount"]`, "1,250"),
		sendKeys(`[data-testid="simulate-form"] input[name="payer_name"]`, "Acme GmbH"),
		sendKeys(`[data-testid="simulate-form"] input[name="reference"]`, "Invoice 12"))
	if status := b.clickNav(`[data-testid="simulate"]`); status != http.StatusUnprocessableEntity {
		t.Fatalf("HTTP %d, want 422", status)
	}
	if !eval[bool](b, `document.querySelector('[data-testid="simulate-details"]').open`) {
		t.Fatal("the simulator is folded after the refusal")
	}
	for name, want := range map[string]string{"amount": "1,250", "payer_name": "Acme GmbH", "reference": "Invoice 12"} {
		if got := eval[string](b, `document.querySelector('[data-testid="simulate-form"] [name="`+name+`"]').value`); got != want {
			t.Errorf("%s is %q, typed %q", name, got, want)
		}
	}
	if got := eval[string](b, `(() => { const i = document.querySelector('[data-testid="simulate-form"] [name="amount"]');
		return document.getElementById(i.getAttribute('aria-describedby')).textContent; })()`); !strings.Contains(got, "12,50") {
		t.Errorf("the message beside the amount is %q", got)
	}
	if got := eval[string](b, `document.activeElement.name || ''`); got != "amount" {
		t.Errorf("the focus is on %q, want the amount", got)
	}
	shootAt(b, "simulate-refused", 1440)
	shootAt(b, "simulate-refused", 390)
	noPageScroll(b, "the account page with a refused payment")
	b.do("viewport", chromedp.EmulateViewport(1440, 900))

	b.do("correct the amount", chromedp.SetValue(chromedp.CSS(`[data-testid="simulate-form"] input[name="amount"]`), "12,50"))
	b.clickNav(`[data-testid="simulate"]`)
	if f := flashText(b); !strings.Contains(f, "Credited: 12.50 EUR") {
		t.Fatalf("after the correction: %q", f)
	}
}

// TestSortedListsInTheBrowser: the lists that sort (accounts, audit log,
// AML and KYC queues, partners, staff, jobs, adjustments, suspense, the
// cards search, a partner's webhook endpoints), each sorted by a column,
// show aria-sort on it and fit a 390 px screen without a sideways page
// scroll; each is saved at 1440 and 390 px. The AML queue, 55 checks
// waiting and sorted by person, pages in place (htmx): "Next page" swaps in
// the last 5 in the same order and pushes the address. The old queue showed
// its first 100 with no pager: that part failed there.
func TestSortedListsInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	// The webhook endpoint gives the partner's page its sortable table.
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Sorted Lists Partner", WebhookURL: "http://127.0.0.1:9/hooks"})
	accountHolder(t, env, p)
	cardHolder(t, env, p) // Elena Dimova's card, for the cards search
	for _, kind := range []string{"sort.b", "sort.a"} {
		if _, err := env.App.DB.Exec(`INSERT INTO jobs (kind, payload, state, attempt, max_attempts, run_at)
			VALUES ($1, '{}', 'available', 1, 3, now() + interval '1 hour')`, kind); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 55 {
		if _, err := env.App.DB.Exec(`INSERT INTO aml_checks (token, partner_id, first_name, last_name, person_key, status, list_version)
			VALUES (gen_random_uuid(), $1, 'Paged', $2, '\x00', 'match', 'v1')`, p.ID, fmt.Sprintf("%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	for _, c := range []struct{ name, path, col string }{
		{"accounts-sorted", "/backoffice/accounts?sort=program&dir=asc", "program"},
		{"audit-sorted", "/backoffice/audit?sort=action&dir=asc", "action"},
		{"aml-sorted", "/backoffice/aml?status=all&sort=person&dir=asc", "person"},
		{"kyc-sorted", "/backoffice/kyc?status=all&sort=status&dir=desc", "status"},
		{"partners-sorted", "/backoffice/partners?sort=name&dir=asc", "name"},
		{"staff-sorted", "/backoffice/staff?sort=email&dir=desc", "email"},
		{"jobs-sorted", "/backoffice/jobs?sort=kind&dir=asc", "kind"},
		{"adjustments-sorted", "/backoffice/adjustments?sort=amount&dir=desc", "amount"},
		{"suspense-sorted", "/backoffice/suspense?status=resolved&sort=resolved&dir=desc", "resolved"},
		{"cards-sorted", "/backoffice/cards?q=Dimova&sort=status&dir=asc", "status"},
		{"endpoints-sorted", "/backoffice/partners/" + p.ID + "?sort=url&dir=asc", "url"},
	} {
		b.do("viewport", chromedp.EmulateViewport(1440, 900))
		if status := b.open(c.path); status != http.StatusOK {
			t.Errorf("%s: HTTP %d", c.path, status)
			continue
		}
		if b.count(`table`) > 0 && b.count(`th[aria-sort][data-sort="`+c.col+`"]`) != 1 {
			t.Errorf("%s: no aria-sort on %s", c.path, c.col)
		}
		shootAt(b, c.name, 1440)
		shootAt(b, c.name, 390)
		noPageScroll(b, c.path)
	}

	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	if status := b.open("/backoffice/aml?sort=person&dir=desc"); status != http.StatusOK {
		t.Fatalf("the AML queue: HTTP %d", status)
	}
	rows := `[data-testid="aml-table"] tbody tr td:first-child > a`
	if first := b.texts(rows); len(first) != 50 || !strings.HasPrefix(first[0], "Paged 54") {
		t.Fatalf("the AML queue's first page: %d rows, first %q; want 50 from Paged 54", len(first), firstOf(first))
	}
	b.script("set marker", `window.__marker = 1`)
	b.do("click Next page", chromedp.Click(chromedp.CSS(`#aml-list [data-testid="pager-next"]`)))
	b.do("wait for the next page", pollTrue(`document.querySelectorAll(`+jsString(rows)+`).length === 5`))
	if !eval[bool](b, `window.__marker === 1`) {
		t.Error("Next page reloaded the whole page")
	}
	if p := b.path(); !strings.Contains(p, "after=") || !strings.Contains(p, "sort=person") {
		t.Errorf("after Next page the address is %s: want the cursor and the order in it", p)
	}
	if next := b.texts(rows); len(next) != 5 || !strings.HasPrefix(next[0], "Paged 04") || !strings.HasPrefix(next[4], "Paged 00") {
		t.Errorf("the AML queue's second page: %q, want Paged 04 to Paged 00", next)
	}
	if b.count(`th[aria-sort="descending"][data-sort="person"]`) != 1 || b.count(`#aml-list [data-testid="pager-prev"]`) != 1 {
		t.Error("the second page lost its order's mark or its link to the first page")
	}
	shootAt(b, "aml-page-2", 1440)
	shootAt(b, "aml-page-2", 390)
	noPageScroll(b, "the AML queue's second page")
}
