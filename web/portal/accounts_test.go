package portal_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/web/portal/frame"
)

// openAccount opens an account through account_create and returns its
// data.
func openAccount(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) map[string]any {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v2/accounts", "account_create", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("account_create: %s", r)
	}
	return r.Data
}

// balance returns a field of an account's first balance.
func balance(acc map[string]any, field string) string {
	b := acc["balances"].([]any)[0].(map[string]any)
	s, _ := b[field].(string)
	return s
}

var accountRowRe = regexp.MustCompile(`data-testid="account-row"`)

// accountRowCount counts the rows of an accounts table.
func accountRowCount(p apptest.Page) int { return len(accountRowRe.FindAllString(p.Body, -1)) }

// accountStatus reads an account's status from the database.
func accountStatus(t *testing.T, env *apptest.Env, token string) string {
	t.Helper()
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM accounts WHERE token = $1`, token); err != nil {
		t.Fatal(err)
	}
	return st
}

// follow follows a redirect and returns the page it leads to.
func follow(t *testing.T, b *apptest.Browser, p apptest.Page) apptest.Page {
	t.Helper()
	if p.Status != http.StatusSeeOther {
		t.Fatalf("HTTP %d, want a redirect (body %.300s)", p.Status, p.Body)
	}
	return b.Get(t, p.Location)
}

// accountsEnv is an app with sandbox staff, a partner and a person who
// holds an EUR account (alias "main"), a GBP account and a virtual account
// of the EUR one.
type accountsEnv struct {
	env               *apptest.Env
	p                 *apptest.Partner
	user, email       string
	eur, gbp, virtual map[string]any
	eurTok, gbpTok    string
	virtualTok        string
	cs                *apptest.Browser
}

func newAccountsEnv(t *testing.T) *accountsEnv {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	a := &accountsEnv{env: env, p: env.NewPartner(t, emi.PartnerCreate{Name: "Accounts Partner"})}
	a.email = uniqueEmail("mara")
	a.user = createPerson(t, env, a.p, map[string]any{"email": a.email, "first_name": "Mara", "last_name": "Velikova"})
	a.eur = openAccount(t, env, a.p, map[string]any{"program": "account_eur", "user": a.user, "alias": "main"})
	a.gbp = openAccount(t, env, a.p, map[string]any{"program": "account_gbp", "user": a.user})
	a.eurTok, a.gbpTok = a.eur["token"].(string), a.gbp["token"].(string)
	a.virtual = openAccount(t, env, a.p, map[string]any{"program": "account_eur", "user": a.user, "main": a.eurTok})
	a.virtualTok = a.virtual["token"].(string)
	a.cs = env.NewBrowser()
	a.cs.SignIn(t, apptest.CSEmail)
	return a
}

func TestAccountsSearch(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	// Someone else's account, which no search below may find.
	other := createPerson(t, a.env, a.p, map[string]any{"first_name": "Ivo", "last_name": "Petrov"})
	otherTok := openAccount(t, a.env, a.p, map[string]any{"program": "account_eur", "user": other})["token"].(string)

	eurIBAN, gbpNumber, gbpSort := balance(a.eur, "iban"), balance(a.gbp, "account_number"), balance(a.gbp, "sort_code")
	virtualIBAN := balance(a.virtual, "iban")
	if eurIBAN == "" || gbpNumber == "" || len(gbpSort) != 6 || virtualIBAN == "" || virtualIBAN == eurIBAN {
		t.Fatalf("identifiers: %q %q %q %q", eurIBAN, gbpNumber, gbpSort, virtualIBAN)
	}
	link := func(tok string) string { return `href="/backoffice/accounts/` + tok + `"` }
	for _, c := range []struct {
		what, q string
		want    []string
		n       int
	}{
		{"token", a.eurTok, []string{a.eurTok}, 1},
		{"token in capitals", strings.ToUpper(a.gbpTok), []string{a.gbpTok}, 1},
		{"IBAN", eurIBAN, []string{a.eurTok}, 1},
		{"IBAN with spaces, lower case", strings.ToLower(eurIBAN[:4] + " " + eurIBAN[4:8] + " " + eurIBAN[8:]), []string{a.eurTok}, 1},
		{"a virtual account's own IBAN", virtualIBAN, []string{a.virtualTok}, 1},
		{"GBP account number", gbpNumber, []string{a.gbpTok}, 1},
		{"sort code and account number", gbpSort + gbpNumber, []string{a.gbpTok}, 1},
		{"sort code with dashes and account number", gbpSort[:2] + "-" + gbpSort[2:4] + "-" + gbpSort[4:] + " " + gbpNumber, []string{a.gbpTok}, 1},
		{"owner name", "Mara Velikova", []string{a.eurTok, a.gbpTok, a.virtualTok}, 3},
		{"part of the owner name", "velik", []string{a.eurTok, a.gbpTok, a.virtualTok}, 3},
		{"e-mail", strings.ToUpper(a.email), []string{a.eurTok, a.gbpTok, a.virtualTok}, 3},
		{"nothing", "no such account anywhere", nil, 0},
	} {
		pg := a.cs.Get(t, "/backoffice/accounts?q="+url.QueryEscape(c.q))
		if pg.Status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", c.what, pg.Status)
		}
		if n := accountRowCount(pg); n != c.n {
			t.Errorf("%s: %d rows, want %d", c.what, n, c.n)
		}
		for _, tok := range c.want {
			contains(t, c.what, pg, link(tok))
		}
		lacks(t, c.what, pg, link(otherTok))
		if c.n == 0 {
			contains(t, c.what, pg, "No accounts match.")
		}
	}

	t.Run("a row shows owner, program, status, identifiers and links", func(t *testing.T) {
		pg := a.cs.Get(t, "/backoffice/accounts?q="+a.gbpTok)
		contains(t, "GBP row", pg, `href="/backoffice/users/`+a.user+`"`, ">Mara Velikova<", ">person<", ">account_gbp<",
			`href="/backoffice/programs#program-account_gbp"`, `class="badge ok">active<`, balance(a.gbp, "iban"),
			gbpSort[:2]+"-"+gbpSort[2:4]+"-"+gbpSort[4:]+" "+gbpNumber, "1 account · page 1 of 1")
		pg = a.cs.Get(t, "/backoffice/accounts?q="+a.virtualTok)
		contains(t, "virtual row", pg, virtualIBAN, ">virtual<")
	})

	t.Run("paging: 50 a page, newest first", func(t *testing.T) {
		for i := 0; i < 50; i++ {
			openAccount(t, a.env, a.p, map[string]any{"program": "account_bgn", "user": other})
		}
		// 4 + 50 accounts: two pages.
		first := a.cs.Get(t, "/backoffice/accounts")
		contains(t, "first page", first, "54 accounts · page 1 of 2", `href="/backoffice/accounts?page=2"`)
		if n := accountRowCount(first); n != 50 {
			t.Fatalf("first page: %d rows", n)
		}
		second := a.cs.Get(t, "/backoffice/accounts?page=2")
		contains(t, "second page", second, "page 2 of 2", link(a.eurTok), link(a.gbpTok), `href="/backoffice/accounts"`)
		if n := accountRowCount(second); n != 4 {
			t.Fatalf("second page: %d rows", n)
		}
		// The search is kept in the paging links.
		byName := a.cs.Get(t, "/backoffice/accounts?q=petrov")
		contains(t, "search paging", byName, "51 accounts · page 1 of 2", `href="/backoffice/accounts?page=2&amp;q=petrov"`)
	})

	t.Run("a query over 200 characters is refused beside the field", func(t *testing.T) {
		pg := a.cs.Get(t, "/backoffice/accounts?q="+strings.Repeat("x", 201))
		if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, `id="q-error"`) {
			t.Fatalf("HTTP %d", pg.Status)
		}
	})

	t.Run("the global search finds accounts for roles that see them", func(t *testing.T) {
		pg := a.cs.Get(t, "/backoffice/search?q="+url.QueryEscape(eurIBAN))
		contains(t, "global search", pg, link(a.eurTok), "Mara Velikova")
		uw := a.env.NewBrowser()
		uw.SignIn(t, apptest.UnderwriterEmail)
		lacks(t, "underwriter's global search", uw.Get(t, "/backoffice/search?q="+url.QueryEscape(eurIBAN)), link(a.eurTok))
	})
}

func TestAccountPage(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	page := "/backoffice/accounts/" + a.eurTok
	eurIBAN := balance(a.eur, "iban")

	pg := a.cs.Get(t, page)
	contains(t, "EUR account", pg, a.eurTok, ">Mara Velikova<", `href="/backoffice/users/`+a.user+`"`,
		">account_eur<", `class="badge ok">active<`, ">main<", ">EUR<", ">0.00<", eurIBAN, ">EMIBBGSF<",
		`data-copy-text="`+eurIBAN+`"`, `data-copy-text="EMIBBGSF"`, // copy buttons
		`data-testid="virtual-accounts"`, `href="/backoffice/accounts/`+a.virtualTok+`"`, balance(a.virtual, "iban"),
		`data-testid="history-row"`, ">opened<", `data-testid="block-form"`, `data-testid="request-termination-form"`)
	contains(t, "EUR account for customer service", pg, `data-testid="account-audit"`)
	lacks(t, "EUR account for customer service", pg, `data-testid="approve-termination"`,
		`data-testid="unblock-form"`, `data-testid="pending-termination"`)

	gbp := a.cs.Get(t, "/backoffice/accounts/"+a.gbpTok)
	contains(t, "GBP account", gbp, ">GBP<", `data-testid="ident-Account number">`+balance(a.gbp, "account_number")+"<",
		`data-testid="ident-Sort code">`+balance(a.gbp, "sort_code")+"<", `data-testid="ident-IBAN">`+balance(a.gbp, "iban")+"<",
		`data-copy-text="`+balance(a.gbp, "account_number")+`"`)

	virtual := a.cs.Get(t, "/backoffice/accounts/"+a.virtualTok)
	contains(t, "virtual account", virtual, ">virtual<", "Main account", `href="/backoffice/accounts/`+a.eurTok+`"`,
		`data-testid="ident-IBAN">`+balance(a.virtual, "iban")+"<", "its main account&#39;s balances")
	lacks(t, "virtual account", virtual, eurIBAN, `data-testid="virtual-accounts"`)

	t.Run("auditors and admins read it with its audit trail and no action", func(t *testing.T) {
		for _, email := range []string{apptest.AuditorEmail, apptest.AdminEmail} {
			b := a.env.NewBrowser()
			b.SignIn(t, email)
			pg := b.Get(t, page)
			contains(t, email, pg, eurIBAN, `data-testid="account-audit"`, ">account.create<",
				`href="/backoffice/audit?resource_type=account&amp;resource_token=`+a.eurTok+`"`, "partner API (key ", ">Accounts Partner<")
			lacks(t, email, pg, `data-testid="account-actions"`, `data-testid="block-form"`)
		}
	})

	t.Run("unknown and malformed accounts are not found", func(t *testing.T) {
		for _, tok := range []string{"00000000-0000-4000-8000-000000000000", "not-a-token"} {
			pg := a.cs.Get(t, "/backoffice/accounts/"+tok)
			if pg.Status != http.StatusNotFound || !strings.Contains(pg.Body, "There is no such account.") {
				t.Errorf("%s: HTTP %d", tok, pg.Status)
			}
		}
	})

	t.Run("the person's page lists the accounts for roles that see accounts", func(t *testing.T) {
		pg := a.cs.Get(t, "/backoffice/users/"+a.user)
		contains(t, "person's page", pg, `data-testid="owner-accounts"`, `href="/backoffice/accounts/`+a.eurTok+`"`,
			`href="/backoffice/accounts/`+a.gbpTok+`"`, `href="/backoffice/accounts/`+a.virtualTok+`"`, eurIBAN)
		if n := accountRowCount(pg); n != 3 {
			t.Fatalf("%d account rows on the person's page", n)
		}
		uw := a.env.NewBrowser()
		uw.SignIn(t, apptest.UnderwriterEmail)
		lacks(t, "underwriter's view of the person", uw.Get(t, "/backoffice/users/"+a.user), `data-testid="owner-accounts"`, eurIBAN)
		nobody := createPerson(t, a.env, a.p, map[string]any{"first_name": "No", "last_name": "Accounts"})
		contains(t, "a person without accounts", a.cs.Get(t, "/backoffice/users/"+nobody), "This person has no account.")
	})
}

func TestAccountBlockAndUnblockNeedAReason(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	page := "/backoffice/accounts/" + a.eurTok
	csID := staffID(t, a.env, apptest.CSEmail)

	for _, reason := range []string{"", "  ", "no"} {
		pg := a.cs.Post(t, page+"/block", url.Values{"reason": {reason}})
		if pg.Status != http.StatusUnprocessableEntity {
			t.Fatalf("block with reason %q: HTTP %d", reason, pg.Status)
		}
		contains422(t, "block without a reason", pg, `id="reason-error"`, "give a reason", portalMessage(emi.ErrReviewValidation),
			`open data-testid="block-details"`)
	}
	if st := accountStatus(t, a.env, a.eurTok); st != emi.AccountActive {
		t.Fatalf("status after refused blocks: %s", st)
	}

	pg := follow(t, a.cs, a.cs.Post(t, page+"/block", url.Values{"reason": {"Card reported stolen, customer asked to block"}}))
	contains(t, "after the block", pg, "Account blocked", `data-testid="account-status"><span class="badge warn">blocked<`,
		"Card reported stolen, customer asked to block", "Sandbox Customer Service (you)", `data-testid="unblock-form"`)
	lacks(t, "after the block", pg, `data-testid="block-form"`)
	if st := accountStatus(t, a.env, a.eurTok); st != emi.AccountBlocked {
		t.Fatalf("status after the block: %s", st)
	}
	var audit int
	if err := a.env.App.DB.Get(&audit, `SELECT count(*) FROM audit_log WHERE action = 'account.status' AND resource_token = $1
		AND actor_id = $2 AND changes->>'to' = 'blocked' AND changes->>'reason' = 'Card reported stolen, customer asked to block'`,
		a.eurTok, csID); err != nil || audit != 1 {
		t.Fatalf("audit rows of the block: %d %v", audit, err)
	}
	var events int
	_ = a.env.App.DB.Get(&events, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2`, emi.EventAccountStatusChanged, a.eurTok)
	if events != 1 {
		t.Fatalf("%d account.status_changed events", events)
	}
	// The auditor sees the block in the audit trail.
	auditor := a.env.NewBrowser()
	auditor.SignIn(t, apptest.AuditorEmail)
	contains(t, "auditor's view", auditor.Get(t, page), ">account.status<", "Card reported stolen", "Sandbox Customer Service")

	if pg := a.cs.Post(t, page+"/unblock", url.Values{}); pg.Status != http.StatusUnprocessableEntity {
		t.Fatalf("unblock without a reason: HTTP %d", pg.Status)
	}
	pg = follow(t, a.cs, a.cs.Post(t, page+"/unblock", url.Values{"reason": {"Card found, customer confirmed"}}))
	contains(t, "after the unblock", pg, "Account unblocked", `data-testid="account-status"><span class="badge ok">active<`, "Card found, customer confirmed")
	if rows := strings.Count(pg.Body, `data-testid="history-row"`); rows != 3 {
		t.Fatalf("%d history rows, want opened, blocked, active", rows)
	}
	// Newest first.
	if i, j := strings.Index(pg.Body, "Card found"), strings.Index(pg.Body, "Card reported stolen"); i < 0 || j < 0 || i > j {
		t.Fatal("the history is not newest first")
	}
}

// contains422 is contains for a page answered with 422.
func contains422(t *testing.T, what string, p apptest.Page, wants ...string) {
	t.Helper()
	p.Status = http.StatusOK
	contains(t, what, p, wants...)
}

func TestAccountTerminationFourEyes(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	page := "/backoffice/accounts/" + a.eurTok
	newStaff(t, a.env, "second.agent@accounts.test", "Second Agent", emi.RoleCustomerService)
	second := a.env.NewBrowser()
	second.SignIn(t, "second.agent@accounts.test")

	if pg := a.cs.Post(t, page+"/terminate", url.Values{"reason": {""}}); pg.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(pg.Body, `open data-testid="request-termination-details"`) {
		t.Fatalf("termination without a reason: HTTP %d", pg.Status)
	}
	pg := follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Customer closes the relationship"}}))
	contains(t, "requester's page", pg, "Termination requested", `data-testid="pending-termination"`, "Sandbox Customer Service (you)",
		"Customer closes the relationship", `data-testid="awaiting-second"`, "Awaiting a second staff member", `data-testid="withdraw-termination"`)
	lacks(t, "requester's page", pg, `data-testid="approve-termination"`, `data-testid="request-termination-form"`)

	t.Run("the requester cannot approve", func(t *testing.T) {
		pg := follow(t, a.cs, a.cs.Post(t, page+"/terminate/approve", nil))
		contains(t, "requester's approval", pg, "You already took part in this decision (you proposed it or approved it)")
		if st := accountStatus(t, a.env, a.eurTok); st != emi.AccountActive {
			t.Fatalf("status after the requester's approval: %s", st)
		}
	})
	t.Run("a second request is refused", func(t *testing.T) {
		pg := follow(t, second, second.Post(t, page+"/terminate", url.Values{"reason": {"Another reason"}}))
		contains(t, "second request", pg, "already waits for a second person")
	})

	var requester string
	if err := a.env.App.DB.Get(&requester, `SELECT name FROM staff_users WHERE email = $1`, apptest.CSEmail); err != nil {
		t.Fatal(err)
	}
	pg = second.Get(t, page)
	contains(t, "second agent's page", pg, `data-testid="pending-termination"`, requester, "Customer closes the relationship",
		`data-testid="approve-termination"`, `data-testid="reject-termination"`)
	lacks(t, "second agent's page", pg, `data-testid="awaiting-second"`, `data-testid="withdraw-termination"`)
	pg = follow(t, second, second.Post(t, page+"/terminate/approve", nil))
	contains(t, "after the approval", pg, "Account terminated", `data-testid="account-status"><span class="badge bad">terminated<`,
		"Customer closes the relationship (approved by a second staff member)", "Second Agent (you)",
		"The account is terminated: nothing can change any more.")
	lacks(t, "after the approval", pg, `data-testid="pending-termination"`, `data-testid="block-form"`, `data-testid="request-termination-form"`)
	for _, tok := range []string{a.eurTok, a.virtualTok} {
		if st := accountStatus(t, a.env, tok); st != emi.AccountTerminated {
			t.Fatalf("account %s is %s after the approval", tok, st)
		}
	}
	contains(t, "virtual account after the approval", second.Get(t, "/backoffice/accounts/"+a.virtualTok),
		`data-testid="account-status"><span class="badge bad">terminated<`, "main account terminated")
	var audit int
	_ = a.env.App.DB.Get(&audit, `SELECT count(*) FROM audit_log WHERE resource_token = $1 AND action IN ('account.termination_requested', 'account.status')`, a.eurTok)
	if audit != 2 {
		t.Fatalf("%d audit rows of the termination, want requested + status", audit)
	}

	t.Run("a terminated account refuses every change", func(t *testing.T) {
		for _, action := range []string{"/block", "/unblock", "/terminate"} {
			pg := follow(t, a.cs, a.cs.Post(t, page+action, url.Values{"reason": {"Try again after the end"}}))
			contains(t, action, pg, portalMessage(emi.ErrAccountInvalidTransition))
		}
		pg := follow(t, second, second.Post(t, page+"/terminate/approve", nil))
		contains(t, "approve again", pg, "No request for the termination of this account waits any more")
	})

	t.Run("the requester may withdraw", func(t *testing.T) {
		page := "/backoffice/accounts/" + a.gbpTok
		follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Opened by mistake"}}))
		pg := follow(t, a.cs, a.cs.Post(t, page+"/terminate/withdraw", nil))
		contains(t, "after the withdrawal", pg, "Termination request withdrawn", `data-testid="request-termination-form"`)
		lacks(t, "after the withdrawal", pg, `data-testid="pending-termination"`)
		if st := accountStatus(t, a.env, a.gbpTok); st != emi.AccountActive {
			t.Fatalf("status after the withdrawal: %s", st)
		}
		var n int
		_ = a.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE resource_token = $1 AND action = 'account.termination_withdrawn'`, a.gbpTok)
		if n != 1 {
			t.Fatalf("%d withdrawal audit rows", n)
		}
	})
}

func TestAccountTerminationRefusedWhileABalanceIsNotZero(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	page := "/backoffice/accounts/" + a.eurTok
	eurBal := balance(a.eur, "token")
	a.env.Fund(t, a.eurTok, eurBal, "EUR", 125050)
	pg := a.cs.Get(t, page)
	contains(t, "page with money", pg, ">1250.50<", `data-testid="balance-warning"`)
	// A termination is refused at the request while money is on a balance.
	pg = follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Customer closes the relationship"}}))
	contains(t, "request with money", pg, portalMessage(emi.ErrBalanceNotZero))
	lacks(t, "request with money", pg, `data-testid="pending-termination"`)
	for _, tok := range []string{a.eurTok, a.virtualTok} {
		if st := accountStatus(t, a.env, tok); st != emi.AccountActive {
			t.Fatalf("account %s is %s after the refused request", tok, st)
		}
	}
	// Paid out, the request and a second agent's approval go through.
	a.env.PayOut(t, a.eurTok, eurBal, "EUR", 125050)
	follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Customer closes the relationship"}}))
	newStaff(t, a.env, "second.agent@accounts.test", "Second Agent", emi.RoleCustomerService)
	second := a.env.NewBrowser()
	second.SignIn(t, "second.agent@accounts.test")
	pg = follow(t, second, second.Post(t, page+"/terminate/approve", nil))
	contains(t, "approval when paid out", pg, "Account terminated")
	var pending int
	_ = a.env.App.DB.Get(&pending, `SELECT count(*) FROM control_requests WHERE subject = 'account:' || $1 AND status = 'pending'`, a.eurTok)
	if pending != 0 {
		t.Fatal("the termination request outlived the termination")
	}
}

func TestProgramsScreen(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	auditor := env.NewBrowser()
	auditor.SignIn(t, apptest.AuditorEmail)
	pg := auditor.Get(t, "/backoffice/programs")
	contains(t, "programs", pg, "EUR account", "BGN account", "GBP account", "EUR and BGN account", "EUR cards (non-personalized)",
		"UK sort code and account number, GB IBAN and BIC", "Bulgarian IBAN and BIC", "yes: virtual, plastic", ">53999403<",
		"36 months", "every partner", ">usage_std", ">limits_high", ">mcc_std", "schedule fees", "web service fees")
	for _, code := range []string{"account_eur", "account_bgn", "account_gbp", "account_multi", "card_eur"} {
		contains(t, code, pg, `data-testid="program-`+code+`"`)
	}
	if n := strings.Count(pg.Body, `data-testid="program-`) - strings.Count(pg.Body, `data-testid="program-groups"`); n != 5 {
		t.Fatalf("%d programs, want 5", n)
	}
	// The default of each kind is marked; limits_high is not a default.
	if !regexp.MustCompile(`limits_std\s*<span class="badge ok">default</span>`).MatchString(pg.Body) {
		t.Error("limits_std is not marked as the default")
	}
	if regexp.MustCompile(`limits_high\s*<span class="badge ok">default</span>`).MatchString(pg.Body) {
		t.Error("limits_high is marked as a default")
	}
	// The multi-currency account has no cards and no groups.
	multi := pg.Body[strings.Index(pg.Body, `data-testid="program-account_multi"`):]
	multi = multi[:strings.Index(multi, "</section>")]
	if !strings.Contains(multi, `<dt>Cards</dt><dd class="">no</dd>`) || strings.Contains(multi, "usage_std") {
		t.Errorf("account_multi: %s", multi)
	}
}

// TestCompanyPageListsItsAccounts: the approved company's merchant holds an
// account; the company page lists it, and the account's owner links back.
func TestCompanyPageListsItsAccounts(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Company Partner"})
	app, _ := createApplication(t, env, p, sandboxApplication(p))
	startWorkers(t, env)
	waitStatus(t, env, app, emi.AppApproved)
	var merchant string
	if err := env.App.DB.Get(&merchant, `SELECT onboarded_merchant FROM applications WHERE token = $1`, app); err != nil {
		t.Fatal(err)
	}
	acc := openAccount(t, env, p, map[string]any{"program": "account_multi", "merchant": merchant})
	tok := acc["token"].(string)
	master := openAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": p.Merchant})["token"].(string)

	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	pg := admin.Get(t, "/backoffice/companies/"+app)
	contains(t, "company page", pg, `data-testid="owner-accounts"`, `href="/backoffice/accounts/`+tok+`"`, ">account_multi<")
	lacks(t, "company page", pg, `href="/backoffice/accounts/`+master+`"`)
	contains(t, "account page", admin.Get(t, "/backoffice/accounts/"+tok), `href="/backoffice/companies/`+app+`"`, ">company<", ">EUR<", ">BGN<")
	contains(t, "master merchant's account", admin.Get(t, "/backoffice/accounts/"+master), `href="/backoffice/partners/`+p.ID+`"`, "partner&#39;s own merchant")

	// Customer service sees the account, its owner without the company
	// page they may not open.
	cs := env.NewBrowser()
	cs.SignIn(t, apptest.CSEmail)
	pg = cs.Get(t, "/backoffice/accounts/"+tok)
	contains(t, "account page for customer service", pg, ">company<")
	lacks(t, "account page for customer service", pg, `href="/backoffice/companies/`)
}

// The API codes the account screens can show have a text for people.
func TestAccountErrorsHaveMessages(t *testing.T) {
	for _, e := range []*emi.Error{emi.ErrAccountNotFound, emi.ErrAccountValidation, emi.ErrProgramNotFound,
		emi.ErrAccountInvalidTransition, emi.ErrBalanceNotZero} {
		if m := frame.Message(e); strings.Contains(m, "could not be completed") {
			t.Errorf("%d %s has no message", e.Code, e.Key)
		}
	}
}

// TestPartnerTerminationVoidsAPendingStaffRequest: when the partner
// terminates an account a staff member asked to terminate, the request is
// answered: it closes as void (audited, the requester told), nobody can
// approve it any more and the page offers nothing on it.
func TestPartnerTerminationVoidsAPendingStaffRequest(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	page := "/backoffice/accounts/" + a.gbpTok
	newStaff(t, a.env, "second.agent@void.test", "Second Agent", emi.RoleCustomerService)
	second := a.env.NewBrowser()
	second.SignIn(t, "second.agent@void.test")
	follow(t, a.cs, a.cs.Post(t, page+"/terminate", url.Values{"reason": {"Customer closes the relationship"}}))
	contains(t, "second agent's page before", second.Get(t, page), `data-testid="approve-termination"`)

	if r := api(t, a.env, a.p, http.MethodDelete, "/v2/accounts/"+a.gbpTok, "account_terminate", nil); r.Status != http.StatusOK {
		t.Fatalf("account_terminate: %s", r)
	}
	var status string
	if err := a.env.App.DB.Get(&status, `SELECT status FROM control_requests WHERE subject = 'account:' || $1`, a.gbpTok); err != nil ||
		status != "void" {
		t.Fatalf("the staff request after the partner's termination: %q %v, want void", status, err)
	}
	var voided int
	if err := a.env.App.DB.Get(&voided, `SELECT count(*) FROM audit_log WHERE resource_token = $1 AND action = 'account.termination_voided'`,
		a.gbpTok); err != nil || voided != 1 {
		t.Fatalf("%d void audit rows (%v), want 1", voided, err)
	}
	pg := second.Get(t, page)
	lacks(t, "second agent's page after", pg, `data-testid="approve-termination"`, `data-testid="reject-termination"`,
		`data-testid="pending-termination"`)
	pg = follow(t, second, second.Post(t, page+"/terminate/approve", nil))
	contains(t, "a late approval", pg, "No request for the termination of this account waits any more")
}
