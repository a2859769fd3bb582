package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/service/kernel"
	"emi/internal/service/transfers"
	"emi/internal/ukbank"
)

// openFunded opens an account of program for a new user of p and credits
// minor units to its first balance; it returns the account and balance
// tokens and the IBAN.
func openFunded(t *testing.T, env *apptest.Env, p *apptest.Partner, program string, minor int64) (acc, bal, ibanOf string) {
	t.Helper()
	user := createUser(t, env, p, validUser(p))
	r := createAccount(t, env, p, map[string]any{"program": program, "user": user})
	b := balancesOf(r)[0]
	acc, bal, ibanOf = r.Data["token"].(string), b["token"].(string), b["iban"].(string)
	if minor > 0 {
		env.Fund(t, acc, bal, b["currency"].(string), minor)
	}
	return acc, bal, ibanOf
}

func available(t *testing.T, env *apptest.Env, p *apptest.Partner, acc string) string {
	t.Helper()
	r := call(t, env, p, http.MethodGet, "/v2/accounts/"+acc, "account_details", nil)
	apptest.Expect(t, "account_details", r, 0, http.StatusOK)
	return balancesOf(r)[0]["available"].(string)
}

func TestTransferInternal(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	srcAcc, srcBal, srcIBAN := openFunded(t, env, p, "account_eur", 10000)
	dstAcc, _, dstIBAN := openFunded(t, env, q, "account_eur", 0)

	r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"account": srcAcc}, "destination": map[string]any{"iban": dstIBAN},
		"amount": "12.50", "currency": "EUR", "reference": "Invoice 7"})
	apptest.Expect(t, "transfer", r, 0, http.StatusCreated)
	if r.Data["status"] != "completed" || r.Data["amount"] != "12.50" || r.Data["type"] != "internal" {
		t.Fatalf("transfer: %s", r)
	}
	src, dst := r.Data["source"].(map[string]any), r.Data["destination"].(map[string]any)
	if src["account"] != srcAcc || src["balance"] != srcBal || src["iban"] != srcIBAN || dst["account"] != nil || dst["iban"] != dstIBAN {
		t.Fatalf("sides as the sender sees them: %s", r)
	}
	if got := available(t, env, p, srcAcc); got != "87.50" {
		t.Fatalf("source available %s", got)
	}
	if got := available(t, env, q, dstAcc); got != "12.50" {
		t.Fatalf("destination available %s", got)
	}
	tok := r.Data["token"].(string)
	d := call(t, env, q, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil)
	apptest.Expect(t, "details as receiver", d, 0, http.StatusOK)
	if d.Data["source"].(map[string]any)["account"] != nil || d.Data["destination"].(map[string]any)["account"] != dstAcc {
		t.Fatalf("receiver's view: %s", d)
	}
	stranger := env.NewPartner(t, emi.PartnerCreate{Name: "S"})
	apptest.Expect(t, "stranger", call(t, env, stranger, http.MethodGet, "/v2/transfers/"+tok, "transfer_details", nil), 14002, http.StatusNotFound)

	short := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
		"source": map[string]any{"balance": srcBal}, "destination": map[string]any{"iban": dstIBAN},
		"amount": "87.51", "currency": "EUR"})
	apptest.Expect(t, "insufficient", short, 14003, http.StatusConflict)
	// Another partner's customer is paid by IBAN (or account number and
	// sort code); their account and balance tokens are theirs, and one
	// answers exactly as an unknown token (S4).
	for _, dst := range []map[string]any{{"account": dstAcc}, {"balance": r.Data["destination"].(map[string]any)["balance"]}, {"account": "01a2062a-c373-7dfe-b7d4-456a0a594a21"}} {
		if dst["balance"] == nil && dst["account"] == nil {
			continue
		}
		byToken := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", map[string]any{
			"source": map[string]any{"balance": srcBal}, "destination": dst, "amount": "1.00", "currency": "EUR"})
		apptest.Expect(t, fmt.Sprintf("another partner's token %v", dst), byToken, 14006, http.StatusNotFound)
		apptest.ExpectField(t, "another partner's token", byToken, "destination")
	}
	if got := available(t, env, p, srcAcc); got != "87.50" {
		t.Fatalf("source after refusal %s", got)
	}
}

func transferBody(src, dst map[string]any, amount any, currency string) map[string]any {
	return map[string]any{"source": src, "destination": dst, "amount": amount, "currency": currency, "reference": "test"}
}

func TestTransferRules(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	srcAcc, srcBal, _ := openFunded(t, env, p, "account_eur", 10000)
	dstAcc, dstBal, dstIBAN := openFunded(t, env, p, "account_eur", 0)
	gbpAcc, _, _ := openFunded(t, env, p, "account_gbp", 5000)
	foreignAcc, _, _ := openFunded(t, env, q, "account_eur", 5000)
	send := func(body map[string]any) apptest.Response {
		return call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", body)
	}
	src, dst := map[string]any{"account": srcAcc}, map[string]any{"account": dstAcc}

	t.Run("malformed requests are 14001 naming the field, and move nothing", func(t *testing.T) {
		cases := []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"three decimals", transferBody(src, dst, "1.005", "EUR"), "amount"},
			{"zero", transferBody(src, dst, "0.00", "EUR"), "amount"},
			{"negative", transferBody(src, dst, "-5.00", "EUR"), "amount"},
			{"exponent", transferBody(src, dst, "1e3", "EUR"), "amount"},
			{"words", transferBody(src, dst, "ten", "EUR"), "amount"},
			{"over the cap", transferBody(src, dst, "1000000000.01", "EUR"), "amount"},
			{"boolean", transferBody(src, dst, true, "EUR"), "amount"},
			{"unknown currency", transferBody(src, dst, "1.00", "USD"), "currency"},
			{"missing currency", transferBody(src, dst, "1.00", ""), "currency"},
			{"no source", transferBody(map[string]any{}, dst, "1.00", "EUR"), "source"},
			{"two forms", transferBody(map[string]any{"account": srcAcc, "balance": srcBal}, dst, "1.00", "EUR"), "source"},
			{"half a UK account", transferBody(src, map[string]any{"account_number": "12345678"}, "1.00", "EUR"), "destination"},
			{"unknown field", map[string]any{"source": src, "destination": dst, "amount": "1.00", "currency": "EUR", "fee": "1"}, "fee"},
			{"control characters", map[string]any{"source": src, "destination": dst, "amount": "1.00", "currency": "EUR", "reference": "a\u0007b"}, "reference"},
			{"to itself", transferBody(src, map[string]any{"balance": srcBal}, "1.00", "EUR"), "destination"},
		}
		for _, c := range cases {
			r := send(c.body)
			apptest.Expect(t, c.name, r, 14001, http.StatusBadRequest)
			found := false
			for _, f := range r.Errors {
				found = found || f.Field == c.field
			}
			if !found {
				t.Errorf("%s: errors %v do not name %s", c.name, r.Errors, c.field)
			}
		}
		if got := available(t, env, p, srcAcc); got != "100.00" {
			t.Fatalf("source after refusals: %s", got)
		}
	})
	t.Run("a JSON number amount is refused, never read", func(t *testing.T) {
		// The schema says string (issue 34): 12345 is not 12,345.00, nor
		// 123.45 (minor units), nor anything else.
		before := available(t, env, p, dstAcc)
		for _, n := range []any{0.1, 12345, 12.5} {
			r := send(transferBody(src, dst, n, "EUR"))
			apptest.Expect(t, "number", r, emi.ErrTransferValidation.Code, http.StatusBadRequest)
			apptest.ExpectField(t, "number", r, "amount")
		}
		if got := available(t, env, p, dstAcc); got != before {
			t.Fatalf("destination after refused numbers: %s, was %s", got, before)
		}
	})
	t.Run("source and destination lookups", func(t *testing.T) {
		apptest.Expect(t, "foreign source", send(transferBody(map[string]any{"account": foreignAcc}, dst, "1.00", "EUR")), 14002, http.StatusNotFound)
		apptest.Expect(t, "unknown source", send(transferBody(map[string]any{"balance": kernel.NewToken()}, dst, "1.00", "EUR")), 14002, http.StatusNotFound)
		apptest.Expect(t, "unknown IBAN", send(transferBody(src, map[string]any{"iban": "BG80BNBG96611020345678"}, "1.00", "EUR")), 14006, http.StatusNotFound)
		apptest.Expect(t, "malformed token", send(transferBody(src, map[string]any{"account": "nope"}, "1.00", "EUR")), 14006, http.StatusNotFound)
		apptest.Expect(t, "source without the currency", send(transferBody(map[string]any{"account": gbpAcc}, dst, "1.00", "EUR")), 14005, http.StatusConflict)
		apptest.Expect(t, "destination without the currency", send(transferBody(src, map[string]any{"account": gbpAcc}, "1.00", "EUR")), 14005, http.StatusConflict)
		// An IBAN with spaces and in lower case is the same IBAN.
		spaced := ""
		for i, r := range dstIBAN {
			if i > 0 && i%4 == 0 {
				spaced += " "
			}
			spaced += string(r)
		}
		apptest.Expect(t, "spaced IBAN", send(transferBody(src, map[string]any{"iban": spaced}, "1.00", "EUR")), 0, http.StatusCreated)
		apptest.Expect(t, "by balance", send(transferBody(map[string]any{"balance": srcBal}, map[string]any{"balance": dstBal}, "1.00", "EUR")), 0, http.StatusCreated)
	})
	t.Run("blocked and terminated accounts", func(t *testing.T) {
		status := func(acc, s string) {
			apptest.Expect(t, s, call(t, env, p, http.MethodPut, "/v2/accounts/"+acc+"/status", "account_status", map[string]any{"status": s}), 0, http.StatusOK)
		}
		status(dstAcc, "blocked")
		r := send(transferBody(src, dst, "1.00", "EUR"))
		apptest.Expect(t, "blocked destination", r, 14004, http.StatusConflict)
		if len(r.Errors) != 1 || r.Errors[0].Field != "destination" {
			t.Fatalf("errors: %v", r.Errors)
		}
		r = send(transferBody(dst, src, "0.01", "EUR"))
		apptest.Expect(t, "blocked source", r, 14004, http.StatusConflict)
		status(dstAcc, "active")
		emptyAcc, _, _ := openFunded(t, env, p, "account_eur", 0)
		apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+emptyAcc, "account_terminate", nil), 0, http.StatusOK)
		apptest.Expect(t, "terminated destination", send(transferBody(src, map[string]any{"account": emptyAcc}, "1.00", "EUR")), 14004, http.StatusConflict)
	})
	t.Run("termination waits for the money to leave", func(t *testing.T) {
		apptest.Expect(t, "with money", call(t, env, p, http.MethodDelete, "/v2/accounts/"+dstAcc, "account_terminate", nil), 13007, http.StatusConflict)
		back := send(transferBody(dst, src, available(t, env, p, dstAcc), "EUR"))
		apptest.Expect(t, "empty it", back, 0, http.StatusCreated)
		apptest.Expect(t, "empty", call(t, env, p, http.MethodDelete, "/v2/accounts/"+dstAcc, "account_terminate", nil), 0, http.StatusOK)
	})
	checkLedger(t, env)
}

func TestTransferVirtualAccounts(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainAcc, mainBal := main.Data["token"].(string), balancesOf(main)[0]["token"].(string)
	virt := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainAcc})
	virtAcc, virtIBAN := virt.Data["token"].(string), balancesOf(virt)[0]["iban"].(string)
	otherAcc, otherBal, _ := openFunded(t, env, p, "account_eur", 5000)

	// Money sent to the virtual IBAN lands on the main balance and shows on
	// the virtual account.
	in := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": otherAcc}, map[string]any{"iban": virtIBAN}, "20.00", "EUR"))
	apptest.Expect(t, "to the virtual IBAN", in, 0, http.StatusCreated)
	d := in.Data["destination"].(map[string]any)
	if d["account"] != virtAcc || d["balance"] != mainBal || d["iban"] != virtIBAN {
		t.Fatalf("destination: %v", d)
	}
	if available(t, env, p, mainAcc) != "20.00" || available(t, env, p, virtAcc) != "20.00" {
		t.Fatal("the virtual account does not show its main balance")
	}
	var shown string
	if err := env.App.DB.Get(&shown, `SELECT account FROM ledger_entries WHERE balance = $1`, mainBal); err != nil || shown != virtAcc {
		t.Fatalf("entry shows on %s (%v)", shown, err)
	}
	out := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": virtAcc}, map[string]any{"balance": otherBal}, "5.00", "EUR"))
	apptest.Expect(t, "from the virtual account", out, 0, http.StatusCreated)
	if s := out.Data["source"].(map[string]any); s["account"] != virtAcc || s["balance"] != mainBal {
		t.Fatalf("source: %v", s)
	}
	if available(t, env, p, mainAcc) != "15.00" {
		t.Fatal("the main balance did not pay")
	}
	// A blocked main account stops its virtual account too.
	apptest.Expect(t, "block main", call(t, env, p, http.MethodPut, "/v2/accounts/"+mainAcc+"/status", "account_status", map[string]any{"status": "blocked"}), 0, http.StatusOK)
	r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": virtAcc}, map[string]any{"balance": otherBal}, "1.00", "EUR"))
	apptest.Expect(t, "virtual of a blocked main", r, 14004, http.StatusConflict)
	// Between a virtual account and its own main balance nothing would
	// move: refused (14008; booking it would skip the funds check).
	apptest.Expect(t, "unblock", call(t, env, p, http.MethodPut, "/v2/accounts/"+mainAcc+"/status", "account_status", map[string]any{"status": "active"}), 0, http.StatusOK)
	self := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": virtAcc}, map[string]any{"account": mainAcc}, "1.00", "EUR"))
	apptest.Expect(t, "virtual to its own main", self, 14008, http.StatusConflict)
	if available(t, env, p, mainAcc) != "15.00" {
		t.Fatal("a movement within one balance changed it")
	}
	checkLedger(t, env)
}

func TestTransferEventsAndIdempotency(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	srcAcc, _, _ := openFunded(t, env, p, "account_eur", 100000)
	mineAcc, _, _ := openFunded(t, env, p, "account_eur", 0)
	theirAcc, theirBal, theirIBAN := openFunded(t, env, q, "account_eur", 0)

	cross := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": srcAcc}, map[string]any{"iban": theirIBAN}, "3.00", "EUR"))
	apptest.Expect(t, "cross-partner", cross, 0, http.StatusCreated)
	tok := cross.Data["token"].(string)
	var rows []struct {
		Partner string `db:"partner_id"`
		Body    string `db:"body"`
	}
	if err := env.App.DB.Select(&rows, `SELECT partner_id, convert_from(body, 'UTF8') AS body FROM events
		WHERE resource_token = $1 AND type = 'transfer.completed' ORDER BY partner_id = $2 DESC`, tok, p.ID); err != nil || len(rows) != 2 {
		t.Fatalf("%d events (%v)", len(rows), err)
	}
	if rows[0].Partner != p.ID || !strings.Contains(rows[0].Body, srcAcc) || strings.Contains(rows[0].Body, theirAcc) || !strings.Contains(rows[0].Body, theirIBAN) {
		t.Fatalf("sender's event: %s", rows[0].Body)
	}
	if rows[1].Partner != q.ID || !strings.Contains(rows[1].Body, theirAcc) || !strings.Contains(rows[1].Body, theirBal) || strings.Contains(rows[1].Body, srcAcc) {
		t.Fatalf("receiver's event: %s", rows[1].Body)
	}
	same := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": srcAcc}, map[string]any{"account": mineAcc}, "1.00", "EUR"))
	apptest.Expect(t, "same partner", same, 0, http.StatusCreated)
	if n := len(events(t, env, same.Data["token"].(string), emi.EventTransferCompleted)); n != 1 {
		t.Fatalf("%d events for a transfer within one partner", n)
	}

	t.Run("I1 and I2: a retry replays, another body conflicts", func(t *testing.T) {
		body := transferBody(map[string]any{"account": srcAcc}, map[string]any{"account": mineAcc}, "2.00", "EUR")
		rq := apptest.Request{Method: http.MethodPost, Path: "/v2/transfers", Operation: "transfer_create", JSON: body,
			Header: map[string]string{"Idempotency-Key": "pay-invoice-9"}}
		first := p.Do(t, rq)
		env.Clock.Advance(time.Second)
		again := p.Do(t, rq)
		if first.Status != http.StatusCreated || string(first.Raw) != string(again.Raw) || again.Status != first.Status {
			t.Fatalf("replay differs:\n%s\n%s", first, again)
		}
		env.Clock.Advance(time.Second)
		rq.JSON = transferBody(map[string]any{"account": srcAcc}, map[string]any{"account": mineAcc}, "2.01", "EUR")
		apptest.Expect(t, "other body", p.Do(t, rq), 10409, http.StatusConflict)
		if got := available(t, env, p, mineAcc); got != "3.00" {
			t.Fatalf("destination after the retries: %s", got)
		}
		// A refusal is replayed too, and changes nothing.
		env.Clock.Advance(time.Second)
		short := apptest.Request{Method: http.MethodPost, Path: "/v2/transfers", Operation: "transfer_create",
			JSON: transferBody(map[string]any{"account": mineAcc}, map[string]any{"account": srcAcc}, "999.00", "EUR"), Header: map[string]string{"Idempotency-Key": "too-much"}}
		a, b := p.Do(t, short), func() apptest.Response { env.Clock.Advance(time.Second); return p.Do(t, short) }()
		if a.Code != 14003 || string(a.Raw) != string(b.Raw) {
			t.Fatalf("refusal replay: %s / %s", a, b)
		}
	})
	t.Run("I3: 50 concurrent requests with one key move money once", func(t *testing.T) {
		for round := 0; round < 5; round++ {
			key := fmt.Sprintf("race-%d", round)
			before := available(t, env, p, mineAcc)
			var wg sync.WaitGroup
			var created, conflicts atomic.Int64
			start := make(chan struct{})
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					// Timestamps spread over most of the accepted window
					// (±15 s; ±10 s leaves room for a slow run) give most
					// requests a signature of their own (21 distinct); the
					// others are replays of a signature (10003).
					rq := apptest.Request{Method: http.MethodPost, Path: "/v2/transfers", Operation: "transfer_create", SkipOpenAPI: true,
						JSON:      transferBody(map[string]any{"account": srcAcc}, map[string]any{"account": mineAcc}, "1.00", "EUR"),
						Header:    map[string]string{"Idempotency-Key": key},
						Timestamp: strconv.FormatInt(env.Clock.Now().Unix()-10+int64(i%21), 10)}
					r := p.Do(t, rq)
					switch {
					case r.Status == http.StatusCreated:
						created.Add(1)
					case r.Code == 10409 || r.Code == 10003:
						conflicts.Add(1)
					default:
						t.Errorf("request %d: %s", i, r)
					}
				}(i)
			}
			close(start)
			wg.Wait()
			after := available(t, env, p, mineAcc)
			b, _ := emi.ParseAmount(before)
			a, _ := emi.ParseAmount(after)
			if a-b != 100 {
				t.Fatalf("round %d: %d created answers, %d conflicts, moved %d", round, created.Load(), conflicts.Load(), a-b)
			}
			env.Clock.Advance(30 * time.Second)
		}
	})
	checkLedger(t, env)
}

// TestTransferMainToVirtualIsRefused performs the netting attack: from a
// main account holding 0.01 EUR, a transfer of 1,000,000,000.00 EUR to its
// own virtual account (both sides are one balance). The old code booked it
// as completed (the entries netted to nothing, so the funds check never
// ran), sent transfer.completed and wrote statement lines running to
// -999,999,999.99. Now every form of naming the two sides is 409 / 14008
// and nothing is written: no transfer, ledger transaction, event or audit
// row; the ledger itself refuses such a posting from any caller, and so
// does the database.
func TestTransferMainToVirtualIsRefused(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	main := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mainAcc, mainBal, mainIBAN := main.Data["token"].(string), balancesOf(main)[0]["token"].(string), balancesOf(main)[0]["iban"].(string)
	virt := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainAcc})
	virtAcc, virtIBAN := virt.Data["token"].(string), balancesOf(virt)[0]["iban"].(string)
	virt2 := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mainAcc})
	virt2Acc := virt2.Data["token"].(string)
	env.Fund(t, mainAcc, mainBal, "EUR", 1)

	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := env.App.DB.Get(&n, q, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := [3]int{count(`SELECT count(*) FROM transfers`), count(`SELECT count(*) FROM ledger_transactions`), count(`SELECT count(*) FROM events`)}
	cases := []struct {
		name     string
		src, dst map[string]any
	}{
		{"main to virtual by IBAN", map[string]any{"account": mainAcc}, map[string]any{"iban": virtIBAN}},
		{"main to virtual by token", map[string]any{"balance": mainBal}, map[string]any{"account": virtAcc}},
		{"virtual to main by IBAN", map[string]any{"account": virtAcc}, map[string]any{"iban": mainIBAN}},
		{"virtual to virtual of one main", map[string]any{"account": virtAcc}, map[string]any{"account": virt2Acc}},
	}
	for _, c := range cases {
		r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create", transferBody(c.src, c.dst, "1000000000.00", "EUR"))
		apptest.Expect(t, c.name, r, 14008, http.StatusConflict)
		if r.Message != "service.transfers.same_balance" {
			t.Fatalf("%s: message %q", c.name, r.Message)
		}
		apptest.ExpectField(t, c.name, r, "destination")
	}
	after := [3]int{count(`SELECT count(*) FROM transfers`), count(`SELECT count(*) FROM ledger_transactions`), count(`SELECT count(*) FROM events`)}
	if before != after {
		t.Fatalf("transfers, ledger transactions, events: %v before, %v after", before, after)
	}
	if got := available(t, env, p, mainAcc); got != "0.01" {
		t.Fatalf("main account available %s", got)
	}

	// The ledger refuses a posting that nets to nothing on a balance,
	// whoever calls it.
	_, err := env.App.Ledger.Post(t.Context(), emi.LedgerTxn{Kind: emi.TxnTransfer, Reference: "fake", Entries: []emi.Entry{
		{Balance: mainBal, Account: mainAcc, Currency: "EUR", Amount: -100_000_000_000},
		{Balance: mainBal, Account: virtAcc, Currency: "EUR", Amount: 100_000_000_000},
	}})
	if !errors.Is(err, emi.ErrSameBalance) {
		t.Fatalf("Ledger.Post of a netting posting: %v", err)
	}
	// And so does the database, at commit.
	tx, err := env.App.DB.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var id int64
	if err := tx.Get(&id, `INSERT INTO ledger_transactions (token, kind, reference) VALUES ($1, 'transfer', 'fake') RETURNING id`, kernel.NewToken()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO ledger_entries (txn, balance, account, currency, amount, balance_after) VALUES
		($1, $2, $3, 'EUR', -100000000000, -99999999999), ($1, $2, $4, 'EUR', 100000000000, 1)`, id, mainBal, mainAcc, virtAcc); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil || !strings.Contains(err.Error(), "nets to nothing") {
		t.Fatalf("commit of a netting transaction: %v", err)
	}
	checkLedger(t, env)
}

// TestTransferCrossPartnerAnswerTable performs the probing attack: with an
// empty source balance, transfer_create answered 14003, 14005, 14004 or
// 14006 depending on the state of another partner's account named by IBAN
// (active, another currency, blocked or terminated, unknown), with nothing
// moved: an oracle over other partners' customers. Now the source is
// answered first and every problem of a foreign destination is one answer
// (14006), so the answer table is one row per source state whatever the
// foreign account's state; and the old code's table had four rows.
func TestTransferCrossPartnerAnswerTable(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Prober"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	emptyAcc, _, _ := openFunded(t, env, p, "account_eur", 0)
	fundedAcc, _, _ := openFunded(t, env, p, "account_eur", 100000)

	status := func(acc, s string) {
		t.Helper()
		apptest.Expect(t, s, call(t, env, q, http.MethodPut, "/v2/accounts/"+acc+"/status", "account_status", map[string]any{"status": s}), 0, http.StatusOK)
	}
	_, _, active := openFunded(t, env, q, "account_eur", 0)
	_, _, gbp := openFunded(t, env, q, "account_gbp", 0)
	blockedAcc, _, blocked := openFunded(t, env, q, "account_eur", 0)
	status(blockedAcc, "blocked")
	termAcc, _, terminated := openFunded(t, env, q, "account_eur", 0)
	apptest.Expect(t, "terminate", call(t, env, q, http.MethodDelete, "/v2/accounts/"+termAcc, "account_terminate", nil), 0, http.StatusOK)
	user := createUser(t, env, q, validUser(q))
	mainAcc := createAccount(t, env, q, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)
	virt := createAccount(t, env, q, map[string]any{"program": "account_eur", "user": user, "main": mainAcc})
	virtIBAN := balancesOf(virt)[0]["iban"].(string)
	status(mainAcc, "blocked")
	unknown := "BG80BNBG96611020345678"

	foreign := map[string]string{"active": active, "GBP only": gbp, "blocked": blocked, "terminated": terminated,
		"virtual of a blocked main": virtIBAN, "unknown": unknown}
	answer := func(src, iban string) string {
		r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
			transferBody(map[string]any{"account": src}, map[string]any{"iban": iban}, "10.00", "EUR"))
		return fmt.Sprintf("%d %s", r.Status, r.Raw)
	}
	// From an empty balance: one answer (14003) for every foreign state.
	table := map[string][]string{}
	for state, iban := range foreign {
		a := answer(emptyAcc, iban)
		table[a] = append(table[a], state)
	}
	if len(table) != 1 {
		t.Fatalf("from an empty balance the answers differ by the foreign account's state: %v", table)
	}
	for a := range table {
		if !strings.Contains(a, `"code":14003`) {
			t.Fatalf("from an empty balance: %s", a)
		}
	}
	// With money: every foreign account that cannot receive is one answer
	// (14006), the same as an IBAN that does not exist.
	table = map[string][]string{}
	for state, iban := range foreign {
		if state == "active" {
			continue
		}
		a := answer(fundedAcc, iban)
		table[a] = append(table[a], state)
	}
	if len(table) != 1 {
		t.Fatalf("the answers differ by the foreign account's state: %v", table)
	}
	for a := range table {
		if !strings.Contains(a, `"code":14006`) {
			t.Fatalf("foreign account that cannot receive: %s", a)
		}
	}
	if got := available(t, env, p, fundedAcc); got != "1000.00" {
		t.Fatalf("source after refusals: %s", got)
	}
	checkLedger(t, env)
}

// TestTransferDestinationMissesAreLimited: 14006 answers tell a partner an
// identifier is not a usable account, so they are limited per API key (or
// they would walk other partners' customers): a burst of 50 misses gets at
// most DestinationMissLimit answers of 14006, the rest 429 / 10029, and
// while the key is over the limit a transfer to a valid foreign IBAN is 429
// too (a success would answer the same question). Another key is not
// affected.
func TestTransferDestinationMissesAreLimited(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Walker"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	src, _, _ := openFunded(t, env, p, "account_eur", 100000)
	_, _, valid := openFunded(t, env, q, "account_eur", 0)
	qsrc, _, _ := openFunded(t, env, q, "account_eur", 100000)
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			b, _ := json.Marshal(transferBody(map[string]any{"account": src}, map[string]any{"iban": walkIBAN(i)}, "1.00", "EUR"))
			r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/transfers", Operation: "transfer_create", Body: b,
				SignatureVersion: 2, Nonce: fmt.Sprintf("walk%d", i)})
			codes[i] = r.Code
		}()
	}
	close(start)
	wg.Wait()
	misses, limited := 0, 0
	for _, c := range codes {
		switch c {
		case 14006:
			misses++
		case 10029:
			limited++
		default:
			t.Errorf("code %d", c)
		}
	}
	if misses != transfers.DestinationMissLimit || limited != 50-transfers.DestinationMissLimit {
		t.Fatalf("%d answered 14006, %d limited (limit %d)", misses, limited, transfers.DestinationMissLimit)
	}
	r := call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": src}, map[string]any{"iban": valid}, "1.00", "EUR"))
	apptest.Expect(t, "valid IBAN while over the limit", r, 10029, http.StatusTooManyRequests)
	r = call(t, env, q, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": qsrc}, map[string]any{"iban": walkIBAN(99)}, "1.00", "EUR"))
	apptest.Expect(t, "another key", r, 14006, http.StatusNotFound)
}

// walkIBAN is the i-th valid Bulgarian IBAN of emi's layout that no
// account holds (serials far above any issued in a test).
func walkIBAN(i int) string {
	s, err := ukbank.DefaultBG.IBAN("10", int64(99_000_000+i))
	if err != nil {
		panic(err)
	}
	return s
}

// TestIBANSerialsAreNotWalkable: account identifiers were drawn from
// sequences, so a partner's own IBAN told it the neighbouring ones. Now
// serials are random: among 30 new EUR and 30 GBP accounts no two serials
// are consecutive, and every IBAN and UK account number still passes its
// check digits and the iban package's rules.
func TestIBANSerialsAreNotWalkable(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	var bg, uk []int64
	for range 30 {
		_, _, eur := openFunded(t, env, p, "account_eur", 0)
		_, _, gbp := openFunded(t, env, p, "account_gbp", 0)
		for _, s := range []string{eur, gbp} {
			if err := iban.Validate(s); err != nil {
				t.Fatalf("IBAN %s: %v", s, err)
			}
		}
		n, _ := strconv.ParseInt(eur[len(eur)-8:], 10, 64)
		bg = append(bg, n)
		acct := gbp[len(gbp)-8:]
		if ok, err := ukbank.Check(ukbank.DefaultScheme.Rule, ukbank.DefaultScheme.SortCode, acct); err != nil || !ok {
			t.Fatalf("UK account number %s fails its modulus check (%v)", acct, err)
		}
		m, _ := strconv.ParseInt(acct[:7], 10, 64)
		uk = append(uk, m)
	}
	for _, serials := range [][]int64{bg, uk} {
		slices.Sort(serials)
		for i := 1; i < len(serials); i++ {
			if d := serials[i] - serials[i-1]; d <= 1 {
				t.Fatalf("serials %d and %d are adjacent or equal: %v", serials[i-1], serials[i], serials)
			}
		}
	}
}
