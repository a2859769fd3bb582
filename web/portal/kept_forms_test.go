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

// TestEveryRefusedFormKeepsWhatWasTyped: each refusable back-office form,
// posted with a bad value, answers its page again (422) with the form's
// section open, every value as typed, and the reason beside the refused
// field: the message in <field>-error, the input marked aria-invalid and
// described by it. Amounts take a decimal comma; an ambiguous one (1,250)
// is the refused value. On the old code the simulators redirected with a
// flash and an empty, folded form, and the endpoint form lost its event
// types: those rows failed there.
func TestEveryRefusedFormKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	admin := a.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	compliance := a.env.NewBrowser()
	compliance.SignIn(t, apptest.ComplianceEmail)
	acc := accountHref(a.eurTok)
	partner := "/backoffice/partners/" + a.p.ID
	// A card with a payment held, for the sandbox's clear form.
	card := issueCard(t, a.env, a.p, emi.CardCreate{Account: a.eurTok, Type: emi.CardVirtual, PIN: chosenPIN})
	a.env.Fund(t, a.eurTok, balance(a.eur, "token"), "EUR", 100_00)
	if p := a.cs.Post(t, "/backoffice/cards/"+card.Token+"/authorizations", simulation("12.50", "pos", chosenPIN, "passed")); p.Status != http.StatusSeeOther {
		t.Fatalf("simulated payment: HTTP %d", p.Status)
	}
	var held string
	if err := a.env.App.DB.Get(&held, `SELECT token::text FROM card_authorizations WHERE card = $1 AND status = 'approved'`, card.Token); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name    string
		b       *apptest.Browser
		path    string
		form    url.Values
		testid  string // the form's data-testid
		refused string // the field whose error is shown beside it
		kept    []string
	}{
		{"adjustment request", a.cs, acc + "/adjustments",
			url.Values{"direction": {"debit"}, "currency": {"EUR"}, "amount": {"1,250"}, "reason": {"double fee refund"}},
			"request-adjustment-form", "amount", []string{"direction", "currency", "amount", "reason"}},
		{"incoming payment on the account page", a.cs, acc + "/incoming",
			url.Values{"scheme": {"sepa"}, "amount": {"1,250"}, "currency": {"EUR"}, "reference": {"Invoice 7"},
				"payer_name": {"Acme GmbH"}, "payer_iban": {"DE89370400440532013000"}, "to": {"account:" + a.eurTok}},
			"simulate-form", "amount", []string{"scheme", "amount", "reference", "payer_name", "payer_iban", "to"}},
		{"incoming payment on the suspense page", a.cs, "/backoffice/suspense/simulate",
			url.Values{"scheme": {"sepa"}, "amount": {"12,50"}, "currency": {"EUR"}, "reference": {"Invoice 8"},
				"payer_name": {"Acme GmbH"}, "payer_iban": {"DE89370400440532013000"}, "to_iban": {"not an iban"}},
			"simulate-form", "to_iban", []string{"amount", "reference", "payer_name", "payer_iban", "to_iban"}},
		{"account block without a reason", a.cs, acc + "/block", url.Values{"reason": {"  "}},
			"block-form", "reason", nil},
		{"watch-list entry", compliance, "/backoffice/watchlist",
			url.Values{"name": {"Ivo Kept"}, "category": {"fraud"}, "note": {"seen in the press"}, "source": {"javascript:alert(1)"}},
			"watchlist-form", "source", []string{"name", "category", "note", "source"}},
		{"new partner", admin, "/backoffice/partners",
			url.Values{"name": {""}, "processing": {"semi-automatic"}, "webhook_url": {"https://hooks.example/kept"}},
			"partner-form", "name", []string{"processing", "webhook_url"}},
		{"webhook endpoint", admin, partner + "/webhooks",
			url.Values{"url": {"ftp://hooks.example/x"}, "event_types": {"card.activated, account.status_changed"}},
			"endpoint-form", "url", []string{"url", "event_types"}},
		{"clearing a held card payment (sandbox)", a.cs, "/backoffice/cards/" + card.Token + "/authorizations/" + held + "/clear",
			url.Values{"amount": {"1,250"}}, "payment-clear-form", "amount", []string{"amount"}},
		{"clearing more than is held (sandbox)", a.cs, "/backoffice/cards/" + card.Token + "/authorizations/" + held + "/clear",
			url.Values{"amount": {"99,00"}}, "payment-clear-form", "amount", []string{"amount"}},
		{"saved review view", admin, "/backoffice/review/views",
			url.Values{"name": {strings.Repeat("high risk ", 11)}, "query": {"risk=high"}}, "save-view-form", "name", []string{"name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.b.Post(t, c.path, c.form)
			if p.Status != http.StatusUnprocessableEntity {
				t.Fatalf("HTTP %d (to %q), want the page again with 422", p.Status, p.Location)
			}
			page := doc(t, p.Body)
			form := page.Find(`form[data-testid="` + c.testid + `"]`)
			if form.Length() != 1 {
				t.Fatalf("%d forms %q on the page", form.Length(), c.testid)
			}
			if d := form.Closest("details"); d.Length() > 0 {
				if _, open := d.Attr("open"); !open {
					t.Error("the form's section is folded")
				}
			}
			for _, name := range c.kept {
				if got := fieldValue(form, name); got != strings.TrimSpace(c.form.Get(name)) {
					t.Errorf("%s is %q, typed %q", name, got, c.form.Get(name))
				}
			}
			field := form.Find(`[name="` + c.refused + `"]`)
			if field.AttrOr("aria-invalid", "") != "true" || field.AttrOr("aria-describedby", "") != c.refused+"-error" {
				t.Errorf("%s is not marked refused: aria-invalid %q, aria-describedby %q", c.refused,
					field.AttrOr("aria-invalid", ""), field.AttrOr("aria-describedby", ""))
			}
			if msg := strings.TrimSpace(form.Find("#" + c.refused + "-error").Text()); msg == "" {
				t.Errorf("no message beside %s in the form", c.refused)
			}
		})
	}
	var n int
	if err := a.env.App.DB.Get(&n, `SELECT (SELECT count(*) FROM adjustment_requests) + (SELECT count(*) FROM suspense_items)
		+ (SELECT count(*) FROM card_authorizations WHERE status <> 'approved')`); err != nil || n != 0 {
		t.Fatalf("refused forms left %d rows (%v)", n, err)
	}

	// The decimal comma is an amount where it is not ambiguous.
	p := a.cs.Post(t, acc+"/incoming", url.Values{"scheme": {"card"}, "amount": {"12,50"}, "currency": {"EUR"},
		"payer_name": {"Acme GmbH"}, "payer_card_last4": {"4242"}, "to": {"account:" + a.eurTok}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("12,50 simulated: HTTP %d", p.Status)
	}
	if body := a.cs.Get(t, p.Location).Body; !strings.Contains(body, "Credited: 12.50 EUR") {
		t.Error("12,50 was not credited as 12.50")
	}
}

// fieldValue is what a form shows in a field: an input's value, a
// textarea's text, a select's selected option (or its first).
func fieldValue(form *goquery.Selection, name string) string {
	f := form.Find(`[name="` + name + `"]`).First()
	switch goquery.NodeName(f) {
	case "textarea":
		return strings.TrimSpace(f.Text())
	case "select":
		if o := f.Find("option[selected]"); o.Length() > 0 {
			return o.AttrOr("value", "")
		}
		return f.Find("option").First().AttrOr("value", "")
	}
	return f.AttrOr("value", "")
}

// TestRefusedRolesKeepWhatWasTicked: a refused roles change (an unknown
// role posted beside a real one, or none) answers the staff page again
// (422) with the roles as ticked, not the user's current ones, and the
// reason beside the boxes; nothing changes. The old page redirected with a
// flash and the current roles: this test failed there.
func TestRefusedRolesKeepWhatWasTicked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	var before int
	if err := f.env.App.DB.Get(&before, `SELECT count(*) FROM staff_changes`); err != nil {
		t.Fatal(err)
	}
	for _, roles := range [][]string{{"compliance", "superuser"}, {}} {
		p := admin.Post(t, "/backoffice/staff/"+f.targetID+"/roles", url.Values{"roles": roles})
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("roles %q: HTTP %d (to %q), want 422", roles, p.Status, p.Location)
		}
		form := doc(t, p.Body).Find(`form[data-testid="roles-form"]`)
		var ticked []string
		form.Find(`input[name="roles"][checked]`).Each(func(_ int, s *goquery.Selection) { ticked = append(ticked, s.AttrOr("value", "")) })
		want := []string{}
		if len(roles) > 0 {
			want = []string{"compliance"} // the real role ticked; the unknown one has no box
		}
		if strings.Join(ticked, ",") != strings.Join(want, ",") {
			t.Errorf("roles %q: ticked %q, want %q (the auditor's current role must not come back)", roles, ticked, want)
		}
		if msg := form.Find("#roles-error").Text(); msg == "" || form.Find(`[data-testid="role-boxes"]`).AttrOr("aria-describedby", "") != "roles-error" {
			t.Errorf("roles %q: no message beside the boxes (%q)", roles, msg)
		}
	}
	var after int
	if err := f.env.App.DB.Get(&after, `SELECT count(*) FROM staff_changes`); err != nil || after != before {
		t.Fatalf("refused role changes left %d staff changes, had %d (%v)", after, before, err)
	}
}
