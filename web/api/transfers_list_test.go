package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// listTransfers calls transfers_list with query.
func listTransfers(t *testing.T, env *apptest.Env, p *apptest.Partner, query url.Values) apptest.Response {
	t.Helper()
	path := "/v2/transfers"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return call(t, env, p, http.MethodGet, path, "transfers_list", nil)
}

// itemTokens returns a page's transfer tokens and statuses.
func itemTokens(t *testing.T, r apptest.Response) (tokens, statuses []string) {
	t.Helper()
	items, _ := r.Data["items"].([]any)
	for _, it := range items {
		m := it.(map[string]any)
		tokens = append(tokens, m["token"].(string))
		statuses = append(statuses, m["status"].(string))
	}
	return tokens, statuses
}

// TestTransfersList: a partner walks its transfers page by page with the
// cursor and gets each exactly once, newest first, also when a transfer is
// created between two pages; the filters select what they say; another
// partner sees only the transfer that reached its own account, with the
// payer's side blanked; every bad query is refused naming the parameter.
func TestTransfersList(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p, q := env.NewPartner(t, emi.PartnerCreate{Name: "Lister"}), env.NewPartner(t, emi.PartnerCreate{Name: "Receiver"})
	a1, _, _ := openFunded(t, env, p, "account_eur", 1_000_00)
	a2, _, _ := openFunded(t, env, p, "account_eur", 0)
	_, _, qIBAN := openFunded(t, env, q, "account_eur", 0)
	var made []string
	internal := func(src, dst, amount string) string {
		to := map[string]any{"account": dst}
		if dst == qIBAN {
			// Another partner's customer, known by IBAN.
			to = map[string]any{"iban": dst}
		}
		r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{"amount": amount, "currency": "EUR",
			"source": map[string]any{"account": src}, "destination": to})
		apptest.Expect(t, "transfer_create", r, 0, http.StatusCreated)
		made = append(made, r.Data["token"].(string))
		return r.Data["token"].(string)
	}
	for range 5 {
		internal(a1, a2, "1.00")
	}
	out := payOut(t, env, p, sepa(a1, "2.00"))
	apptest.Expect(t, "outgoing payment", out, 0, http.StatusCreated)
	made = append(made, out.Data["token"].(string))
	cross := internal(a1, qIBAN, "3.00")
	internal(a2, a1, "1.00")
	slices.Reverse(made) // newest first

	t.Run("pages by cursor", func(t *testing.T) {
		var seen []string
		query := url.Values{"limit": {"3"}}
		for page := 0; ; page++ {
			r := listTransfers(t, env, p, query)
			apptest.Expect(t, "transfers_list", r, 0, http.StatusOK)
			tokens, _ := itemTokens(t, r)
			seen = append(seen, tokens...)
			if page == 0 {
				// Created between two pages: newer than the cursor,
				// so not on the next pages.
				internal(a1, a2, "1.00")
				made = made[:len(made)-1]
			}
			if r.Data["has_more"] != true {
				break
			}
			query.Set("starting_after", tokens[len(tokens)-1])
		}
		// The funding of a1 is not a transfer; the one created while
		// paging is not in the walk.
		if !slices.Equal(seen, made) {
			t.Errorf("walked %v\nwant   %v", seen, made)
		}
		if len(seen) != len(made) {
			t.Errorf("walked %d transfers, want %d", len(seen), len(made))
		}
	})

	t.Run("filters", func(t *testing.T) {
		r := listTransfers(t, env, p, url.Values{"account": {a2}, "limit": {"100"}})
		apptest.Expect(t, "by account", r, 0, http.StatusOK)
		tokens, _ := itemTokens(t, r)
		if len(tokens) != 7 { // five in, one out, and the one made while paging
			t.Errorf("account a2: %d transfers, want 7: %v", len(tokens), tokens)
		}
		if slices.Contains(tokens, cross) || slices.Contains(tokens, out.Data["token"].(string)) {
			t.Errorf("account a2 lists a transfer it is on neither side of")
		}
		r = listTransfers(t, env, p, url.Values{"status": {"pending"}})
		apptest.Expect(t, "by status", r, 0, http.StatusOK)
		if tokens, statuses := itemTokens(t, r); !slices.Equal(tokens, []string{out.Data["token"].(string)}) || statuses[0] != "pending" {
			t.Errorf("pending: %v %v", tokens, statuses)
		}
		future := env.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		r = listTransfers(t, env, p, url.Values{"from": {future}})
		apptest.Expect(t, "from the future", r, 0, http.StatusOK)
		if tokens, _ := itemTokens(t, r); len(tokens) != 0 {
			t.Errorf("created from an hour ahead: %v", tokens)
		}
	})

	t.Run("the other partner sees what reached it", func(t *testing.T) {
		r := listTransfers(t, env, q, nil)
		apptest.Expect(t, "receiver's list", r, 0, http.StatusOK)
		items, _ := r.Data["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("the receiver lists %d transfers, want the one to its account: %s", len(items), r)
		}
		it := items[0].(map[string]any)
		src, _ := it["source"].(map[string]any)
		if it["token"] != cross || src["account"] != nil && src["account"] != "" {
			t.Errorf("the receiver's view: %v", it)
		}
		apptest.Expect(t, "another partner's transfer as cursor", listTransfers(t, env, q, url.Values{"starting_after": {made[0]}}),
			emi.ErrTransferValidation.Code, http.StatusBadRequest)
		apptest.Expect(t, "another partner's account as filter", listTransfers(t, env, q, url.Values{"account": {a1}}),
			emi.ErrTransferValidation.Code, http.StatusBadRequest)
	})

	t.Run("bad queries", func(t *testing.T) {
		for name, c := range map[string]struct {
			query url.Values
			field string
		}{
			"unknown parameter":  {url.Values{"page": {"1"}}, "page"},
			"limit 0":            {url.Values{"limit": {"0"}}, "limit"},
			"limit 101":          {url.Values{"limit": {"101"}}, "limit"},
			"limit not a number": {url.Values{"limit": {"ten"}}, "limit"},
			"unknown status":     {url.Values{"status": {"lost"}}, "status"},
			"not a time":         {url.Values{"from": {"yesterday"}}, "from"},
			"to before from":     {url.Values{"from": {"2026-11-02T00:00:00Z"}, "to": {"2026-11-01T00:00:00Z"}}, "to"},
			"unknown cursor":     {url.Values{"starting_after": {kernel.NewToken()}}, "starting_after"},
			"cursor not a token": {url.Values{"starting_after": {"x"}}, "starting_after"},
			"unknown account":    {url.Values{"account": {kernel.NewToken()}}, "account"},
			"empty":              {url.Values{"status": {""}}, "status"},
		} {
			r := listTransfers(t, env, p, c.query)
			apptest.Expect(t, name, r, emi.ErrTransferValidation.Code, http.StatusBadRequest)
			if !slices.ContainsFunc(r.Errors, func(e emi.FieldError) bool { return e.Field == c.field }) {
				t.Errorf("%s: errors %v do not name %s", name, r.Errors, c.field)
			}
		}
	})
}
