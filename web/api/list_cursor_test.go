package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
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

// walkByCursor reads a list page after page by cursor: the first page at
// path(""), each next one at path(the previous page's last key), until a
// page is empty or says has_more false; between runs once, after the
// first page. It returns every key read, in order.
func walkByCursor(t *testing.T, env *apptest.Env, p *apptest.Partner, op, key string, path func(after string) string, between func()) []string {
	t.Helper()
	var seen []string
	after := ""
	for page := 0; page < 20; page++ {
		r := call(t, env, p, http.MethodGet, path(after), op, nil)
		apptest.Expect(t, op, r, 0, http.StatusOK)
		items, _ := r.Data["items"].([]any)
		for _, it := range items {
			seen = append(seen, it.(map[string]any)[key].(string))
		}
		if page == 0 && between != nil {
			between()
		}
		if more, paged := r.Data["has_more"].(bool); len(items) == 0 || paged && !more {
			return seen
		}
		after = seen[len(seen)-1]
	}
	t.Fatalf("%s: still more after 20 pages: %v", op, seen)
	return nil
}

// cursorRefused checks that path (a cursor that is not the list's) is
// refused with invalid, naming starting_after.
func cursorRefused(t *testing.T, env *apptest.Env, p *apptest.Partner, what, op, path string, invalid *emi.Error) {
	t.Helper()
	r := call(t, env, p, http.MethodGet, path, op, nil)
	apptest.Expect(t, what, r, invalid.Code, http.StatusBadRequest)
	apptest.ExpectField(t, what, r, "starting_after")
}

// itemKeys are the key of each item of a list's answer.
func itemKeys(t *testing.T, r apptest.Response, key string) []string {
	t.Helper()
	items, _ := r.Data["items"].([]any)
	out := []string{}
	for _, it := range items {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}

// TestTheOtherListsTakeACursor: card_authorizations, account_transactions,
// information_requests_list and webhook_endpoints_list take starting_after
// as the lists of TestEveryListTakesACursor do. A walk by cursor reads
// each item once while items are added during it: the newest-first lists
// leave out what is newer than the walk's first page (a walk by page
// number would read an item twice), webhook_endpoints_list (oldest first)
// reads the new endpoint once at its end, also when the cursor's endpoint
// was deleted meanwhile. With page and starting_after, the page counts
// from the item after the cursor. An unknown token, another partner's, or
// one that is not of the list (another card's payment, a transaction not
// on the statement) is refused naming starting_after; without a cursor
// and a limit, information_requests_list and webhook_endpoints_list
// answer as before.
func TestTheOtherListsTakeACursor(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p, q := env.NewPartner(t, emi.PartnerCreate{Name: "Cursor"}), env.NewPartner(t, emi.PartnerCreate{Name: "Other cursor"})
	const unknown = "00000000-0000-7000-8000-000000000000"
	after := func(base string) func(string) string {
		return func(cursor string) string {
			if cursor == "" {
				return base
			}
			if strings.Contains(base, "?") {
				return base + "&starting_after=" + cursor
			}
			return base + "?starting_after=" + cursor
		}
	}

	t.Run("card_authorizations", func(t *testing.T) {
		c := newPayCard(t, env, p, "account_eur", 1000_00, nil)
		var want []string
		for range 5 {
			r := c.authorize(t, pos("1.00"))
			apptest.Expect(t, "payment", r, 0, http.StatusCreated)
			want = append(want, r.Data["token"].(string))
		}
		slices.Reverse(want)
		base := "/v2/cards/" + c.card + "/authorizations/1/2"
		got := walkByCursor(t, env, p, "card_authorizations", "token", after(base), func() {
			apptest.Expect(t, "payment during the walk", c.authorize(t, pos("1.00")), 0, http.StatusCreated)
		})
		if !slices.Equal(got, want) {
			t.Errorf("by cursor: %v, want %v", got, want)
		}
		r := call(t, env, p, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/2/2?starting_after="+want[0], "card_authorizations", nil)
		apptest.Expect(t, "page 2 after a cursor", r, 0, http.StatusOK)
		if keys := itemKeys(t, r, "token"); !slices.Equal(keys, want[3:5]) || r.Data["total"] != float64(6) {
			t.Errorf("page 2 after the newest: %v (total %v), want %v (total 6)", keys, r.Data["total"], want[3:5])
		}
		other := newPayCard(t, env, p, "account_eur", 100_00, nil)
		otherPay := other.authorize(t, pos("1.00"))
		foreign := newPayCard(t, env, q, "account_eur", 100_00, nil)
		foreignPay := foreign.authorize(t, pos("1.00"))
		for what, tok := range map[string]any{"unknown": unknown, "another card's payment": otherPay.Data["token"],
			"another partner's payment": foreignPay.Data["token"]} {
			cursorRefused(t, env, p, what, "card_authorizations", base+"?starting_after="+tok.(string), emi.ErrCardValidation)
		}
	})

	t.Run("account_transactions", func(t *testing.T) {
		acc, bal, _ := openFunded(t, env, p, "account_eur", 0)
		for i := range 5 {
			env.Fund(t, acc, bal, "EUR", int64(100+i))
		}
		base := "/v2/accounts/" + acc + "/transactions/1/2"
		all := call(t, env, p, http.MethodGet, "/v2/accounts/"+acc+"/transactions/1/100", "account_transactions", nil)
		apptest.Expect(t, "the whole statement", all, 0, http.StatusOK)
		want := itemKeys(t, all, "transaction")
		if len(want) != 5 {
			t.Fatalf("statement: %v", want)
		}
		got := walkByCursor(t, env, p, "account_transactions", "transaction", after(base), func() { env.Fund(t, acc, bal, "EUR", 1) })
		if !slices.Equal(got, want) {
			t.Errorf("by cursor: %v, want %v", got, want)
		}
		r := call(t, env, p, http.MethodGet, "/v2/accounts/"+acc+"/transactions/2/2?starting_after="+want[0], "account_transactions", nil)
		apptest.Expect(t, "page 2 after a cursor", r, 0, http.StatusOK)
		if keys := itemKeys(t, r, "transaction"); !slices.Equal(keys, want[3:5]) || r.Data["total"] != float64(6) {
			t.Errorf("page 2 after the newest: %v (total %v), want %v (total 6)", keys, r.Data["total"], want[3:5])
		}
		// The range and the cursor together.
		now := time.Now().UTC()
		r = call(t, env, p, http.MethodGet, base+"?from="+now.AddDate(0, 0, -1).Format(time.DateOnly)+"&to="+
			now.AddDate(0, 0, 1).Format(time.DateOnly)+"&starting_after="+want[1], "account_transactions", nil)
		apptest.Expect(t, "range and cursor", r, 0, http.StatusOK)
		if keys := itemKeys(t, r, "transaction"); !slices.Equal(keys, want[2:4]) {
			t.Errorf("range and cursor: %v, want %v", keys, want[2:4])
		}
		otherAcc, otherBal, _ := openFunded(t, env, p, "account_eur", 0)
		otherTxn := env.Fund(t, otherAcc, otherBal, "EUR", 100)
		foreignAcc, foreignBal, _ := openFunded(t, env, q, "account_eur", 0)
		foreignTxn := env.Fund(t, foreignAcc, foreignBal, "EUR", 100)
		for what, tok := range map[string]string{"unknown": unknown, "another account's transaction": otherTxn.Token,
			"another partner's transaction": foreignTxn.Token} {
			cursorRefused(t, env, p, what, "account_transactions", base+"?starting_after="+tok, emi.ErrAccountValidation)
		}
		apptest.Expect(t, "another partner's account, whatever the cursor", call(t, env, p, http.MethodGet,
			"/v2/accounts/"+foreignAcc+"/transactions/1/2?starting_after="+foreignTxn.Token, "account_transactions", nil),
			emi.ErrAccountNotFound.Code, http.StatusNotFound)
	})

	t.Run("information_requests_list", func(t *testing.T) {
		ask := informationRequester(t, env)
		user := createUser(t, env, p, validUser(p))
		var want []string
		for range 5 {
			want = append(want, ask(p, user))
		}
		slices.Reverse(want)
		all := call(t, env, p, http.MethodGet, "/v2/information_requests", "information_requests_list", nil)
		apptest.Expect(t, "every request", all, 0, http.StatusOK)
		if keys := itemKeys(t, all, "token"); !slices.Equal(keys, want) || all.Data["has_more"] != false {
			t.Errorf("without a cursor: %v (has_more %v), want %v", keys, all.Data["has_more"], want)
		}
		got := walkByCursor(t, env, p, "information_requests_list", "token", after("/v2/information_requests?limit=2"),
			func() { ask(p, user) })
		if !slices.Equal(got, want) {
			t.Errorf("by cursor: %v, want %v", got, want)
		}
		qUser := createUser(t, env, q, validUser(q))
		foreign := ask(q, qUser)
		for what, tok := range map[string]string{"unknown": unknown, "another partner's request": foreign, "not a token": "abc"} {
			cursorRefused(t, env, p, what, "information_requests_list", "/v2/information_requests?starting_after="+tok, emi.ErrValidation)
		}
		for _, limit := range []string{"0", "101", "two"} {
			r := call(t, env, p, http.MethodGet, "/v2/information_requests?limit="+limit, "information_requests_list", nil)
			apptest.Expect(t, "limit "+limit, r, emi.ErrValidation.Code, http.StatusBadRequest)
			apptest.ExpectField(t, "limit "+limit, r, "limit")
		}
	})

	t.Run("webhook_endpoints_list", func(t *testing.T) {
		create := func(i int) string {
			r := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create",
				map[string]any{"url": fmt.Sprintf("http://127.0.3.%d:9/hooks", i)})
			apptest.Expect(t, "endpoint", r, 0, http.StatusCreated)
			return r.Data["token"].(string)
		}
		var want []string
		for i := range 5 {
			want = append(want, create(i+1))
		}
		all := call(t, env, p, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
		apptest.Expect(t, "every endpoint", all, 0, http.StatusOK)
		if keys := itemKeys(t, all, "token"); !slices.Equal(keys, want) || all.Data["has_more"] != false {
			t.Errorf("without a limit: %v (has_more %v), want %v", keys, all.Data["has_more"], want)
		}
		// Oldest first: the endpoint created during the walk is read once,
		// at its end; the first page's last endpoint, deleted meanwhile,
		// still works as the cursor.
		var added string
		got := walkByCursor(t, env, p, "webhook_endpoints_list", "token", after("/v2/webhooks?limit=2"), func() {
			added = create(6)
			apptest.Expect(t, "delete the cursor's endpoint", call(t, env, p, http.MethodDelete, "/v2/webhooks/"+want[1],
				"webhook_endpoint_delete", nil), 0, http.StatusOK)
		})
		if w := append(slices.Clone(want), added); !slices.Equal(got, w) {
			t.Errorf("by cursor: %v, want %v", got, w)
		}
		r := call(t, env, p, http.MethodGet, "/v2/webhooks?starting_after="+want[2], "webhook_endpoints_list", nil)
		apptest.Expect(t, "after a cursor, no limit", r, 0, http.StatusOK)
		if keys := itemKeys(t, r, "token"); !slices.Equal(keys, []string{want[3], want[4], added}) || r.Data["has_more"] != false {
			t.Errorf("after %s without a limit: %v", want[2], keys)
		}
		foreign := webhookEndpoint(t, env, q)
		for what, tok := range map[string]string{"unknown": unknown, "another partner's endpoint": foreign, "not a token": "abc"} {
			cursorRefused(t, env, p, what, "webhook_endpoints_list", "/v2/webhooks?limit=2&starting_after="+tok, emi.ErrAPIWebhookValidation)
		}
		for _, limit := range []string{"0", "101", "two"} {
			r := call(t, env, p, http.MethodGet, "/v2/webhooks?limit="+limit, "webhook_endpoints_list", nil)
			apptest.Expect(t, "limit "+limit, r, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
			apptest.ExpectField(t, "limit "+limit, r, "limit")
		}
	})
}

// informationRequester returns a function that has compliance ask p about
// user (a new alert and case each time) and returns the request's token;
// one officer asks them all.
func informationRequester(t *testing.T, env *apptest.Env) func(p *apptest.Partner, user string) string {
	t.Helper()
	email := "officer-" + kernel.NewToken()[24:] + "@example.com"
	out, err := env.App.Staff.Create(emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test")),
		emi.StaffCreate{Email: email, Name: email, Roles: []emi.Role{emi.RoleCompliance}, Password: "Correct-Horse-Battery-9"})
	if err != nil {
		t.Fatal(err)
	}
	officer := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: out.User.ID,
		StaffRoles: []string{string(emi.RoleCompliance)}})
	return func(p *apptest.Partner, user string) string {
		t.Helper()
		alert := kernel.NewToken()
		if _, err := env.App.DB.Exec(`INSERT INTO monitoring_alerts (token, partner_id, subject_kind, subject_token, status, score, hits,
			raised_at, updated_at) VALUES ($1, $2, 'user', $3, 'open', 0, '[]', now(), now())`, alert, p.ID, user); err != nil {
			t.Fatal(err)
		}
		c, err := env.App.Cases.OpenCase(officer, []string{alert}, "")
		if err != nil {
			t.Fatal(err)
		}
		ir, err := env.App.Cases.RequestInformation(officer, c.Token, "source_of_funds", "Where do the customer's funds come from?")
		if err != nil {
			t.Fatal(err)
		}
		return ir.Token
	}
}
