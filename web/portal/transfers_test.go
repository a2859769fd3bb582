package portal_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/accounts"
)

var statementLineRe = regexp.MustCompile(`data-testid="statement-line"`)

func statementLines(p apptest.Page) int { return len(statementLineRe.FindAllString(p.Body, -1)) }

// payExternal makes an outgoing SEPA payment through the API.
func payExternal(t *testing.T, env *apptest.Env, p *apptest.Partner, account, amount, name, reference string) string {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v2/transfers/external", "transfer_external_create", map[string]any{
		"source": map[string]any{"account": account}, "destination": map[string]any{"name": name, "iban": "DE89370400440532013000"},
		"amount": amount, "currency": "EUR", "reference": reference})
	if r.Status != http.StatusCreated {
		t.Fatalf("transfer_external_create: %s", r)
	}
	return r.Data["token"].(string)
}

// postWithReference posts a funding credit with a reference the API
// would refuse (tabs, carriage returns), as only a ledger posting can.
func postWithReference(t *testing.T, env *apptest.Env, account, balance string, minor int64, ref string) {
	t.Helper()
	if _, err := env.App.Ledger.Post(context.Background(), emi.LedgerTxn{Kind: emi.TxnIncoming, Reference: ref,
		Entries: []emi.Entry{
			{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: -minor},
			{Balance: balance, Account: account, Currency: "EUR", Amount: minor},
		}}); err != nil {
		t.Fatal(err)
	}
}

func TestAccountStatementPage(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	bal := balance(a.eur, "token")
	page := "/backoffice/accounts/" + a.eurTok
	a.env.Fund(t, a.eurTok, bal, "EUR", 10000)
	out := payExternal(t, a.env, a.p, a.eurTok, "12.50", "Acme GmbH", "Invoice 7")
	a.env.Fund(t, a.virtualTok, bal, "EUR", 250)

	pg := a.cs.Get(t, page)
	contains(t, "account page", pg, `data-testid="statement"`, `data-testid="balance-posted">90.00<`, `data-testid="balance-held">0.00<`,
		`data-testid="balance-available">90.00<`, `href="/backoffice/transfers/`+out+`"`, "Acme GmbH", "DE89370400440532013000",
		"Invoice 7", ">outgoing payment<", ">incoming payment<", `data-testid="statement-opening">0.00<`,
		`data-testid="statement-closing">90.00<`, "3 movements · page 1 of 1", `href="/backoffice/accounts/`+a.virtualTok+`"`,
		`href="/backoffice/accounts/`+a.eurTok+`/statement.csv"`)
	if n := statementLines(pg); n != 3 {
		t.Fatalf("%d statement lines", n)
	}
	// Reconciliation: the newest line's running balance is the posted figure.
	after := regexp.MustCompile(`data-testid="statement-balance-after">([^<]+)<`).FindAllStringSubmatch(pg.Body, -1)
	if len(after) != 3 || after[0][1] != "90.00" || after[1][1] != "87.50" || after[2][1] != "100.00" {
		t.Fatalf("running balances %v", after)
	}

	virtual := a.cs.Get(t, "/backoffice/accounts/"+a.virtualTok)
	if n := statementLines(virtual); n != 1 {
		t.Fatalf("the virtual account shows %d lines, want its own one", n)
	}

	t.Run("date filter", func(t *testing.T) {
		today := a.env.Clock.Now().UTC().Format(time.DateOnly)
		later := a.env.Clock.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
		pg := a.cs.Get(t, page+"?from="+today+"&to="+today)
		contains(t, "today", pg, `value="`+today+`"`, `href="/backoffice/accounts/`+a.eurTok+`/statement.csv?from=`+today+`&amp;to=`+today+`"`)
		if n := statementLines(pg); n != 3 {
			t.Fatalf("today: %d lines", n)
		}
		pg = a.cs.Get(t, page+"?from="+later)
		contains(t, "later", pg, "No movements in this range.", `data-testid="statement-opening">90.00<`)
		bad := a.cs.Get(t, page+"?from=2026-02-30&to=x")
		if bad.Status != http.StatusUnprocessableEntity {
			t.Fatalf("bad range: HTTP %d", bad.Status)
		}
		contains422(t, "bad range", bad, "must be a date as YYYY-MM-DD", `id="from-error"`, `id="to-error"`)
		backwards := a.cs.Get(t, page+"?from="+later+"&to="+today)
		contains422(t, "from after to", backwards, "must not be after to")
	})

	t.Run("paging", func(t *testing.T) {
		gbpBal := balance(a.gbp, "token")
		for range 53 {
			a.env.Fund(t, a.gbpTok, gbpBal, "GBP", 100)
		}
		gp := "/backoffice/accounts/" + a.gbpTok
		first := a.cs.Get(t, gp)
		contains(t, "page 1", first, "53 movements · page 1 of 2", `href="/backoffice/accounts/`+a.gbpTok+`?page=2#statement"`,
			`data-testid="statement-balance-after">53.00<`)
		if n := statementLines(first); n != 50 {
			t.Fatalf("page 1: %d lines", n)
		}
		second := a.cs.Get(t, gp+"?page=2")
		contains(t, "page 2", second, "page 2 of 2", `href="/backoffice/accounts/`+a.gbpTok+`#statement"`,
			`data-testid="statement-balance-after">1.00<`)
		if n := statementLines(second); n != 3 {
			t.Fatalf("page 2: %d lines", n)
		}
	})

	t.Run("auditors read it too", func(t *testing.T) {
		b := a.env.NewBrowser()
		b.SignIn(t, apptest.AuditorEmail)
		contains(t, "auditor", b.Get(t, page), `data-testid="statement-line"`, `href="/backoffice/transfers/`+out+`"`)
	})

	t.Run("staff see another partner's customer by name", func(t *testing.T) {
		q := a.env.NewPartner(t, emi.PartnerCreate{Name: "Other Partner"})
		ivo := createPerson(t, a.env, q, map[string]any{"first_name": "Ivo", "last_name": "Petrov"})
		qIBAN := balance(openAccount(t, a.env, q, map[string]any{"program": "account_eur", "user": ivo}), "iban")
		r := api(t, a.env, a.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
			"source": map[string]any{"account": a.eurTok}, "destination": map[string]any{"iban": qIBAN}, "amount": "1.00", "currency": "EUR"})
		if r.Status != http.StatusCreated {
			t.Fatalf("transfer_create: %s", r)
		}
		contains(t, "internal line", a.cs.Get(t, page), ">internal transfer<", "Ivo Petrov", qIBAN, `data-testid="balance-posted">89.00<`)
	})
}

func TestAccountStatementCSV(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	bal := balance(a.eur, "token")
	a.env.Fund(t, a.eurTok, bal, "EUR", 10000)
	payExternal(t, a.env, a.p, a.eurTok, "12.50", "@SUM(A1)", `=HYPERLINK("http://evil.example","x")`)
	payExternal(t, a.env, a.p, a.eurTok, "1.00", "+cmd|' /C calc'!A0", "-2+3")
	postWithReference(t, a.env, a.eurTok, bal, 100, "\tTAB")
	postWithReference(t, a.env, a.eurTok, bal, 100, "\rCR")

	csvPath := "/backoffice/accounts/" + a.eurTok + "/statement.csv"
	pg := a.cs.Get(t, csvPath)
	if pg.Status != http.StatusOK || pg.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(pg.Header.Get("Content-Disposition"), `attachment; filename="statement-`) || pg.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("export: HTTP %d %v", pg.Status, pg.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(pg.Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || strings.Join(rows[0], ",") != "time_utc,type,transaction,transfer,account,balance,reference,counterparty_name,"+
		"counterparty_iban,counterparty_account_number,counterparty_sort_code,currency,amount,balance_after" {
		t.Fatalf("rows: %q", rows)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	// Newest first: CR credit, TAB credit, the -2+3 payment, the HYPERLINK payment, the funding.
	want := []struct{ ref, name, amount, after string }{
		{"'\rCR", "", "1.00", "88.50"},
		{"'\tTAB", "", "1.00", "87.50"},
		{"'-2+3", "'+cmd|' /C calc'!A0", "-1.00", "86.50"},
		{`'=HYPERLINK("http://evil.example","x")`, "'@SUM(A1)", "-12.50", "87.50"},
		{"test funding", "", "100.00", "100.00"},
	}
	for i, w := range want {
		row := rows[i+1]
		if row[col["reference"]] != w.ref || row[col["counterparty_name"]] != w.name || row[col["amount"]] != w.amount ||
			row[col["balance_after"]] != w.after || row[col["account"]] != a.eurTok || row[col["currency"]] != "EUR" {
			t.Errorf("row %d: %q", i+1, row)
		}
	}
	if rows[3][col["type"]] != "outgoing" || rows[3][col["counterparty_iban"]] != "DE89370400440532013000" || rows[3][col["transfer"]] == "" {
		t.Errorf("payment row: %q", rows[3])
	}
	// No cell but the emi-written amounts starts with a formula character.
	for i, row := range rows {
		for j, c := range row {
			if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) && !(i > 0 && (j == col["amount"] || j == col["balance_after"])) {
				t.Errorf("row %d column %s is not defused: %q", i, rows[0][j], c)
			}
		}
	}

	var audits []string
	if err := a.env.App.DB.Select(&audits, `SELECT changes::text FROM audit_log WHERE action = 'account.statement_export' AND resource_token = $1`,
		a.eurTok); err != nil || len(audits) != 1 || !strings.Contains(audits[0], `"lines": 5`) {
		t.Fatalf("export audit: %v %v", audits, err)
	}

	today := a.env.Clock.Now().UTC().Format(time.DateOnly)
	ranged := a.cs.Get(t, csvPath+"?from="+today+"&to="+today)
	if r, _ := csv.NewReader(strings.NewReader(ranged.Body)).ReadAll(); ranged.Status != http.StatusOK || len(r) != 6 ||
		!strings.Contains(ranged.Header.Get("Content-Disposition"), today) {
		t.Fatalf("ranged export: HTTP %d, %d rows", ranged.Status, len(r))
	}
	if bad := a.cs.Get(t, csvPath+"?from=yesterday"); bad.Status != http.StatusBadRequest {
		t.Fatalf("bad range: HTTP %d", bad.Status)
	}
	if n := countAudit(t, a.env, a.eurTok); n != 2 {
		t.Fatalf("%d export audit rows, want 2 (the refused one is not an export)", n)
	}
	uw := a.env.NewBrowser()
	uw.SignIn(t, apptest.UnderwriterEmail)
	if pg := uw.Get(t, csvPath); pg.Status != http.StatusForbidden {
		t.Fatalf("underwriter export: HTTP %d", pg.Status)
	}
}

func countAudit(t *testing.T, env *apptest.Env, account string) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'account.statement_export' AND resource_token = $1`, account); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTransferPage(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	bal := balance(a.eur, "token")
	a.env.Fund(t, a.eurTok, bal, "EUR", 10000)
	tok := payExternal(t, a.env, a.p, a.eurTok, "12.50", "Acme GmbH", "Invoice 7")
	page := "/backoffice/transfers/" + tok

	pg := a.cs.Get(t, page)
	contains(t, "pending payment", pg, `class="badge warn">pending<`, "12.50 EUR", "Invoice 7", "Destination (external)", "Acme GmbH",
		"DE89370400440532013000", ">sepa<", `href="/backoffice/accounts/`+a.eurTok+`"`, ">Mara Velikova<", balance(a.eur, "iban"),
		`data-testid="transfer-entry"`, ">outgoing_clearing<", ">-12.50 EUR<", ">12.50 EUR<", ">87.50<", ">transfer.create_outgoing<",
		`data-testid="transfer-complete"`, `data-testid="transfer-return"`, "the partner sees it", "The partner is told (transfer.returned), with the reason.")
	if n := strings.Count(pg.Body, `data-testid="transfer-entry"`); n != 2 {
		t.Fatalf("%d entries", n)
	}

	done := follow(t, a.cs, a.cs.Post(t, page+"/complete", url.Values{}))
	contains(t, "completed", done, `class="badge ok">completed<`, "Payment completed (sandbox)", ">transfer.sandbox_complete<",
		`data-testid="transfer-return"`)
	lacks(t, "completed", done, `data-testid="transfer-complete"`)
	again := follow(t, a.cs, a.cs.Post(t, page+"/complete", url.Values{}))
	contains(t, "second complete", again, "does not allow this any more")

	noReason := a.cs.Post(t, page+"/return", url.Values{"reason": {"  "}})
	if noReason.Status != http.StatusUnprocessableEntity || !strings.Contains(noReason.Body, "is required") ||
		!strings.Contains(noReason.Body, `id="reason-error"`) {
		t.Fatalf("return without a reason: HTTP %d", noReason.Status)
	}
	returned := follow(t, a.cs, a.cs.Post(t, page+"/return", url.Values{"reason": {"AC04 account closed"}}))
	contains(t, "returned", returned, `class="badge bad">returned<`, "AC04 account closed", ">returned payment<", ">100.00<",
		">transfer.sandbox_return<", "nothing can change any more")
	if n := strings.Count(returned.Body, `data-testid="transfer-entry"`); n != 4 {
		t.Fatalf("%d entries after the return", n)
	}
	contains(t, "account after the return", a.cs.Get(t, "/backoffice/accounts/"+a.eurTok), `data-testid="balance-posted">100.00<`,
		">returned payment<")

	t.Run("an internal transfer shows both accounts and no settlement", func(t *testing.T) {
		// To another account: a main account and its virtual account are
		// one balance, and a transfer between them is refused (14008).
		other := openAccount(t, a.env, a.p, map[string]any{"program": "account_eur", "user": a.user})
		otherTok := other["token"].(string)
		r := api(t, a.env, a.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
			"source": map[string]any{"account": a.eurTok}, "destination": map[string]any{"account": otherTok},
			"amount": "1.00", "currency": "EUR"})
		if r.Status != http.StatusCreated {
			t.Fatalf("transfer_create: %s", r)
		}
		pg := a.cs.Get(t, "/backoffice/transfers/"+r.Data["token"].(string))
		contains(t, "internal", pg, `class="badge ok">completed<`, `href="/backoffice/accounts/`+a.eurTok+`"`,
			`href="/backoffice/accounts/`+otherTok+`"`, balance(other, "iban"))
		lacks(t, "internal", pg, `data-testid="transfer-actions"`, "(external)")
		if p := a.cs.Post(t, "/backoffice/transfers/"+r.Data["token"].(string)+"/complete", url.Values{}); p.Status != http.StatusNotFound {
			t.Fatalf("complete an internal transfer: HTTP %d", p.Status)
		}
	})

	t.Run("read-only roles see no buttons and may not settle", func(t *testing.T) {
		other := payExternal(t, a.env, a.p, a.eurTok, "2.00", "B", "")
		b := a.env.NewBrowser()
		b.SignIn(t, apptest.AuditorEmail)
		pg := b.Get(t, "/backoffice/transfers/"+other)
		contains(t, "auditor", pg, `class="badge warn">pending<`)
		lacks(t, "auditor", pg, `data-testid="transfer-actions"`)
		if p := b.Post(t, "/backoffice/transfers/"+other+"/complete", url.Values{}); p.Status != http.StatusForbidden {
			t.Fatalf("auditor complete: HTTP %d", p.Status)
		}
		uw := a.env.NewBrowser()
		uw.SignIn(t, apptest.UnderwriterEmail)
		if p := uw.Get(t, "/backoffice/transfers/"+other); p.Status != http.StatusForbidden {
			t.Fatalf("underwriter: HTTP %d", p.Status)
		}
	})

	t.Run("unknown transfers are not found", func(t *testing.T) {
		for _, tk := range []string{"00000000-0000-4000-8000-000000000000", "nope"} {
			if p := a.cs.Get(t, "/backoffice/transfers/"+tk); p.Status != http.StatusNotFound || !strings.Contains(p.Body, "There is no such transfer.") {
				t.Errorf("%s: HTTP %d", tk, p.Status)
			}
		}
	})

	t.Run("production has no settlement buttons or routes", func(t *testing.T) {
		other := payExternal(t, a.env, a.p, a.eurTok, "3.00", "C", "")
		prodEnv := *a.env
		prodEnv.Config.Mode = config.ModeProduction
		prod := apptest.Attach(t, &prodEnv)
		b := prod.NewBrowser()
		b.Client.Jar = a.cs.Client.Jar // the session lives in the shared database
		pg := b.Get(t, "/backoffice/transfers/"+other)
		contains(t, "production page", pg, `class="badge warn">pending<`)
		lacks(t, "production page", pg, `data-testid="transfer-actions"`)
		for _, action := range []string{"/complete", "/return"} {
			if p := b.Post(t, "/backoffice/transfers/"+other+action, url.Values{"reason": {"x"}}); p.Status != http.StatusNotFound {
				t.Fatalf("production %s: HTTP %d", action, p.Status)
			}
		}
	})
}

// apiAvailable is an account's first balance's available figure, through
// the API.
func apiAvailable(t *testing.T, a *accountsEnv, acc string) string {
	t.Helper()
	r := api(t, a.env, a.p, http.MethodGet, "/v2/accounts/"+acc, "account_details", nil)
	return r.Data["balances"].([]any)[0].(map[string]any)["available"].(string)
}

// TestTransferReversalFourEyes: one staff member requests the reversal of
// an internal transfer with a reason, cannot approve it, a second approves
// it, and the money moves back once; a request can be withdrawn, and a
// reversal of money the destination spent is refused and stays pending.
func TestTransferReversalFourEyes(t *testing.T) {
	t.Parallel()
	a := newAccountsEnv(t)
	bal := balance(a.eur, "token")
	a.env.Fund(t, a.eurTok, bal, "EUR", 10000)
	other := api(t, a.env, a.p, http.MethodPost, "/v2/accounts", "account_create", map[string]any{"program": "account_eur", "user": a.user})
	dstAcc := other.Data["token"].(string)
	tr := api(t, a.env, a.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": a.eurTok}, "destination": map[string]any{"account": dstAcc}, "amount": "30.00", "currency": "EUR",
		"reference": "Wrong customer"})
	if tr.Status != http.StatusCreated {
		t.Fatalf("transfer: %s", tr)
	}
	page := "/backoffice/transfers/" + tr.Data["token"].(string)

	pg := a.cs.Get(t, page)
	contains(t, "completed internal transfer", pg, `data-testid="transfer-reversal"`, `data-testid="reversal-request"`)
	bad := a.cs.Post(t, page+"/reversal", url.Values{"reason": {"x"}})
	if bad.Status != http.StatusUnprocessableEntity || !strings.Contains(bad.Body, `id="reason-error"`) {
		t.Fatalf("request without a real reason: HTTP %d", bad.Status)
	}
	pg = follow(t, a.cs, a.cs.Post(t, page+"/reversal", url.Values{"reason": {"Sent to the wrong customer by mistake"}}))
	contains(t, "requested", pg, "Reversal requested", `data-testid="pending-reversal"`, "Sent to the wrong customer by mistake",
		`data-testid="reversal-awaiting-second"`, "Withdraw request", ">transfer.reversal_requested<")
	lacks(t, "requester's page", pg, `data-testid="reversal-approve"`)
	// The requester cannot approve by posting either.
	own := follow(t, a.cs, a.cs.Post(t, page+"/reversal/approve", url.Values{}))
	contains(t, "own approval", own, `data-testid="pending-reversal"`)
	if got := apiAvailable(t, a, dstAcc); got != "30.00" {
		t.Fatalf("money moved on the requester's own approval: %s", got)
	}
	// The auditor sees the pending request but no buttons.
	aud := a.env.NewBrowser()
	aud.SignIn(t, apptest.AuditorEmail)
	ap := aud.Get(t, page)
	lacks(t, "auditor", ap, `data-testid="reversal-approve"`, `data-testid="reversal-request"`)
	if r := aud.Post(t, page+"/reversal/approve", url.Values{}); r.Status != http.StatusForbidden {
		t.Fatalf("auditor approval: HTTP %d", r.Status)
	}

	newStaff(t, a.env, "second.money@accounts.test", "Second Money", emi.RoleCustomerService)
	second := a.env.NewBrowser()
	second.SignIn(t, "second.money@accounts.test")
	pg = second.Get(t, page)
	contains(t, "second's page", pg, `data-testid="reversal-approve"`, "Reject request")
	pg = follow(t, second, second.Post(t, page+"/reversal/approve", url.Values{}))
	contains(t, "approved", pg, "Transfer reversed", `class="badge bad">returned<`, "Sent to the wrong customer by mistake", ">transfer.reverse<")
	lacks(t, "approved", pg, `data-testid="pending-reversal"`, `data-testid="reversal-request"`)
	if got := apiAvailable(t, a, dstAcc); got != "0.00" {
		t.Fatalf("destination after the reversal: %s", got)
	}
	again := follow(t, second, second.Post(t, page+"/reversal/approve", url.Values{}))
	contains(t, "approve twice", again, "No request for the reversal of this transfer waits any more")

	// A second transfer: withdrawn by its requester, then refused because
	// the destination spent the money.
	tr2 := api(t, a.env, a.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": a.eurTok}, "destination": map[string]any{"account": dstAcc}, "amount": "10.00", "currency": "EUR"})
	page2 := "/backoffice/transfers/" + tr2.Data["token"].(string)
	follow(t, a.cs, a.cs.Post(t, page2+"/reversal", url.Values{"reason": {"Duplicate payment"}}))
	pg = follow(t, a.cs, a.cs.Post(t, page2+"/reversal/reject", url.Values{}))
	contains(t, "withdrawn", pg, "Reversal request withdrawn", `data-testid="reversal-request"`, ">transfer.reversal_withdrawn<")
	follow(t, a.cs, a.cs.Post(t, page2+"/reversal", url.Values{"reason": {"Duplicate payment"}}))
	spend := api(t, a.env, a.p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": dstAcc}, "destination": map[string]any{"account": a.eurTok}, "amount": "10.00", "currency": "EUR"})
	if spend.Status != http.StatusCreated {
		t.Fatalf("spend: %s", spend)
	}
	pg = follow(t, second, second.Post(t, page2+"/reversal/approve", url.Values{}))
	contains(t, "spent", pg, portalMessage(emi.ErrInsufficientFunds), `data-testid="pending-reversal"`)
}

// TestAccountStatementCSVTruncated: an export cut short at its cap says
// so on its last line (and in its audit row). Not parallel: it lowers
// service.MaxStatementExport, which parallel tests only read after it is
// restored.
func TestAccountStatementCSVTruncated(t *testing.T) {
	saved := accounts.MaxStatementExport
	accounts.MaxStatementExport = 2
	t.Cleanup(func() { accounts.MaxStatementExport = saved })
	a := newAccountsEnv(t)
	bal := balance(a.eur, "token")
	csvPath := "/backoffice/accounts/" + a.eurTok + "/statement.csv"
	a.env.Fund(t, a.eurTok, bal, "EUR", 100)
	a.env.Fund(t, a.eurTok, bal, "EUR", 200)
	pg := a.cs.Get(t, csvPath)
	rows, err := csv.NewReader(strings.NewReader(pg.Body)).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][len(rows[1])-1] != "3.00" || pg.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("export at the cap: %q %v", rows, err)
	}
	a.env.Fund(t, a.eurTok, bal, "EUR", 300)
	pg = a.cs.Get(t, csvPath)
	rows, err = csv.NewReader(strings.NewReader(pg.Body)).ReadAll()
	if err != nil || len(rows) != 4 || rows[1][len(rows[1])-1] != "6.00" || rows[2][len(rows[2])-1] != "3.00" ||
		rows[3][0] != "truncated" || !strings.Contains(rows[3][1], "newest 2 lines") {
		t.Fatalf("export past the cap: %q %v", rows, err)
	}
	var audits []string
	if err := a.env.App.DB.Select(&audits, `SELECT changes::text FROM audit_log WHERE action = 'account.statement_export' AND resource_token = $1
		ORDER BY id`, a.eurTok); err != nil || len(audits) != 2 || !strings.Contains(audits[0], `"truncated": false`) ||
		!strings.Contains(audits[1], `"truncated": true`) || !strings.Contains(audits[1], `"lines": 2`) {
		t.Fatalf("export audit: %v %v", audits, err)
	}
}
