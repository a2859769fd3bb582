package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/ukbank"
)

// A valid German IBAN (the registry's example) and BIC, outside emi.
const (
	extIBAN = "DE89370400440532013000"
	extBIC  = "COBADEFFXXX"
)

func sepa(src string, amount string) map[string]any {
	return map[string]any{"source": map[string]any{"account": src},
		"destination": map[string]any{"name": "Acme GmbH", "iban": "de89 3704 0044 0532 0130 00", "bic": extBIC},
		"amount":      amount, "currency": "EUR", "reference": "Invoice 7"}
}

func payOut(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) apptest.Response {
	t.Helper()
	return call(t, env, p, http.MethodPost, "/v2/transfers/external", "transfer_external_create", body)
}

func complete(t *testing.T, env *apptest.Env, p *apptest.Partner, tok string) apptest.Response {
	t.Helper()
	return call(t, env, p, http.MethodPost, "/v2/sandbox/transfers/"+tok+"/complete", "sandbox_transfer_complete", nil)
}

func returnPayment(t *testing.T, env *apptest.Env, p *apptest.Partner, tok, reason string) apptest.Response {
	t.Helper()
	return call(t, env, p, http.MethodPost, "/v2/sandbox/transfers/"+tok+"/return", "sandbox_transfer_return", map[string]any{"reason": reason})
}

// internalPosition is the sum of the entries of one of the institution's
// accounts in a currency (positive: emi owes it on).
func internalPosition(t *testing.T, env *apptest.Env, account, currency string) int64 {
	t.Helper()
	var n int64
	if err := env.App.DB.Get(&n, `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE internal = $1 AND currency = $2`,
		account, currency); err != nil {
		t.Fatal(err)
	}
	return n
}

func countRows(t *testing.T, env *apptest.Env, q string, args ...any) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOutgoingSEPALifecycle(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, bal, _ := openFunded(t, env, p, "account_eur", 10000)

	r := payOut(t, env, p, sepa(acc, "12.50"))
	apptest.Expect(t, "transfer_external_create", r, 0, http.StatusCreated)
	dst := r.Data["destination"].(map[string]any)
	if r.Data["type"] != "outgoing" || r.Data["status"] != "pending" || r.Data["amount"] != "12.50" ||
		dst["name"] != "Acme GmbH" || dst["iban"] != extIBAN || dst["bic"] != extBIC || dst["scheme"] != "sepa" ||
		r.Data["source"].(map[string]any)["account"] != acc || r.Data["source"].(map[string]any)["balance"] != bal {
		t.Fatalf("pending payment: %s", r)
	}
	tok := r.Data["token"].(string)
	if got := available(t, env, p, acc); got != "87.50" {
		t.Fatalf("debited at once: available %s", got)
	}
	if got := internalPosition(t, env, emi.LedgerOutgoingClearing, "EUR"); got != 1250 {
		t.Fatalf("outgoing clearing holds %d", got)
	}
	var kind string
	if err := env.App.DB.Get(&kind, `SELECT lt.kind FROM transfers t JOIN ledger_transactions lt ON lt.id = t.txn
		WHERE t.token = $1 AND t.type = 'outgoing' AND t.status = 'pending' AND t.counterparty->>'iban' = $2`, tok, extIBAN); err != nil || kind != "outgoing" {
		t.Fatalf("transfer row and its ledger transaction: %q %v", kind, err)
	}
	d := call(t, env, p, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil)
	apptest.Expect(t, "details", d, 0, http.StatusOK)
	if d.Data["status"] != "pending" || d.Data["destination"].(map[string]any)["name"] != "Acme GmbH" {
		t.Fatalf("details: %s", d)
	}
	if n := len(events(t, env, tok, emi.EventTransferCompleted)); n != 0 {
		t.Fatalf("%d transfer.completed events before completion", n)
	}

	c := complete(t, env, p, tok)
	apptest.Expect(t, "complete", c, 0, http.StatusOK)
	if c.Data["status"] != "completed" {
		t.Fatalf("completed: %s", c)
	}
	ev := events(t, env, tok, emi.EventTransferCompleted)
	if len(ev) != 1 || ev[0]["status"] != "completed" || ev[0]["type"] != "outgoing" || ev[0]["destination_iban"] != extIBAN ||
		ev[0]["destination_name"] != "Acme GmbH" || ev[0]["source_account"] != acc || ev[0]["transfer"] != tok {
		t.Fatalf("transfer.completed: %v", ev)
	}
	if got := available(t, env, p, acc); got != "87.50" {
		t.Fatalf("completion moved money: available %s", got)
	}
	if got := internalPosition(t, env, emi.LedgerOutgoingClearing, "EUR"); got != 1250 {
		t.Fatalf("completion moved outgoing clearing: %d", got)
	}
	apptest.Expect(t, "second complete", complete(t, env, p, tok), 14007, http.StatusConflict)

	ret := returnPayment(t, env, p, tok, "AC04 account closed")
	apptest.Expect(t, "return after completion", ret, 0, http.StatusOK)
	if ret.Data["status"] != "returned" || ret.Data["return_reason"] != "AC04 account closed" {
		t.Fatalf("returned: %s", ret)
	}
	if got := available(t, env, p, acc); got != "100.00" {
		t.Fatalf("return credited back: available %s", got)
	}
	if got := internalPosition(t, env, emi.LedgerOutgoingClearing, "EUR"); got != 0 {
		t.Fatalf("outgoing clearing after the return: %d", got)
	}
	var returnKind, reason string
	if err := env.App.DB.QueryRow(`SELECT lt.kind, t.return_reason FROM transfers t JOIN ledger_transactions lt ON lt.id = t.return_txn
		WHERE t.token = $1`, tok).Scan(&returnKind, &reason); err != nil || returnKind != "outgoing_return" || reason != "AC04 account closed" {
		t.Fatalf("return transaction: %q %q %v", returnKind, reason, err)
	}
	rev := events(t, env, tok, emi.EventTransferReturned)
	if len(rev) != 1 || rev[0]["status"] != "returned" || rev[0]["return_reason"] != "AC04 account closed" {
		t.Fatalf("transfer.returned: %v", rev)
	}
	apptest.Expect(t, "second return", returnPayment(t, env, p, tok, "again"), 14007, http.StatusConflict)
	apptest.Expect(t, "complete after return", complete(t, env, p, tok), 14007, http.StatusConflict)
	if got := available(t, env, p, acc); got != "100.00" {
		t.Fatalf("refused actions moved money: available %s", got)
	}
	if n := countRows(t, env, `SELECT count(*) FROM audit_log WHERE resource_type = 'transfer' AND resource_token = $1`, tok); n != 3 {
		t.Fatalf("%d audit rows (create, complete, return)", n)
	}
}

func TestOutgoingFasterPaymentsPendingReturn(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_gbp", 5000)
	r := payOut(t, env, p, map[string]any{"source": map[string]any{"account": acc},
		"destination": map[string]any{"name": "J Smith", "account_number": "3192 6819", "sort_code": "60-16-13"},
		"amount":      "40", "currency": "GBP", "reference": "Rent"})
	apptest.Expect(t, "faster payment", r, 0, http.StatusCreated)
	dst := r.Data["destination"].(map[string]any)
	if dst["account_number"] != "31926819" || dst["sort_code"] != "601613" || dst["scheme"] != "faster_payments" || dst["iban"] != nil {
		t.Fatalf("destination: %s", r)
	}
	if got := available(t, env, p, acc); got != "10.00" {
		t.Fatalf("available %s", got)
	}
	// A pending payment may be returned too.
	ret := returnPayment(t, env, p, r.Data["token"].(string), "  Beneficiary name mismatch ")
	apptest.Expect(t, "return while pending", ret, 0, http.StatusOK)
	if ret.Data["return_reason"] != "Beneficiary name mismatch" {
		t.Fatalf("reason trimmed: %s", ret)
	}
	if got := available(t, env, p, acc); got != "50.00" {
		t.Fatalf("available after return %s", got)
	}
	ev := events(t, env, r.Data["token"].(string), emi.EventTransferReturned)
	if len(ev) != 1 || ev[0]["destination_account_number"] != "31926819" || ev[0]["destination_sort_code"] != "601613" {
		t.Fatalf("transfer.returned: %v", ev)
	}
	apptest.Expect(t, "complete after return", complete(t, env, p, r.Data["token"].(string)), 14007, http.StatusConflict)
}

func TestOutgoingValidation(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	eur, _, _ := openFunded(t, env, p, "account_eur", 10000)
	gbp, _, _ := openFunded(t, env, p, "account_gbp", 10000)
	_, _, heldIBAN := openFunded(t, env, q, "account_eur", 0)
	user := createUser(t, env, q, validUser(q))
	heldAccount := createAccount(t, env, q, map[string]any{"program": "account_gbp", "user": user})
	held := balancesOf(heldAccount)[0]
	heldNumber, heldSort := held["account_number"].(string), held["sort_code"].(string)
	// A virtual GBP account's UK details exist only inside its GB IBAN.
	heldVirtual := balancesOf(createAccount(t, env, q, map[string]any{"program": "account_gbp", "user": user, "main": heldAccount.Data["token"]}))[0]
	virtualIBAN := heldVirtual["iban"].(string)

	own := ukbank.DefaultScheme
	failing := ""
	for i := 1; failing == ""; i++ {
		if n := fmt.Sprintf("%08d", i); !own.Valid(n) {
			failing = n
		}
	}
	unissued, err := own.AccountNumber(9_000_001)
	if err != nil {
		unissued, _ = own.AccountNumber(9_000_002)
	}
	emiIBAN, err := iban.Build("BG", ukbank.DefaultBG.BankCode+ukbank.DefaultBG.Branch+"10"+"99999999")
	if err != nil {
		t.Fatal(err)
	}

	uk := func(dst map[string]any) map[string]any {
		return map[string]any{"source": map[string]any{"account": gbp}, "destination": dst, "amount": "1.00", "currency": "GBP"}
	}
	eurTo := func(dst map[string]any) map[string]any {
		return map[string]any{"source": map[string]any{"account": eur}, "destination": dst, "amount": "1.00", "currency": "EUR"}
	}
	with := func(body map[string]any, k string, v any) map[string]any { body[k] = v; return body }
	for _, c := range []struct {
		what, field string
		body        map[string]any
	}{
		{"no name", "destination.name", eurTo(map[string]any{"iban": extIBAN})},
		{"blank name", "destination.name", eurTo(map[string]any{"name": "   ", "iban": extIBAN})},
		{"name over 140", "destination.name", eurTo(map[string]any{"name": strings.Repeat("n", 141), "iban": extIBAN})},
		{"name with a control character", "destination.name", eurTo(map[string]any{"name": "Acme\u0007", "iban": extIBAN})},
		{"neither iban nor UK account", "destination", eurTo(map[string]any{"name": "A"})},
		{"both iban and UK account", "destination", eurTo(map[string]any{"name": "A", "iban": extIBAN, "account_number": "31926819", "sort_code": "601613"})},
		{"IBAN check digits", "destination.iban", eurTo(map[string]any{"name": "A", "iban": "DE88370400440532013000"})},
		{"IBAN country", "destination.iban", eurTo(map[string]any{"name": "A", "iban": "XX89370400440532013000"})},
		{"BIC form", "destination.bic", eurTo(map[string]any{"name": "A", "iban": extIBAN, "bic": "COBA1EFF"})},
		{"BIC length", "destination.bic", eurTo(map[string]any{"name": "A", "iban": extIBAN, "bic": "COBADEFFX"})},
		{"IBAN in GBP", "currency", uk(map[string]any{"name": "A", "iban": extIBAN})},
		{"UK account in EUR", "currency", eurTo(map[string]any{"name": "A", "account_number": "31926819", "sort_code": "601613"})},
		{"account number length", "destination.account_number", uk(map[string]any{"name": "A", "account_number": "3192681", "sort_code": "601613"})},
		{"sort code length", "destination.sort_code", uk(map[string]any{"name": "A", "account_number": "31926819", "sort_code": "60161"})},
		{"account number without sort code", "destination", uk(map[string]any{"name": "A", "account_number": "31926819"})},
		{"BIC with a UK account", "destination.bic", uk(map[string]any{"name": "A", "account_number": "31926819", "sort_code": "601613", "bic": extBIC})},
		{"IBAN held in emi", "destination.iban", eurTo(map[string]any{"name": "A", "iban": strings.ToLower(heldIBAN)})},
		{"UK account held in emi", "destination.account_number", uk(map[string]any{"name": "A", "account_number": heldNumber, "sort_code": heldSort})},
		{"UK account of a virtual account held in emi", "destination.account_number",
			uk(map[string]any{"name": "A", "account_number": virtualIBAN[14:], "sort_code": virtualIBAN[8:14]})},
		{"emi's sort code, failing its modulus check", "destination.account_number", uk(map[string]any{"name": "A", "account_number": failing, "sort_code": own.SortCode})},
		{"emi's sort code, an account nobody holds", "destination.account_number", uk(map[string]any{"name": "A", "account_number": unissued, "sort_code": own.SortCode})},
		{"an emi IBAN nobody holds", "destination.iban", eurTo(map[string]any{"name": "A", "iban": emiIBAN})},
		{"amount zero", "amount", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "amount", "0")},
		{"amount with three decimals", "amount", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "amount", "1.001")},
		{"unknown currency", "currency", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "currency", "USD")},
		{"reference with a control character", "reference", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "reference", "a\nb")},
		{"no source", "source", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "source", map[string]any{})},
		{"unknown field", "colour", with(eurTo(map[string]any{"name": "A", "iban": extIBAN}), "colour", "red")},
		{"unknown destination field", "", eurTo(map[string]any{"name": "A", "iban": extIBAN, "account": eur})},
	} {
		r := payOut(t, env, p, c.body)
		apptest.Expect(t, c.what, r, 14001, http.StatusBadRequest)
		if c.field != "" {
			apptest.ExpectField(t, c.what, r, c.field)
		}
		if strings.Contains(c.what, "held in emi") && !strings.Contains(string(r.Raw), "transfer_create") {
			t.Errorf("%s: the message does not point at transfer_create: %s", c.what, r)
		}
		// refuseOwn would refuse emi's sort code anyway; the modulus check
		// must be the one that answers, with every other problem at once.
		if strings.Contains(c.what, "modulus") && !strings.Contains(string(r.Raw), "fails the modulus check") {
			t.Errorf("%s: the message does not name the modulus check: %s", c.what, r)
		}
	}
	if got, got2 := available(t, env, p, eur), available(t, env, p, gbp); got != "100.00" || got2 != "100.00" {
		t.Fatalf("refused payments moved money: %s %s", got, got2)
	}
	if n := countRows(t, env, `SELECT count(*) FROM transfers WHERE type = 'outgoing'`); n != 0 {
		t.Fatalf("%d outgoing transfers after refusals", n)
	}
}

func TestOutgoingRefusals(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	acc, bal, _ := openFunded(t, env, p, "account_eur", 10000)
	foreign, _, _ := openFunded(t, env, q, "account_eur", 10000)

	apptest.Expect(t, "another partner's source", payOut(t, env, p, sepa(foreign, "1.00")), 14002, http.StatusNotFound)
	apptest.Expect(t, "unknown source", payOut(t, env, p, sepa("0193a5c2-7e41-7b3a-9c1d-2e4f6a8b0c12", "1.00")), 14002, http.StatusNotFound)
	short := payOut(t, env, p, map[string]any{"source": map[string]any{"balance": bal},
		"destination": map[string]any{"name": "A", "iban": extIBAN}, "amount": "100.01", "currency": "EUR"})
	apptest.Expect(t, "insufficient funds", short, 14003, http.StatusConflict)
	gbpFromEUR := payOut(t, env, p, map[string]any{"source": map[string]any{"account": acc},
		"destination": map[string]any{"name": "A", "account_number": "31926819", "sort_code": "601613"}, "amount": "1.00", "currency": "GBP"})
	apptest.Expect(t, "no GBP balance", gbpFromEUR, 14005, http.StatusConflict)

	setStatus := func(a, s string) {
		apptest.Expect(t, "status "+s, call(t, env, p, http.MethodPut, "/v2/accounts/"+a+"/status", "account_status", map[string]any{"status": s}), 0, http.StatusOK)
	}
	setStatus(acc, "blocked")
	blocked := payOut(t, env, p, sepa(acc, "1.00"))
	apptest.Expect(t, "blocked source", blocked, 14004, http.StatusConflict)
	apptest.ExpectField(t, "blocked source", blocked, "source")
	setStatus(acc, "active")

	empty, _, _ := openFunded(t, env, p, "account_eur", 0)
	apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+empty, "account_terminate", nil), 0, http.StatusOK)
	apptest.Expect(t, "terminated source", payOut(t, env, p, sepa(empty, "1.00")), 14004, http.StatusConflict)

	// A virtual account pays from its main account's balance.
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainTok, mainBal := main.Data["token"].(string), balancesOf(main)[0]["token"].(string)
	virtual := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainTok}).Data["token"].(string)
	env.Fund(t, mainTok, mainBal, "EUR", 3000)
	v := payOut(t, env, p, sepa(virtual, "10.00"))
	apptest.Expect(t, "from a virtual account", v, 0, http.StatusCreated)
	if v.Data["source"].(map[string]any)["account"] != virtual || v.Data["source"].(map[string]any)["balance"] != mainBal {
		t.Fatalf("virtual source: %s", v)
	}
	if got := available(t, env, p, mainTok); got != "20.00" {
		t.Fatalf("main available %s", got)
	}

	if got := available(t, env, p, acc); got != "100.00" {
		t.Fatalf("refusals moved money: %s", got)
	}
	if n := countRows(t, env, `SELECT count(*) FROM transfers WHERE type = 'outgoing'`); n != 1 {
		t.Fatalf("%d outgoing transfers, want the virtual account's only", n)
	}
}

func TestOutgoingIdempotentRetry(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 10000)
	send := func() apptest.Response {
		env.Clock.Advance(1e9)
		return p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/transfers/external", Operation: "transfer_external_create",
			JSON: sepa(acc, "30.00"), Header: map[string]string{"Idempotency-Key": "payout-42"}})
	}
	first := send()
	apptest.Expect(t, "first", first, 0, http.StatusCreated)
	retry := send()
	apptest.Expect(t, "retry", retry, 0, http.StatusCreated)
	if !bytes.Equal(first.Raw, retry.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry is not the stored answer:\n%s\n%s", first.Raw, retry.Raw)
	}
	if got := available(t, env, p, acc); got != "70.00" {
		t.Fatalf("debited twice? available %s", got)
	}
	if n := countRows(t, env, `SELECT count(*) FROM ledger_transactions WHERE kind = 'outgoing'`); n != 1 {
		t.Fatalf("%d outgoing ledger transactions", n)
	}
	other := sepa(acc, "31.00")
	env.Clock.Advance(1e9)
	conflict := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/transfers/external", Operation: "transfer_external_create",
		JSON: other, Header: map[string]string{"Idempotency-Key": "payout-42"}})
	apptest.Expect(t, "same key, other body", conflict, 10409, http.StatusConflict)
}

// TestOutgoingConcurrentReturns: ten returns of one payment at once give
// exactly one success; the money comes back once (security-checks L4).
func TestOutgoingConcurrentReturns(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 10000)
	r := payOut(t, env, p, sepa(acc, "25.00"))
	apptest.Expect(t, "pay", r, 0, http.StatusCreated)
	tok := r.Data["token"].(string)
	env.Clock.Advance(1e9)

	const n = 10
	reqs := make([]*http.Request, n)
	for i := range reqs {
		// Distinct bodies: equal signed requests would be replays.
		reqs[i] = p.HTTPRequest(t, apptest.Request{Method: http.MethodPost, Path: "/v2/sandbox/transfers/" + tok + "/return",
			Operation: "sandbox_transfer_return", JSON: map[string]any{"reason": fmt.Sprintf("returned %d", i)}})
	}
	type answer struct {
		status int
		header http.Header
		raw    []byte
		err    error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range reqs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := http.DefaultClient.Do(reqs[i])
			if err != nil {
				answers[i].err = err
				return
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			answers[i] = answer{status: res.StatusCode, header: res.Header, raw: raw}
		}(i)
	}
	close(start)
	wg.Wait()
	ok, conflicts := 0, 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatal(a.err)
		}
		d := apptest.Decode(t, a.status, a.header, a.raw)
		switch {
		case d.Code == 0 && d.Status == http.StatusOK:
			ok++
		case d.Code == 14007 && d.Status == http.StatusConflict:
			conflicts++
		default:
			t.Errorf("return %d: %s", i, d)
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d successes and %d conflicts, want 1 and %d", ok, conflicts, n-1)
	}
	if got := available(t, env, p, acc); got != "100.00" {
		t.Fatalf("available %s after concurrent returns", got)
	}
	if c := countRows(t, env, `SELECT count(*) FROM ledger_transactions WHERE kind = 'outgoing_return'`); c != 1 {
		t.Fatalf("%d return transactions", c)
	}
	if c := countRows(t, env, `SELECT count(*) FROM events WHERE type = 'transfer.returned' AND resource_token = $1`, tok); c != 1 {
		t.Fatalf("%d transfer.returned events", c)
	}
	if got := internalPosition(t, env, emi.LedgerOutgoingClearing, "EUR"); got != 0 {
		t.Fatalf("outgoing clearing %d", got)
	}
}

// TestOutgoingReturnToClosedAccounts: a return credits a blocked account,
// and goes to suspense when the account was terminated meanwhile.
func TestOutgoingReturnToClosedAccounts(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, bal, _ := openFunded(t, env, p, "account_eur", 10000)
	first := payOut(t, env, p, sepa(acc, "40.00"))
	second := payOut(t, env, p, sepa(acc, "60.00"))
	apptest.Expect(t, "first", first, 0, http.StatusCreated)
	apptest.Expect(t, "second", second, 0, http.StatusCreated)

	apptest.Expect(t, "block", call(t, env, p, http.MethodPut, "/v2/accounts/"+acc+"/status", "account_status", map[string]any{"status": "blocked"}), 0, http.StatusOK)
	apptest.Expect(t, "return to a blocked account", returnPayment(t, env, p, first.Data["token"].(string), "AC06 blocked"), 0, http.StatusOK)
	if got := available(t, env, p, acc); got != "40.00" {
		t.Fatalf("blocked account credited back: %s", got)
	}
	apptest.Expect(t, "unblock", call(t, env, p, http.MethodPut, "/v2/accounts/"+acc+"/status", "account_status", map[string]any{"status": "active"}), 0, http.StatusOK)
	env.PayOut(t, acc, bal, "EUR", 4000)
	apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+acc, "account_terminate", nil), 0, http.StatusOK)

	suspenseBefore := internalPosition(t, env, emi.LedgerSuspense, "EUR")
	ret := returnPayment(t, env, p, second.Data["token"].(string), "AC04 account closed")
	apptest.Expect(t, "return to a terminated account", ret, 0, http.StatusOK)
	if got := internalPosition(t, env, emi.LedgerSuspense, "EUR") - suspenseBefore; got != 6000 {
		t.Fatalf("suspense received %d", got)
	}
	var posted int64
	if err := env.App.DB.Get(&posted, `SELECT posted FROM balances WHERE token = $1`, bal); err != nil || posted != 0 {
		t.Fatalf("terminated balance posted %d (%v)", posted, err)
	}
	if c := countRows(t, env, `SELECT count(*) FROM ledger_entries e JOIN transfers t ON t.return_txn = e.txn
		WHERE t.token = $1 AND e.internal = 'suspense' AND e.amount = 6000`, second.Data["token"]); c != 1 {
		t.Fatalf("suspense entry of the return: %d", c)
	}
	// The money on suspense has its item, so the back office's queue shows it.
	if c := countRows(t, env, `SELECT count(*) FROM suspense_items WHERE status = 'open'`); c != 1 {
		t.Fatalf("open suspense items: %d", c)
	}
	if c := countRows(t, env, `SELECT count(*) FROM suspense_items s JOIN transfers t ON t.return_txn = s.txn
		WHERE t.token = $1 AND s.status = 'open' AND s.amount = 6000 AND s.currency = 'EUR'
		AND s.reason = 'account_terminated' AND s.account = $2`, second.Data["token"], acc); c != 1 {
		t.Fatalf("suspense item of the return: %d", c)
	}
}

func TestSandboxSettlementScope(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 10000)
	_, _, dstIBAN := openFunded(t, env, q, "account_eur", 0)
	out := payOut(t, env, p, sepa(acc, "5.00"))
	apptest.Expect(t, "pay", out, 0, http.StatusCreated)
	tok := out.Data["token"].(string)
	internal := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": acc}, "destination": map[string]any{"iban": dstIBAN}, "amount": "1.00", "currency": "EUR"})
	apptest.Expect(t, "internal", internal, 0, http.StatusCreated)

	apptest.Expect(t, "another partner completes", complete(t, env, q, tok), 14002, http.StatusNotFound)
	apptest.Expect(t, "another partner returns", returnPayment(t, env, q, tok, "x"), 14002, http.StatusNotFound)
	apptest.Expect(t, "complete an internal transfer", complete(t, env, p, internal.Data["token"].(string)), 14002, http.StatusNotFound)
	apptest.Expect(t, "return an internal transfer (receiver)", returnPayment(t, env, q, internal.Data["token"].(string), "x"), 14002, http.StatusNotFound)
	apptest.Expect(t, "unknown transfer", complete(t, env, p, "0193a5c2-7e41-7b3a-9c1d-2e4f6a8b0c12"), 14002, http.StatusNotFound)
	apptest.Expect(t, "not a token", complete(t, env, p, "nope"), 14002, http.StatusNotFound)
	for _, c := range []struct {
		what string
		body any
	}{
		{"no reason", map[string]any{}},
		{"blank reason", map[string]any{"reason": "  "}},
		{"reason over 140", map[string]any{"reason": strings.Repeat("r", 141)}},
		{"reason with a control character", map[string]any{"reason": "a\tb"}},
		{"unknown field", map[string]any{"reason": "x", "amount": "1.00"}},
	} {
		r := call(t, env, p, http.MethodPost, "/v2/sandbox/transfers/"+tok+"/return", "sandbox_transfer_return", c.body)
		apptest.Expect(t, c.what, r, 14001, http.StatusBadRequest)
	}
	if got := available(t, env, p, acc); got != "94.00" {
		t.Fatalf("available %s", got)
	}
	if d := call(t, env, p, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil); d.Data["status"] != "pending" {
		t.Fatalf("refused actions changed the payment: %s", d)
	}
}

func TestSandboxSettlementIsHiddenInProduction(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	acc, _, _ := openFunded(t, env, p, "account_eur", 10000)
	out := payOut(t, env, p, sepa(acc, "5.00"))
	apptest.Expect(t, "outgoing payments exist in production", out, 0, http.StatusCreated)
	tok := out.Data["token"].(string)
	apptest.Expect(t, "complete", complete(t, env, p, tok), 10004, http.StatusNotFound)
	apptest.Expect(t, "return", returnPayment(t, env, p, tok, "x"), 10004, http.StatusNotFound)
	if got := available(t, env, p, acc); got != "95.00" {
		t.Fatalf("available %s", got)
	}
}
