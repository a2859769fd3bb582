package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

func statement(t *testing.T, env *apptest.Env, p *apptest.Partner, acc string, page, limit int, query string) apptest.Response {
	t.Helper()
	path := "/v2/accounts/" + acc + "/transactions/" + strconv.Itoa(page) + "/" + strconv.Itoa(limit)
	if query != "" {
		path += "?" + query
	}
	return call(t, env, p, http.MethodGet, path, "account_transactions", nil)
}

func lines(r apptest.Response) []map[string]any {
	out := []map[string]any{}
	for _, it := range r.Data["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func minor(t *testing.T, s any) int64 {
	t.Helper()
	v, ok := emi.ParseAmount(s.(string))
	if !ok {
		t.Fatalf("amount %v", s)
	}
	return v
}

func cpOf(l map[string]any) map[string]any { return l["counterparty"].(map[string]any) }

// checkRunning fails unless, oldest to newest, each line's balance_after
// is the previous one's plus its amount, starting from opening.
func checkRunning(t *testing.T, ls []map[string]any, opening int64) {
	t.Helper()
	run := opening
	for i := len(ls) - 1; i >= 0; i-- {
		run += minor(t, ls[i]["amount"])
		if got := minor(t, ls[i]["balance_after"]); got != run {
			t.Fatalf("line %d (%v %v): balance_after %d, running %d", i, ls[i]["type"], ls[i]["amount"], got, run)
		}
	}
}

func TestStatementRunningBalance(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainTok, mainBal, mainIBAN := main.Data["token"].(string), balancesOf(main)[0]["token"].(string), balancesOf(main)[0]["iban"].(string)
	virtual := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainTok}).Data["token"].(string)
	qUser := validUser(q)
	qUser["first_name"], qUser["last_name"] = "Ivo", "Petrov"
	qAcc := createAccount(t, env, q, map[string]any{"program": "account_eur", "user": createUser(t, env, q, qUser)})
	qTok, qIBAN := qAcc.Data["token"].(string), balancesOf(qAcc)[0]["iban"].(string)
	env.Fund(t, qTok, balancesOf(qAcc)[0]["token"].(string), "EUR", 1000)

	env.Fund(t, mainTok, mainBal, "EUR", 10000)
	sent := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": mainTok}, "destination": map[string]any{"iban": qIBAN}, "amount": "12.50", "currency": "EUR", "reference": "Invoice 7"})
	apptest.Expect(t, "sent", sent, 0, http.StatusCreated)
	received := call(t, env, q, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": qTok}, "destination": map[string]any{"iban": mainIBAN}, "amount": "5.00", "currency": "EUR", "reference": "Refund"})
	apptest.Expect(t, "received", received, 0, http.StatusCreated)
	out := payOut(t, env, p, sepa(mainTok, "20.00"))
	apptest.Expect(t, "outgoing", out, 0, http.StatusCreated)
	apptest.Expect(t, "return", returnPayment(t, env, p, out.Data["token"].(string), "AC04"), 0, http.StatusOK)
	env.Fund(t, virtual, mainBal, "EUR", 700)
	vOut := payOut(t, env, p, sepa(virtual, "3.00"))
	apptest.Expect(t, "outgoing from the virtual account", vOut, 0, http.StatusCreated)
	apptest.Expect(t, "complete", complete(t, env, p, vOut.Data["token"].(string)), 0, http.StatusOK)
	env.PayOut(t, mainTok, mainBal, "EUR", 100)

	r := statement(t, env, p, mainTok, 1, 100, "")
	apptest.Expect(t, "statement", r, 0, http.StatusOK)
	ls := lines(r)
	if len(ls) != 8 || r.Data["total"] != float64(8) || r.Data["page"] != float64(1) || r.Data["limit"] != float64(100) {
		t.Fatalf("main statement: %s", r)
	}
	checkRunning(t, ls, 0)
	if ls[0]["balance_after"] != "95.50" || available(t, env, p, mainTok) != "95.50" {
		t.Fatalf("the newest balance_after %v is not the balance", ls[0]["balance_after"])
	}
	wantTypes := []string{"outgoing", "outgoing", "incoming", "outgoing_return", "outgoing", "transfer", "transfer", "incoming"}
	wantAmounts := []string{"-1.00", "-3.00", "7.00", "20.00", "-20.00", "5.00", "-12.50", "100.00"}
	for i, l := range ls {
		if l["type"] != wantTypes[i] || l["amount"] != wantAmounts[i] || l["currency"] != "EUR" || l["balance"] != mainBal {
			t.Fatalf("line %d: %v", i, l)
		}
	}
	// Who and what each line names: another partner's customer by IBAN only.
	if ls[6]["transfer"] != sent.Data["token"] || ls[6]["reference"] != "Invoice 7" || cpOf(ls[6])["name"] != "" ||
		cpOf(ls[6])["iban"] != qIBAN || ls[6]["account"] != mainTok {
		t.Fatalf("sent line: %v", ls[6])
	}
	if ls[5]["transfer"] != received.Data["token"] || cpOf(ls[5])["name"] != "" || cpOf(ls[5])["iban"] != qIBAN {
		t.Fatalf("received line: %v", ls[5])
	}
	for _, i := range []int{3, 4} {
		if ls[i]["transfer"] != out.Data["token"] || cpOf(ls[i])["name"] != "Acme GmbH" || cpOf(ls[i])["iban"] != extIBAN ||
			ls[i]["reference"] != "Invoice 7" {
			t.Fatalf("outgoing line %d: %v", i, ls[i])
		}
	}
	for _, i := range []int{1, 2} {
		if ls[i]["account"] != virtual {
			t.Fatalf("line %d of the virtual account shows on %v", i, ls[i]["account"])
		}
	}
	if ls[7]["transfer"] != "" || cpOf(ls[7])["name"] != "" || cpOf(ls[7])["iban"] != "" || ls[7]["reference"] != "test funding" {
		t.Fatalf("funding line: %v", ls[7])
	}
	bals := r.Data["balances"].([]any)
	if len(bals) != 1 || bals[0].(map[string]any)["opening_balance"] != "0.00" || bals[0].(map[string]any)["closing_balance"] != "95.50" ||
		bals[0].(map[string]any)["balance"] != mainBal {
		t.Fatalf("balances: %v", bals)
	}

	// Pages put together give the whole statement.
	var paged []map[string]any
	for page := 1; page <= 3; page++ {
		pr := statement(t, env, p, mainTok, page, 3, "")
		apptest.Expect(t, "page", pr, 0, http.StatusOK)
		if pr.Data["total"] != float64(8) {
			t.Fatalf("page %d total %v", page, pr.Data["total"])
		}
		paged = append(paged, lines(pr)...)
	}
	if len(paged) != 8 {
		t.Fatalf("%d lines over three pages", len(paged))
	}
	for i := range paged {
		if paged[i]["transaction"] != ls[i]["transaction"] || paged[i]["amount"] != ls[i]["amount"] {
			t.Fatalf("paged line %d: %v, want %v", i, paged[i], ls[i])
		}
	}
	if past := statement(t, env, p, mainTok, 4, 3, ""); len(lines(past)) != 0 || past.Data["total"] != float64(8) {
		t.Fatalf("past the end: %s", past)
	}

	// The virtual account shows its own movements only.
	vr := statement(t, env, p, virtual, 1, 100, "")
	apptest.Expect(t, "virtual statement", vr, 0, http.StatusOK)
	vls := lines(vr)
	if len(vls) != 2 || vls[0]["amount"] != "-3.00" || vls[1]["amount"] != "7.00" || vls[0]["account"] != virtual || vls[0]["balance"] != mainBal {
		t.Fatalf("virtual statement: %s", vr)
	}

	// The other partner's side of the internal transfers shows P's customer by IBAN.
	qr := statement(t, env, q, qTok, 1, 100, "")
	apptest.Expect(t, "Q's statement", qr, 0, http.StatusOK)
	qls := lines(qr)
	checkRunning(t, qls, 0)
	if len(qls) != 3 || qls[0]["amount"] != "-5.00" || cpOf(qls[0])["name"] != "" || cpOf(qls[0])["iban"] != mainIBAN ||
		qls[1]["amount"] != "12.50" || cpOf(qls[1])["iban"] != mainIBAN || qls[0]["balance_after"] != "17.50" {
		t.Fatalf("Q's statement: %s", qr)
	}
}

func TestStatementGBPCounterparty(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	src, _, _ := openFunded(t, env, p, "account_gbp", 5000)
	user := createUser(t, env, p, validUser(p))
	dst := balancesOf(createAccount(t, env, p, map[string]any{"program": "account_gbp", "user": user}))[0]
	sent := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{"source": map[string]any{"account": src},
		"destination": map[string]any{"account_number": dst["account_number"], "sort_code": dst["sort_code"]}, "amount": "1.00", "currency": "GBP"})
	apptest.Expect(t, "sent", sent, 0, http.StatusCreated)
	fp := payOut(t, env, p, map[string]any{"source": map[string]any{"account": src},
		"destination": map[string]any{"name": "J Smith", "account_number": "31926819", "sort_code": "601613"}, "amount": "2.00", "currency": "GBP"})
	apptest.Expect(t, "faster payment", fp, 0, http.StatusCreated)
	ls := lines(statement(t, env, p, src, 1, 10, ""))
	if len(ls) != 3 || cpOf(ls[0])["account_number"] != "31926819" || cpOf(ls[0])["sort_code"] != "601613" || cpOf(ls[0])["name"] != "J Smith" ||
		cpOf(ls[1])["account_number"] != dst["account_number"] || cpOf(ls[1])["sort_code"] != dst["sort_code"] || cpOf(ls[1])["iban"] != dst["iban"] ||
		cpOf(ls[1])["name"] != "Mara Velikova" {
		t.Fatalf("GBP statement: %v", ls)
	}
	checkRunning(t, ls, 0)
}

func TestStatementDateFilter(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, bal, _ := openFunded(t, env, p, "account_eur", 0)
	// Noon of the next day (UTC), so that no step below straddles midnight.
	now := env.Clock.Now().UTC()
	noon := time.Date(now.Year(), now.Month(), now.Day()+1, 12, 0, 0, 0, time.UTC)
	env.Clock.Advance(noon.Sub(now))
	day := func(n int) string { return noon.AddDate(0, 0, n-1).Format(time.DateOnly) }

	env.Fund(t, acc, bal, "EUR", 1000)
	apptest.Expect(t, "day 1 payment", payOut(t, env, p, sepa(acc, "1.00")), 0, http.StatusCreated)
	env.Clock.Advance(48 * time.Hour)
	env.Fund(t, acc, bal, "EUR", 2000)
	apptest.Expect(t, "day 3 payment", payOut(t, env, p, sepa(acc, "5.00")), 0, http.StatusCreated)

	for _, c := range []struct {
		query                           string
		amounts                         []string
		opening, closing, firstBalAfter string
	}{
		{"from=" + day(1) + "&to=" + day(1), []string{"-1.00", "10.00"}, "0.00", "9.00", "9.00"},
		{"to=" + day(2), []string{"-1.00", "10.00"}, "0.00", "9.00", "9.00"},
		{"from=" + day(2), []string{"-5.00", "20.00"}, "9.00", "24.00", "24.00"},
		{"from=" + day(3) + "&to=" + day(3), []string{"-5.00", "20.00"}, "9.00", "24.00", "24.00"},
		{"from=" + day(2) + "&to=" + day(2), nil, "9.00", "9.00", ""},
		{"from=" + day(4), nil, "24.00", "24.00", ""},
		{"", []string{"-5.00", "20.00", "-1.00", "10.00"}, "0.00", "24.00", "24.00"},
	} {
		r := statement(t, env, p, acc, 1, 100, c.query)
		apptest.Expect(t, c.query, r, 0, http.StatusOK)
		ls := lines(r)
		if len(ls) != len(c.amounts) || r.Data["total"] != float64(len(c.amounts)) {
			t.Fatalf("%q: %s", c.query, r)
		}
		for i, l := range ls {
			if l["amount"] != c.amounts[i] {
				t.Fatalf("%q line %d: %v", c.query, i, l)
			}
		}
		b := r.Data["balances"].([]any)[0].(map[string]any)
		if b["opening_balance"] != c.opening || b["closing_balance"] != c.closing {
			t.Fatalf("%q: opening %v closing %v", c.query, b["opening_balance"], b["closing_balance"])
		}
		if len(ls) > 0 {
			checkRunning(t, ls, minor(t, c.opening))
			if ls[0]["balance_after"] != c.firstBalAfter {
				t.Fatalf("%q: newest balance_after %v", c.query, ls[0]["balance_after"])
			}
		}
	}
}

func TestStatementErrors(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 1000)
	foreign, _, _ := openFunded(t, env, q, "account_eur", 1000)

	apptest.Expect(t, "another partner's account", statement(t, env, p, foreign, 1, 10, ""), 13002, http.StatusNotFound)
	apptest.Expect(t, "unknown account", statement(t, env, p, "0193a5c2-7e41-7b3a-9c1d-2e4f6a8b0c12", 1, 10, ""), 13002, http.StatusNotFound)
	apptest.Expect(t, "not a token", statement(t, env, p, "nope", 1, 10, ""), 13002, http.StatusNotFound)
	for _, c := range []struct {
		what        string
		page, limit int
		query       string
		fields      []string
	}{
		{"page 0", 0, 10, "", []string{"page"}},
		{"limit 0", 1, 0, "", []string{"limit"}},
		{"limit 101", 1, 101, "", []string{"limit"}},
		{"from not a date", 1, 10, "from=2026-13-01", []string{"from"}},
		{"to without dashes", 1, 10, "to=20260101", []string{"to"}},
		{"to a day that does not exist", 1, 10, "to=2026-02-30", []string{"to"}},
		{"from before the year 1000", 1, 10, "from=0999-12-31", []string{"from"}},
		{"from with a time", 1, 10, "from=2026-01-01T00:00:00Z", []string{"from"}},
		{"from after to", 1, 10, "from=2026-02-02&to=2026-02-01", []string{"from"}},
		{"unknown filter", 1, 10, "colour=red", []string{"colour"}},
		{"repeated filter", 1, 10, "from=2026-01-01&from=2026-01-02", []string{"from"}},
		{"every problem at once", 0, 500, "from=x&to=y", []string{"page", "limit", "from", "to"}},
	} {
		r := statement(t, env, p, acc, c.page, c.limit, c.query)
		apptest.Expect(t, c.what, r, 13001, http.StatusBadRequest)
		for _, f := range c.fields {
			apptest.ExpectField(t, c.what, r, f)
		}
	}
	// Dates are trimmed (by the service, once).
	apptest.Expect(t, "padded dates", statement(t, env, p, acc, 1, 10, "from=%202026-01-01%20&to=%09"), 0, http.StatusOK)
	// A bad filter on another partner's account is still a bad filter,
	// and a good one still 13002.
	apptest.Expect(t, "foreign, bad filter", statement(t, env, p, foreign, 1, 10, "colour=red"), 13001, http.StatusBadRequest)
	apptest.Expect(t, "foreign, good filter", statement(t, env, p, foreign, 1, 10, "from=2026-01-01"), 13002, http.StatusNotFound)
}

// TestStatementReversalCounterparty: a reversal's lines flip the signs of
// the transfer's, yet each side's reversal line still names the other side.
func TestStatementReversalCounterparty(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	src, _, srcIBAN := openFunded(t, env, p, "account_eur", 5000)
	other := validUser(p)
	other["first_name"], other["last_name"] = "Ivo", "Petrov"
	dstAcc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": createUser(t, env, p, other)})
	dst, dstIBAN := dstAcc.Data["token"].(string), balancesOf(dstAcc)[0]["iban"].(string)
	sent := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": src}, "destination": map[string]any{"iban": dstIBAN}, "amount": "12.50", "currency": "EUR", "reference": "Wrong payee"})
	apptest.Expect(t, "sent", sent, 0, http.StatusCreated)
	transfer := sent.Data["token"].(string)
	requester, approver := moneyStaff(), moneyStaff()
	if err := env.App.Transfers.RequestReversal(requester, transfer, "Sent to the wrong customer"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Transfers.DecideReversal(approver, transfer, true); err != nil {
		t.Fatal(err)
	}
	srcLines := lines(statement(t, env, p, src, 1, 10, ""))
	dstLines := lines(statement(t, env, p, dst, 1, 10, ""))
	if len(srcLines) != 3 || len(dstLines) != 2 {
		t.Fatalf("statements: source %v, destination %v", srcLines, dstLines)
	}
	checkRunning(t, srcLines, 0)
	checkRunning(t, dstLines, 0)
	// Newest first: the reversal, then the transfer, on both sides.
	for i, want := range []string{"12.50", "-12.50"} {
		if l := srcLines[i]; l["transfer"] != transfer || l["amount"] != want || cpOf(l)["name"] != "Ivo Petrov" || cpOf(l)["iban"] != dstIBAN {
			t.Fatalf("source line %d names the wrong side: %v", i, l)
		}
	}
	for i, want := range []string{"-12.50", "12.50"} {
		if l := dstLines[i]; l["transfer"] != transfer || l["amount"] != want || cpOf(l)["name"] != "Mara Velikova" || cpOf(l)["iban"] != srcIBAN {
			t.Fatalf("destination line %d names the wrong side: %v", i, l)
		}
	}
}
