package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/ukbank"
)

func createAccount(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) apptest.Response {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v2/accounts", "account_create", body)
	apptest.Expect(t, "account_create", r, 0, http.StatusCreated)
	return r
}

func balancesOf(r apptest.Response) []map[string]any {
	var out []map[string]any
	for _, b := range r.Data["balances"].([]any) {
		out = append(out, b.(map[string]any))
	}
	return out
}

var bgIBAN = regexp.MustCompile(`^BG[0-9]{2}EMIB9661` + `10[0-9]{8}$`)

func TestAccountsOpenWithIdentifiers(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))

	eur := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "alias": "main"})
	b := balancesOf(eur)
	if len(b) != 1 || b[0]["currency"] != "EUR" || b[0]["available"] != "0.00" || !bgIBAN.MatchString(b[0]["iban"].(string)) ||
		iban.Validate(b[0]["iban"].(string)) != nil || b[0]["bic"] != "EMIBBGSF" || eur.Data["alias"] != "main" {
		t.Fatalf("EUR account: %s", eur)
	}
	gbp := balancesOf(createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user}))
	num, sort := gbp[0]["account_number"].(string), gbp[0]["sort_code"].(string)
	if sort != ukbank.DefaultScheme.SortCode || !ukbank.DefaultScheme.Valid(num) || iban.Validate(gbp[0]["iban"].(string)) != nil ||
		gbp[0]["iban"].(string)[:2] != "GB" || gbp[0]["iban"].(string)[8:] != sort+num {
		t.Fatalf("GBP balance: %v", gbp[0])
	}
	multi := balancesOf(createAccount(t, env, p, map[string]any{"program": "account_multi", "merchant": p.Merchant}))
	if len(multi) != 2 || multi[0]["currency"] != "EUR" || multi[1]["currency"] != "BGN" || multi[0]["iban"] == multi[1]["iban"] || multi[0]["token"] == multi[1]["token"] {
		t.Fatalf("multi-currency: %v", multi)
	}
	skip := balancesOf(createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user, "skip_iban_generation": true}))
	if skip[0]["iban"] != "" || skip[0]["account_number"] != "" || skip[0]["sort_code"] != "" || skip[0]["bic"] != "" {
		t.Fatalf("skipped identifiers: %v", skip)
	}

	t.Run("100 concurrent creates give 100 distinct valid IBANs", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[string]bool{}
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prog := []string{"account_eur", "account_gbp"}[i%2]
				r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/accounts", Operation: "account_create",
					JSON: map[string]any{"program": prog, "user": user, "alias": fmt.Sprint(i)}})
				if r.Code != 0 {
					t.Errorf("create %d: %s", i, r)
					return
				}
				ib := balancesOf(r)[0]["iban"].(string)
				mu.Lock()
				defer mu.Unlock()
				if seen[ib] || iban.Validate(ib) != nil {
					t.Errorf("IBAN %s repeated or invalid", ib)
				}
				seen[ib] = true
			}()
		}
		wg.Wait()
		if len(seen) != 100 {
			t.Fatalf("%d distinct IBANs", len(seen))
		}
	})
}

func TestAccountCreateRules(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	user := createUser(t, env, p, validUser(p))
	foreignUser := createUser(t, env, other, validUser(other))
	for _, c := range []struct {
		name   string
		body   map[string]any
		code   int
		status int
	}{
		{"no owner", map[string]any{"program": "account_eur"}, 13001, 400},
		{"two owners", map[string]any{"program": "account_eur", "user": user, "merchant": p.Merchant}, 13001, 400},
		{"no program", map[string]any{"user": user}, 13001, 400},
		{"unknown field", map[string]any{"program": "account_eur", "user": user, "currency": "EUR"}, 13001, 400},
		{"unknown program", map[string]any{"program": "account_xyz", "user": user}, 13003, 404},
		{"unknown user", map[string]any{"program": "account_eur", "user": kernel.NewToken()}, 13004, 404},
		{"foreign user", map[string]any{"program": "account_eur", "user": foreignUser}, 13004, 404},
		{"foreign merchant", map[string]any{"program": "account_eur", "merchant": other.Merchant}, 13004, 404},
		{"malformed user", map[string]any{"program": "account_eur", "user": "x"}, 13004, 404},
	} {
		r := call(t, env, p, http.MethodPost, "/v2/accounts", "account_create", c.body)
		apptest.Expect(t, c.name, r, c.code, c.status)
	}
	t.Run("a program restricted to other partners is not found", func(t *testing.T) {
		prog := accounts.SandboxPrograms()[0]
		prog.Code, prog.AllowedPartners = "account_private", []string{other.ID}
		if err := env.App.AccountStore.UpsertProgram(complianceCtx(), prog); err != nil {
			t.Fatal(err)
		}
		apptest.Expect(t, "private program", call(t, env, p, http.MethodPost, "/v2/accounts", "account_create",
			map[string]any{"program": "account_private", "user": user}), 13003, 404)
		createAccount(t, env, other, map[string]any{"program": "account_private", "user": foreignUser})
	})
	t.Run("onboarded merchants: account-opening may, acquiring only may not", func(t *testing.T) {
		app := createApplication(t, env, p, sandboxApplication(p))
		merchant := waitEvent(t, env, emi.EventApplicationApproved, app)["merchant"].(string)
		createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": merchant})
		body := sandboxApplication(p)
		body["products"] = []string{"pos"}
		app = createApplication(t, env, p, body)
		pos := waitEvent(t, env, emi.EventApplicationApproved, app)["merchant"].(string)
		r := call(t, env, p, http.MethodPost, "/v2/accounts", "account_create", map[string]any{"program": "account_eur", "merchant": pos})
		apptest.Expect(t, "acquiring-only merchant", r, 13001, 400)
		apptest.ExpectField(t, "acquiring-only merchant", r, "merchant")
	})
	t.Run("a removed user cannot open accounts; a user with accounts cannot be removed", func(t *testing.T) {
		u := createUser(t, env, p, validUser(p))
		acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": u}).Data["token"].(string)
		apptest.Expect(t, "remove with an account", call(t, env, p, http.MethodDelete, "/v2/users/"+u, "user_remove", nil), -4, http.StatusConflict)
		apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+acc, "account_terminate", nil), 0, http.StatusOK)
		apptest.Expect(t, "remove", call(t, env, p, http.MethodDelete, "/v2/users/"+u, "user_remove", nil), 0, http.StatusOK)
		apptest.Expect(t, "account for a removed user", call(t, env, p, http.MethodPost, "/v2/accounts", "account_create",
			map[string]any{"program": "account_eur", "user": u}), 13004, 404)
	})
}

func TestVirtualAccounts(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainTok := main.Data["token"].(string)
	v := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainTok})
	vb := balancesOf(v)
	if v.Data["virtual"] != true || v.Data["main"] != mainTok || len(vb) != 1 || vb[0]["token"] != balancesOf(main)[0]["token"] ||
		vb[0]["iban"] == balancesOf(main)[0]["iban"] || iban.Validate(vb[0]["iban"].(string)) != nil {
		t.Fatalf("virtual account: %s", v)
	}
	var routed string
	_ = env.App.DB.Get(&routed, `SELECT balance FROM ibans WHERE iban = $1 AND virtual`, vb[0]["iban"])
	if routed != balancesOf(main)[0]["token"] {
		t.Fatalf("the virtual IBAN routes to %q", routed)
	}
	other2 := createUser(t, env, p, validUser(p))
	for name, body := range map[string]map[string]any{
		"another owner":   {"program": "account_eur", "user": other2, "main": mainTok},
		"a virtual main":  {"program": "account_eur", "user": user, "main": v.Data["token"]},
		"another program": {"program": "account_bgn", "user": user, "main": mainTok},
		"an unknown main": {"program": "account_eur", "user": user, "main": kernel.NewToken()},
	} {
		apptest.Expect(t, name, call(t, env, p, http.MethodPost, "/v2/accounts", "account_create", body), 13005, http.StatusConflict)
	}
	foreignUser := createUser(t, env, other, validUser(other))
	apptest.Expect(t, "a foreign main", call(t, env, other, http.MethodPost, "/v2/accounts", "account_create",
		map[string]any{"program": "account_eur", "user": foreignUser, "main": mainTok}), 13005, http.StatusConflict)

	t.Run("terminating the main account terminates its virtual accounts", func(t *testing.T) {
		apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+mainTok, "account_terminate", nil), 0, http.StatusOK)
		d := call(t, env, p, http.MethodGet, "/v2/accounts/"+v.Data["token"].(string), "account_details", nil)
		if d.Data["status"] != "terminated" {
			t.Fatalf("virtual account after its main's termination: %s", d)
		}
		apptest.Expect(t, "virtual on a terminated main", call(t, env, p, http.MethodPost, "/v2/accounts", "account_create",
			map[string]any{"program": "account_eur", "user": user, "main": mainTok}), 13005, http.StatusConflict)
	})
}

func TestAccountStatusLifecycle(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	user := createUser(t, env, p, validUser(p))
	acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)
	path := "/v2/accounts/" + acc
	status := func(s string) apptest.Response {
		return call(t, env, p, http.MethodPut, path+"/status", "account_status", map[string]any{"status": s})
	}
	if r := status("blocked"); r.Code != 0 || r.Data["status"] != "blocked" {
		t.Fatalf("block: %s", r)
	}
	apptest.Expect(t, "block twice", status("blocked"), 0, http.StatusOK)
	apptest.Expect(t, "unblock", status("active"), 0, http.StatusOK)
	apptest.Expect(t, "unknown status", status("frozen"), 13001, 400)
	apptest.Expect(t, "terminated via status", status("terminated"), 13001, 400)
	for _, r := range []apptest.Response{
		call(t, env, other, http.MethodGet, path, "account_details", nil),
		call(t, env, other, http.MethodPut, path+"/status", "account_status", map[string]any{"status": "blocked"}),
		call(t, env, other, http.MethodDelete, path, "account_terminate", nil),
		call(t, env, p, http.MethodGet, "/v2/accounts/"+kernel.NewToken(), "account_details", nil),
	} {
		apptest.Expect(t, "foreign or unknown", r, 13002, http.StatusNotFound)
	}
	bal := balancesOf(call(t, env, p, http.MethodGet, path, "account_details", nil))[0]["token"].(string)
	env.Fund(t, acc, bal, "EUR", 1250)
	apptest.Expect(t, "terminate with money", call(t, env, p, http.MethodDelete, path, "account_terminate", nil), 13007, http.StatusConflict)
	d := call(t, env, p, http.MethodGet, path, "account_details", nil)
	if balancesOf(d)[0]["available"] != "12.50" || d.Data["status"] != "active" {
		t.Fatalf("after a refused termination: %s", d)
	}
	env.PayOut(t, acc, bal, "EUR", 1250)
	apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, path, "account_terminate", nil), 0, http.StatusOK)
	apptest.Expect(t, "reactivate", status("active"), 13006, http.StatusConflict)
	apptest.Expect(t, "terminate again", call(t, env, p, http.MethodDelete, path, "account_terminate", nil), 13006, http.StatusConflict)
	var statuses []string
	_ = env.App.DB.Select(&statuses, `SELECT convert_from(body, 'UTF8')::jsonb->'data'->>'status' FROM events
		WHERE type = 'account.status_changed' AND resource_token = $1 ORDER BY seq`, acc)
	if fmt.Sprint(statuses) != "[blocked active terminated]" {
		t.Fatalf("account.status_changed events: %v", statuses)
	}
	var history int
	_ = env.App.DB.Get(&history, `SELECT count(*) FROM account_status_history WHERE account = $1`, acc)
	if history != 4 {
		t.Fatalf("%d history rows", history)
	}
}

func TestAccountsListPaging(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	user := createUser(t, env, p, validUser(p))
	var tokens []string
	for i := 0; i < 11; i++ {
		tokens = append(tokens, createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "alias": fmt.Sprint(i)}).Data["token"].(string))
	}
	createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user})
	createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": p.Merchant})
	list := func(path string) apptest.Response {
		return call(t, env, p, http.MethodGet, path, "accounts_list", nil)
	}
	r := list("/v2/accounts/1/10?user=" + user)
	items := r.Data["items"].([]any)
	if len(items) != 10 || r.Data["total"] != float64(12) || r.Data["page"] != float64(1) || r.Data["limit"] != float64(10) ||
		items[0].(map[string]any)["program"] != "account_gbp" || items[0].(map[string]any)["balances"] != nil {
		t.Fatalf("page 1: %s", r)
	}
	if r := list("/v2/accounts/2/10?user=" + user); len(r.Data["items"].([]any)) != 2 || r.Data["items"].([]any)[1].(map[string]any)["token"] != tokens[0] {
		t.Fatalf("page 2: %s", r)
	}
	if r := list("/v2/accounts/1/10?program=account_gbp"); len(r.Data["items"].([]any)) != 1 {
		t.Fatalf("program filter: %s", r)
	}
	if r := list("/v2/accounts/1/10?merchant=" + p.Merchant); len(r.Data["items"].([]any)) != 1 {
		t.Fatalf("merchant filter: %s", r)
	}
	for _, path := range []string{"/v2/accounts/1/11", "/v2/accounts/0/10", "/v2/accounts/x/10", "/v2/accounts/1/0", "/v2/accounts/1/10?colour=red"} {
		apptest.Expect(t, path, list(path), 13001, 400)
	}
	// The paging words are the same on every partner list (one rule in
	// the service, each list's own code).
	r = list("/v2/accounts/0/11")
	got := map[string]string{}
	for _, f := range r.Errors {
		got[f.Field] = f.Message
	}
	if got["page"] != "must be 1 or more" || got["limit"] != "must be from 1 to 10" || len(got) != 2 {
		t.Fatalf("paging problems %v", got)
	}
	if r := call(t, env, other, http.MethodGet, "/v2/accounts/1/10?user="+user, "accounts_list", nil); len(r.Data["items"].([]any)) != 0 || r.Data["total"] != float64(0) {
		t.Fatalf("another partner sees accounts: %s", r)
	}
}

func TestAccountStaffActions(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	cs1 := staffCtx(t, env, "cs1@x.test", emi.RoleCustomerService)
	cs2 := staffCtx(t, env, "cs2@x.test", emi.RoleCustomerService)
	auditor := staffCtx(t, env, "aud@x.test", emi.RoleAuditor)
	user := createUser(t, env, p, validUser(p))
	acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	tok := acc.Data["token"].(string)
	ib := balancesOf(acc)[0]["iban"].(string)
	createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": tok})

	for _, q := range []string{tok, ib, "Velikova", "mara velikova"} {
		items, _, err := env.App.Accounts.Search(cs1, q, 1)
		if err != nil || len(items) == 0 {
			t.Fatalf("search %q: %d %v", q, len(items), err)
		}
	}
	if _, err := env.App.Accounts.StaffSetStatus(cs1, tok, emi.AccountBlocked, ""); !is(err, emi.ErrReviewValidation) {
		t.Fatalf("block without reason: %v", err)
	}
	if _, err := env.App.Accounts.StaffSetStatus(auditor, tok, emi.AccountBlocked, "card stolen"); !is(err, emi.ErrForbidden) {
		t.Fatalf("auditor blocked: %v", err)
	}
	if a, err := env.App.Accounts.StaffSetStatus(cs1, tok, emi.AccountBlocked, "customer reports a stolen phone"); err != nil || a.Status != emi.AccountBlocked {
		t.Fatalf("block: %v", err)
	}
	if err := env.App.Accounts.RequestTermination(cs1, tok, "customer asked to close the account"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Accounts.ApproveTermination(cs1, tok); !is(err, emi.ErrFourEyes) {
		t.Fatalf("the requester approved: %v", err)
	}
	v, err := env.App.Accounts.Get(cs2, tok)
	if err != nil || v.PendingTermination == nil || len(v.Virtuals) != 1 || len(v.History) != 2 {
		t.Fatalf("account view: %+v %v", v, err)
	}
	a, err := env.App.Accounts.ApproveTermination(cs2, tok)
	if err != nil || a.Status != emi.AccountTerminated {
		t.Fatalf("second approval: %v", err)
	}
	v, _ = env.App.Accounts.Get(cs2, tok)
	if v.PendingTermination != nil || v.Virtuals[0].Status != emi.AccountTerminated || v.History[len(v.History)-1].Reason == "" {
		t.Fatalf("after termination: %+v", v)
	}
}
