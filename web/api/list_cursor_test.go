package api_test

import (
	"net/http"
	"slices"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestEveryListTakesACursor: accounts_list, cards_list and events_list take
// starting_after (the last token of the previous page) beside the seed's
// page and limit; a walk by cursor gets each item once, also with an item
// created between two pages; another partner's token as cursor is
// refused naming the parameter; events' former name (after) still works,
// but not both at once.
func TestEveryListTakesACursor(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p, q := env.NewPartner(t, emi.PartnerCreate{Name: "Cursor"}), env.NewPartner(t, emi.PartnerCreate{Name: "Other cursor"})
	user := createUser(t, env, p, validUser(p))
	var accounts, cards []string
	for range 5 {
		r := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
		accounts = append(accounts, r.Data["token"].(string))
		c := call(t, env, p, http.MethodPost, "/v2/cards", "card_create", map[string]any{"account": r.Data["token"], "type": "virtual"})
		apptest.Expect(t, "card_create", c, 0, http.StatusCreated)
		cards = append(cards, c.Data["token"].(string))
	}
	slices.Reverse(accounts)
	slices.Reverse(cards)
	foreignAcc, _, _ := openFunded(t, env, q, "account_eur", 0)
	for _, l := range []struct {
		name, base, op string
		want           []string
		invalid        *emi.Error
		foreign        string
		more           func()
	}{
		{"accounts", "/v2/accounts/1/2", "accounts_list", accounts, emi.ErrAccountValidation, foreignAcc, func() {
			createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
		}},
		{"cards", "/v2/cards/1/2", "cards_list", cards, emi.ErrCardValidation, "", nil},
	} {
		var seen []string
		path := l.base
		for page := 0; page < 10; page++ {
			r := call(t, env, p, http.MethodGet, path, l.op, nil)
			apptest.Expect(t, l.op, r, 0, http.StatusOK)
			items, _ := r.Data["items"].([]any)
			if len(items) == 0 {
				break
			}
			for _, it := range items {
				seen = append(seen, it.(map[string]any)["token"].(string))
			}
			if page == 0 && l.more != nil {
				l.more() // newer than the cursor: not on the next pages
			}
			path = l.base + "?starting_after=" + seen[len(seen)-1]
		}
		if !slices.Equal(seen, l.want) {
			t.Errorf("%s by cursor: %v, want %v", l.name, seen, l.want)
		}
		foreign := l.foreign
		if foreign == "" {
			foreign = "00000000-0000-7000-8000-000000000000"
		}
		r := call(t, env, p, http.MethodGet, l.base+"?starting_after="+foreign, l.op, nil)
		apptest.Expect(t, l.name+" with a foreign cursor", r, l.invalid.Code, http.StatusBadRequest)
		if !slices.ContainsFunc(r.Errors, func(e emi.FieldError) bool { return e.Field == "starting_after" }) {
			t.Errorf("%s: errors %v do not name starting_after", l.name, r.Errors)
		}
	}

	for range 3 {
		emitEvent(t, env, p.ID, emi.EventUserKYCUpdated, map[string]any{"kyc_status": "approved"})
	}
	all := listEvents(t, env, p, "/v2/events/1/100")
	ids, _ := itemIDs(t, all)
	if len(ids) < 3 {
		t.Fatalf("events: %v", ids)
	}
	// The list is newest first; the cursor takes the events after one.
	oldest := ids[len(ids)-1]
	byNew := listEvents(t, env, p, "/v2/events/1/100?starting_after="+oldest)
	byOld := listEvents(t, env, p, "/v2/events/1/100?after="+oldest)
	newIDs, _ := itemIDs(t, byNew)
	oldIDs, _ := itemIDs(t, byOld)
	if !slices.Equal(newIDs, oldIDs) || len(newIDs) != len(ids)-1 {
		t.Errorf("events after the first: starting_after %v, after %v (of %v)", newIDs, oldIDs, ids)
	}
	both := listEvents(t, env, p, "/v2/events/1/100?after="+ids[0]+"&starting_after="+ids[0])
	apptest.Expect(t, "both names", both, emi.ErrValidation.Code, http.StatusBadRequest)
	bad := listEvents(t, env, p, "/v2/events/1/100?starting_after=00000000-0000-7000-8000-000000000000")
	apptest.Expect(t, "unknown event cursor", bad, emi.ErrValidation.Code, http.StatusBadRequest)
	if !slices.ContainsFunc(bad.Errors, func(e emi.FieldError) bool { return e.Field == "starting_after" }) {
		t.Errorf("events: errors %v do not name starting_after", bad.Errors)
	}
}
