package api_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// payPIN is distinctive (six digits that occur nowhere else) so that the
// leak checks can look for the bare value.
const payPIN = "739264"

// payCard is a funded account with a card, for card payment tests.
type payCard struct {
	env            *apptest.Env
	p              *apptest.Partner
	acc, bal, card string
}

// newPayCard opens an account of program funded with minor units and
// issues it a virtual card with PIN payPIN; extra adds card_create fields.
func newPayCard(t *testing.T, env *apptest.Env, p *apptest.Partner, program string, minor int64, extra map[string]any) payCard {
	t.Helper()
	acc, bal, _ := openFunded(t, env, p, program, minor)
	body := map[string]any{"account": acc, "type": "virtual", "pin": payPIN}
	for k, v := range extra {
		body[k] = v
	}
	r := call(t, env, p, http.MethodPost, "/v2/cards", "card_create", body)
	apptest.Expect(t, "card_create", r, 0, http.StatusCreated)
	return payCard{env: env, p: p, acc: acc, bal: bal, card: r.Data["token"].(string)}
}

// figures reads the balance's posted, held and available figures.
func (c payCard) figures(t *testing.T) (posted, held, available int64) {
	t.Helper()
	if err := c.env.App.DB.QueryRow(`SELECT posted, held, available FROM balances WHERE token = $1`, c.bal).Scan(&posted, &held, &available); err != nil {
		t.Fatal(err)
	}
	return posted, held, available
}

func (c payCard) wantFigures(t *testing.T, what string, posted, held, available int64) {
	t.Helper()
	if p, h, a := c.figures(t); p != posted || h != held || a != available {
		t.Fatalf("%s: posted %d held %d available %d, want %d %d %d", what, p, h, a, posted, held, available)
	}
}

func (c payCard) pinErrors(t *testing.T) int {
	t.Helper()
	var n int
	if err := c.env.App.DB.Get(&n, `SELECT pin_errors FROM cards WHERE token = $1`, c.card); err != nil {
		t.Fatal(err)
	}
	return n
}

// authorize sends a payment and returns the answer (201 whatever the
// decision).
func (c payCard) authorize(t *testing.T, body map[string]any) apptest.Response {
	t.Helper()
	return call(t, c.env, c.p, http.MethodPost, "/v2/sandbox/cards/"+c.card+"/authorizations", "sandbox_card_authorize", body)
}

// decide sends a payment and checks its decision's reason code; a decline
// must leave the balance's figures as they were.
func (c payCard) decide(t *testing.T, what string, body map[string]any, code string) apptest.Response {
	t.Helper()
	p0, h0, a0 := c.figures(t)
	r := c.authorize(t, body)
	apptest.Expect(t, what, r, 0, http.StatusCreated)
	if r.Data["reason_code"] != code {
		t.Fatalf("%s: reason code %v (%v), want %s", what, r.Data["reason_code"], r.Data["reason"], code)
	}
	if r.Data["reason"] != emi.AuthorizationReason(code) {
		t.Fatalf("%s: reason %v", what, r.Data["reason"])
	}
	if code == emi.ReasonApproved {
		if r.Data["decision"] != "approved" || r.Data["status"] != "approved" || r.Data["hold_expires_at"] == nil {
			t.Fatalf("%s: approval %s", what, r)
		}
		return r
	}
	if r.Data["decision"] != "declined" || r.Data["status"] != "declined" || r.Data["hold_expires_at"] != nil || r.Data["hold_amount"] != "0.00" {
		t.Fatalf("%s: decline %s", what, r)
	}
	c.wantFigures(t, what+" (declined: nothing held)", p0, h0, a0)
	return r
}

func pos(amount string) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "mcc": "5411", "channel": "pos", "pin": payPIN,
		"merchant_name": "Corner Shop", "merchant_country": "BG"}
}

func online(amount string, threeDS any) map[string]any {
	b := map[string]any{"amount": amount, "currency": "EUR", "mcc": "5732", "channel": "online"}
	if threeDS != nil {
		b["three_ds"] = threeDS
	}
	return b
}

func atm(amount string) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "mcc": "6011", "channel": "atm", "pin": payPIN}
}

func with(b map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range b {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// checkLedgerInvariants checks, over the whole database: every ledger
// transaction sums to zero per currency; every balance has available =
// posted - held, posted = the sum of its entries, and held = the holds of
// its open card authorizations.
func checkLedgerInvariants(t *testing.T, env *apptest.Env) {
	t.Helper()
	var unbalanced []int64
	if err := env.App.DB.Select(&unbalanced, `SELECT txn FROM ledger_entries GROUP BY txn, currency HAVING sum(amount) <> 0`); err != nil {
		t.Fatal(err)
	}
	if len(unbalanced) > 0 {
		t.Fatalf("unbalanced ledger transactions %v", unbalanced)
	}
	for what, q := range map[string]string{
		"available = posted - held": `SELECT count(*) FROM balances WHERE available <> posted - held`,
		"posted = sum of entries": `SELECT count(*) FROM balances b
			WHERE posted <> coalesce((SELECT sum(amount) FROM ledger_entries e WHERE e.balance = b.token), 0)`,
		"held = open holds": `SELECT count(*) FROM balances b
			WHERE held <> coalesce((SELECT sum(hold_amount) FROM card_authorizations a WHERE a.balance = b.token AND a.status = 'approved'), 0)`,
	} {
		var n int
		if err := env.App.DB.Get(&n, q); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%s: %d balances break it", what, n)
		}
	}
}

func TestCardPaymentHoldClearAndReverse(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 1000_00, nil)
	c.wantFigures(t, "funded", 1000_00, 0, 1000_00)

	// Approval: available falls, posted does not.
	// merchant_country is read case-insensitively (as the portal's simulator).
	r := c.decide(t, "pos", with(pos("12.50"), "merchant_country", " bg"), "00")
	if r.Data["merchant_country"] != "BG" {
		t.Fatalf("merchant country %v", r.Data["merchant_country"])
	}
	if r.Data["amount"] != "12.50" || r.Data["hold_amount"] != "12.50" || r.Data["currency"] != "EUR" || r.Data["card"] != c.card ||
		r.Data["channel"] != "pos" || r.Data["merchant_name"] != "Corner Shop" || strings.Contains(string(r.Raw), payPIN) {
		t.Fatalf("approval: %s", r)
	}
	exp, err := time.Parse(time.RFC3339, r.Data["hold_expires_at"].(string))
	if d := exp.Sub(env.Clock.Now()); err != nil || d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
		t.Fatalf("hold expires %v (%v)", exp, err)
	}
	c.wantFigures(t, "held", 1000_00, 12_50, 987_50)
	if got := available(t, env, p, c.acc); got != "987.50" {
		t.Fatalf("account_details available %s", got)
	}
	first := r.Data["token"].(string)

	// Clearing: posted and held fall, available does not fall again.
	cl := call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+first+"/clear", "sandbox_authorization_clear", nil)
	apptest.Expect(t, "clear", cl, 0, http.StatusOK)
	if cl.Data["status"] != "cleared" || cl.Data["cleared_amount"] != "12.50" || cl.Data["settled_at"] == nil {
		t.Fatalf("clear: %s", cl)
	}
	c.wantFigures(t, "cleared", 987_50, 0, 987_50)
	var clearing int64
	if err := env.App.DB.Get(&clearing, `SELECT coalesce(sum(e.amount), 0) FROM ledger_entries e JOIN ledger_transactions x ON x.id = e.txn
		WHERE x.kind = 'card_clearing' AND e.internal = 'card_clearing'`); err != nil || clearing != 12_50 {
		t.Fatalf("card clearing account %d (%v)", clearing, err)
	}
	var ref string
	_ = env.App.DB.Get(&ref, `SELECT x.reference FROM ledger_transactions x JOIN card_authorizations a ON a.clearing_txn = x.id WHERE a.token = $1`, first)
	if ref != "Card payment Corner Shop (MCC 5411)" {
		t.Fatalf("statement reference %q", ref)
	}
	apptest.Expect(t, "clear twice", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+first+"/clear", "sandbox_authorization_clear", nil),
		14007, http.StatusConflict)
	apptest.Expect(t, "reverse a cleared one", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+first+"/reverse", "sandbox_authorization_reverse", nil),
		14007, http.StatusConflict)

	// Partial clearing: the rest of the hold is released.
	second := c.decide(t, "pos 100", pos("100.00"), "00").Data["token"].(string)
	c.wantFigures(t, "second hold", 987_50, 100_00, 887_50)
	apptest.Expect(t, "clear more than held", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+second+"/clear", "sandbox_authorization_clear",
		map[string]any{"amount": "100.01"}), 14001, http.StatusBadRequest)
	apptest.Expect(t, "clear zero", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+second+"/clear", "sandbox_authorization_clear",
		map[string]any{"amount": "0"}), 14001, http.StatusBadRequest)
	apptest.Expect(t, "clear unknown field", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+second+"/clear", "sandbox_authorization_clear",
		map[string]any{"tip": "1.00"}), 14001, http.StatusBadRequest)
	c.wantFigures(t, "refused clearings change nothing", 987_50, 100_00, 887_50)
	part := call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+second+"/clear", "sandbox_authorization_clear", map[string]any{"amount": "60.00"})
	apptest.Expect(t, "partial clear", part, 0, http.StatusOK)
	if part.Data["cleared_amount"] != "60.00" || part.Data["hold_amount"] != "100.00" {
		t.Fatalf("partial clear: %s", part)
	}
	c.wantFigures(t, "partially cleared", 927_50, 0, 927_50)

	// Reversal: the hold is released, nothing moves.
	third := c.decide(t, "pos 30", pos("30.00"), "00").Data["token"].(string)
	c.wantFigures(t, "third hold", 927_50, 30_00, 897_50)
	rev := call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+third+"/reverse", "sandbox_authorization_reverse", nil)
	apptest.Expect(t, "reverse", rev, 0, http.StatusOK)
	if rev.Data["status"] != "released" || rev.Data["cleared_amount"] != "0.00" {
		t.Fatalf("reverse: %s", rev)
	}
	c.wantFigures(t, "reversed", 927_50, 0, 927_50)
	apptest.Expect(t, "reverse twice", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+third+"/reverse", "sandbox_authorization_reverse", nil),
		14007, http.StatusConflict)
	apptest.Expect(t, "clear a reversed one", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+third+"/clear", "sandbox_authorization_clear", nil),
		14007, http.StatusConflict)

	// A declined one cannot be settled.
	declined := c.decide(t, "wrong currency", with(pos("1.00"), "currency", "GBP"), "13").Data["token"].(string)
	apptest.Expect(t, "clear a declined one", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+declined+"/clear", "sandbox_authorization_clear", nil),
		14007, http.StatusConflict)

	// Scoping: unknown and foreign payments and cards.
	apptest.Expect(t, "unknown payment", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+kernel.NewToken()+"/clear", "sandbox_authorization_clear", nil),
		14020, http.StatusNotFound)
	apptest.Expect(t, "malformed token", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/nope/reverse", "sandbox_authorization_reverse", nil),
		14020, http.StatusNotFound)
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q"})
	open := c.decide(t, "pos 5", pos("5.00"), "00").Data["token"].(string)
	apptest.Expect(t, "another partner's payment", call(t, env, q, http.MethodPost, "/v2/sandbox/authorizations/"+open+"/clear", "sandbox_authorization_clear", nil),
		14020, http.StatusNotFound)
	apptest.Expect(t, "another partner's payment", call(t, env, q, http.MethodPost, "/v2/sandbox/authorizations/"+open+"/reverse", "sandbox_authorization_reverse", nil),
		14020, http.StatusNotFound)
	apptest.Expect(t, "another partner's card", call(t, env, q, http.MethodPost, "/v2/sandbox/cards/"+c.card+"/authorizations", "sandbox_card_authorize", pos("1.00")),
		12002, http.StatusNotFound)
	apptest.Expect(t, "another partner's card list", call(t, env, q, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/1/10", "card_authorizations", nil),
		12002, http.StatusNotFound)

	// A retry with the same Idempotency-Key is the same payment, held once.
	retry := func() apptest.Response {
		return p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/sandbox/cards/" + c.card + "/authorizations",
			Operation: "sandbox_card_authorize", JSON: pos("7.00"), Header: map[string]string{"Idempotency-Key": "pay-7"}})
	}
	_, h0, _ := c.figures(t)
	r1, r2 := retry(), retry()
	apptest.Expect(t, "first", r1, 0, http.StatusCreated)
	apptest.Expect(t, "replay", r2, 0, http.StatusCreated)
	if r1.Data["token"] != r2.Data["token"] || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s / %s", r1, r2)
	}
	if _, h1, _ := c.figures(t); h1 != h0+7_00 {
		t.Fatalf("held %d -> %d: the retry held again", h0, h1)
	}
	apptest.Expect(t, "reverse the retried one", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+r1.Data["token"].(string)+"/reverse",
		"sandbox_authorization_reverse", nil), 0, http.StatusOK)

	// The card's payments, newest first.
	list := call(t, env, p, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/1/2", "card_authorizations", nil)
	apptest.Expect(t, "list", list, 0, http.StatusOK)
	items := list.Data["items"].([]any)
	if list.Data["total"].(float64) != 6 || len(items) != 2 || items[0].(map[string]any)["token"] != r1.Data["token"] || items[1].(map[string]any)["token"] != open {
		t.Fatalf("list: %s", list)
	}
	apptest.Expect(t, "list limit", call(t, env, p, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/1/101", "card_authorizations", nil),
		12001, http.StatusBadRequest)
	apptest.Expect(t, "list filter", call(t, env, p, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/1/10?status=approved", "card_authorizations", nil),
		12001, http.StatusBadRequest)
	checkLedgerInvariants(t, env)
}

func TestCardPaymentDeclines(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 20_000_00, map[string]any{"three_ds": map[string]any{"biometric": true}})
	cardOp := func(method, suffix, op string, body any) {
		t.Helper()
		apptest.Expect(t, op, call(t, env, p, method, "/v2/cards/"+c.card+suffix, op, body), 0, http.StatusOK)
	}

	t.Run("PIN: three wrong in a row block PIN use until card_reset_pin", func(t *testing.T) {
		c.decide(t, "wrong PIN", with(pos("1.00"), "pin", "0000"), "55")
		if n := c.pinErrors(t); n != 1 {
			t.Fatalf("pin errors after a wrong PIN: %d (the decline must not roll it back)", n)
		}
		c.decide(t, "right PIN resets the count", pos("1.00"), "00")
		if n := c.pinErrors(t); n != 0 {
			t.Fatalf("pin errors after a right PIN: %d", n)
		}
		c.decide(t, "wrong 1", with(pos("1.00"), "pin", "1111"), "55")
		c.decide(t, "wrong 2", with(atm("1.00"), "pin", "2222"), "55")
		c.decide(t, "wrong 3 blocks", with(pos("1.00"), "pin", "3333"), "75")
		if n := c.pinErrors(t); n != 3 {
			t.Fatalf("pin errors %d", n)
		}
		var blocked int
		if err := env.App.DB.Get(&blocked, `SELECT count(*) FROM card_history WHERE card = $1 AND change = 'pin_blocked'
			AND from_value = '2' AND to_value = '3'`, c.card); err != nil || blocked != 1 {
			t.Fatalf("card history of the PIN block: %d %v", blocked, err)
		}
		c.decide(t, "right PIN while blocked", pos("1.00"), "75")
		c.decide(t, "ATM while blocked", atm("1.00"), "75")
		if n := c.pinErrors(t); n != 3 {
			t.Fatalf("pin errors while blocked %d", n)
		}
		if err := env.App.DB.Get(&blocked, `SELECT count(*) FROM card_history WHERE card = $1 AND change = 'pin_blocked'`, c.card); err != nil || blocked != 1 {
			t.Fatalf("declines while blocked add history: %d %v", blocked, err)
		}
		c.decide(t, "online needs no PIN", online("1.00", true), "00")
		cardOp(http.MethodDelete, "/pin/reset", "card_reset_pin", nil)
		c.decide(t, "after card_reset_pin", pos("1.00"), "00")
	})
	t.Run("3DS", func(t *testing.T) {
		c.decide(t, "no 3DS result", online("1.00", nil), "1A")
		c.decide(t, "3DS failed", online("1.00", false), "63")
		c.decide(t, "3DS passed", online("1.00", true), "00")
		cardOp(http.MethodDelete, "/3ds", "card_3ds_remove", map[string]any{"type": "all"})
		c.decide(t, "not enrolled", online("1.00", true), "65")
		c.decide(t, "POS without 3DS", pos("1.00"), "00")
		apptest.Expect(t, "enrol", call(t, env, p, http.MethodPost, "/v2/cards/"+c.card+"/3ds", "card_3ds_enrol", map[string]any{"otp_sms": "+359888123456"}),
			0, http.StatusOK)
		c.decide(t, "enrolled by SMS", online("1.00", true), "00")
	})
	t.Run("MCC and usage groups", func(t *testing.T) {
		c.decide(t, "gambling blocked by mcc_std", with(online("1.00", true), "mcc", "7995"), "57")
		c.decide(t, "lottery blocked by mcc_std", with(pos("1.00"), "mcc", "7800"), "57")
		c.decide(t, "ATM allowed by usage_std", atm("1.00"), "00")
		cardOp(http.MethodPut, "/groups", "card_groups", map[string]any{"usage": "usage_no_atm", "mcc": ""})
		c.decide(t, "ATM refused by usage_no_atm", atm("1.00"), "57")
		c.decide(t, "POS allowed by usage_no_atm", pos("1.00"), "00")
		c.decide(t, "no mcc group blocks nothing", with(pos("1.00"), "mcc", "7995"), "00")
		cardOp(http.MethodPut, "/groups", "card_groups", map[string]any{"usage": "usage_std", "mcc": "mcc_std"})
	})
	t.Run("currency", func(t *testing.T) {
		c.decide(t, "GBP on an EUR card", with(pos("1.00"), "currency", "GBP"), "13")
		c.decide(t, "USD (no conversion)", with(online("1.00", true), "currency", "USD"), "13")
		c.decide(t, "mismatch comes before the limits", with(pos("9999.00"), "currency", "BGN"), "13")
	})
	t.Run("limits", func(t *testing.T) {
		// Spend so far in the window does not matter: move past it.
		env.Clock.Advance(25 * time.Hour)
		c.decide(t, "per transaction", pos("2000.01"), "61")
		c.decide(t, "ATM per withdrawal", atm("500.01"), "61")
		c.decide(t, "2000", pos("2000.00"), "00")
		c.decide(t, "ATM 500", atm("500.00"), "00")
		c.decide(t, "ATM 500 more", atm("500.00"), "00")
		c.decide(t, "ATM daily", atm("0.01"), "61")
		c.decide(t, "1999.99", online("1999.99", true), "00")
		c.decide(t, "daily (5000.00 reached)", pos("0.02"), "61")
		c.decide(t, "exactly the daily figure", pos("0.01"), "00")
		c.decide(t, "over the daily figure", pos("0.01"), "61")
		cardOp(http.MethodPut, "/groups", "card_groups", map[string]any{"limits": "limits_high"})
		c.decide(t, "limits_high per transaction", pos("2000.01"), "00")
		c.decide(t, "limits_high ATM", atm("1000.00"), "00")
		c.decide(t, "limits_high per transaction cap", pos("10000.01"), "61")
		cardOp(http.MethodPut, "/groups", "card_groups", map[string]any{"limits": ""})
		c.decide(t, "without a limits group: limits_std", pos("2000.01"), "61")
		env.Clock.Advance(25 * time.Hour)
		c.decide(t, "a new day", pos("2000.00"), "00")
	})
	t.Run("card and account state", func(t *testing.T) {
		cardOp(http.MethodPut, "/status", "card_status", map[string]any{"status": "inactive"})
		c.decide(t, "inactive card", pos("1.00"), "62")
		c.decide(t, "inactive card, wrong PIN: PIN not compared", with(pos("1.00"), "pin", "9999"), "62")
		if n := c.pinErrors(t); n != 0 {
			t.Fatalf("pin counted on an inactive card: %d", n)
		}
		cardOp(http.MethodPut, "/status", "card_status", map[string]any{"status": "active"})
		apptest.Expect(t, "block account", call(t, env, p, http.MethodPut, "/v2/accounts/"+c.acc+"/status", "account_status", map[string]any{"status": "blocked"}),
			0, http.StatusOK)
		c.decide(t, "blocked account", pos("1.00"), "78")
		apptest.Expect(t, "unblock", call(t, env, p, http.MethodPut, "/v2/accounts/"+c.acc+"/status", "account_status", map[string]any{"status": "active"}),
			0, http.StatusOK)
		if _, err := env.App.DB.Exec(`UPDATE cards SET expiry_month = 1, expiry_year = 2020 WHERE token = $1`, c.card); err != nil {
			t.Fatal(err)
		}
		c.decide(t, "expired card", pos("1.00"), "54")
		now := env.Clock.Now().UTC()
		if _, err := env.App.DB.Exec(`UPDATE cards SET expiry_month = $2, expiry_year = $3 WHERE token = $1`, c.card, int(now.Month()), now.Year()); err != nil {
			t.Fatal(err)
		}
		c.decide(t, "valid through its expiry month", pos("1.00"), "00")
		cardOp(http.MethodDelete, "", "card_terminate", nil)
		c.decide(t, "terminated card", pos("1.00"), "14")

		// A plastic card not yet activated.
		pl := newPayCard(t, env, p, "account_eur", 100_00, map[string]any{"type": "plastic", "delivery_details": delivery()})
		pl.decide(t, "plastic not activated", pos("1.00"), "62")
		apptest.Expect(t, "activate", call(t, env, p, http.MethodPut, "/v2/cards/"+pl.card+"/activate", "card_activate", nil), 0, http.StatusOK)
		pl.decide(t, "activated", pos("1.00"), "00")

		// A non-personalized card without an account.
		np := call(t, env, p, http.MethodPost, "/v2/cards", "card_create", map[string]any{"program": "card_eur", "type": "virtual", "pin": payPIN})
		apptest.Expect(t, "non-personalized", np, 0, http.StatusCreated)
		r := call(t, env, p, http.MethodPost, "/v2/sandbox/cards/"+np.Data["token"].(string)+"/authorizations", "sandbox_card_authorize", pos("1.00"))
		apptest.Expect(t, "card without account", r, 0, http.StatusCreated)
		if r.Data["reason_code"] != "14" {
			t.Fatalf("card without account: %s", r)
		}
	})
	t.Run("insufficient funds", func(t *testing.T) {
		small := newPayCard(t, env, p, "account_eur", 10_00, nil)
		small.decide(t, "more than available", pos("10.01"), "51")
		small.decide(t, "all of it", pos("10.00"), "00")
		small.decide(t, "nothing left", pos("0.01"), "51")
		small.wantFigures(t, "all held", 10_00, 10_00, 0)
	})
	t.Run("invalid requests are refused, not decided", func(t *testing.T) {
		var before int
		_ = env.App.DB.Get(&before, `SELECT count(*) FROM card_authorizations`)
		for _, bad := range []struct {
			what  string
			body  map[string]any
			field string
		}{
			{"no PIN at a POS", with(pos("1.00"), "pin", nil), "pin"},
			{"no PIN at an ATM", with(atm("1.00"), "pin", nil), "pin"},
			{"PIN online", with(online("1.00", true), "pin", payPIN), "pin"},
			{"3DS at a POS", with(pos("1.00"), "three_ds", true), "three_ds"},
			{"PIN format", with(pos("1.00"), "pin", "12a4"), "pin"},
			{"MCC", with(pos("1.00"), "mcc", "541"), "mcc"},
			{"channel", with(pos("1.00"), "channel", "moto"), "channel"},
			{"zero amount", with(pos("1.00"), "amount", "0.00"), "amount"},
			{"three decimals", with(pos("1.00"), "amount", "1.001"), "amount"},
			{"currency", with(pos("1.00"), "currency", "XYZ"), "currency"},
			{"country", with(pos("1.00"), "merchant_country", "XX"), "merchant_country"},
			{"unknown field", with(pos("1.00"), "cvv", "123"), "cvv"},
		} {
			r := c.authorize(t, bad.body)
			apptest.Expect(t, bad.what, r, 12001, http.StatusBadRequest)
			apptest.ExpectField(t, bad.what, r, bad.field)
		}
		var after int
		_ = env.App.DB.Get(&after, `SELECT count(*) FROM card_authorizations`)
		if after != before {
			t.Fatalf("refused requests were recorded: %d -> %d", before, after)
		}
		apptest.Expect(t, "unknown card", call(t, env, p, http.MethodPost, "/v2/sandbox/cards/"+kernel.NewToken()+"/authorizations", "sandbox_card_authorize", pos("1.00")),
			12002, http.StatusNotFound)
	})
	// Every decision is recorded with its reason code; the PIN is never
	// stored, logged or audited.
	var codes []string
	if err := env.App.DB.Select(&codes, `SELECT DISTINCT reason_code FROM card_authorizations ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(codes, " "); got != "00 13 14 1A 51 54 55 57 61 62 63 65 75 78" {
		t.Fatalf("recorded reason codes %s", got)
	}
	var leaks int
	_ = env.App.DB.Get(&leaks, `SELECT count(*) FROM audit_log WHERE changes::text LIKE '%"' || $1 || '"%' OR changes ? 'pin'`, payPIN)
	if leaks != 0 || strings.Contains(env.Logs.String(), `"pin":"`+payPIN) {
		t.Fatalf("the PIN reached the audit log (%d) or the logs", leaks)
	}
	// The bare value, anywhere: not next to other hex digits, so a token
	// that happens to contain the digits is not taken for it.
	bare := `(^|[^0-9a-fA-F])` + payPIN + `([^0-9a-fA-F]|$)`
	var inAudit, inEvents int
	_ = env.App.DB.Get(&inAudit, `SELECT count(*) FROM audit_log WHERE changes::text ~ $1`, bare)
	_ = env.App.DB.Get(&inEvents, `SELECT count(*) FROM events WHERE data::text ~ $1 OR convert_from(body, 'UTF8') ~ $1`, bare)
	if inAudit != 0 || inEvents != 0 || regexp.MustCompile(bare).MatchString(env.Logs.String()) {
		t.Fatalf("the PIN reached the audit log (%d), the events (%d) or the server log", inAudit, inEvents)
	}
	checkLedgerInvariants(t, env)
}

func TestCardHoldsExpire(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 100_00, nil)
	old := c.decide(t, "old", pos("10.00"), "00").Data["token"].(string)
	env.Clock.Advance(3 * 24 * time.Hour)
	young := c.decide(t, "young", pos("5.00"), "00").Data["token"].(string)
	cleared := c.decide(t, "cleared before expiry", pos("1.00"), "00").Data["token"].(string)
	apptest.Expect(t, "clear", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+cleared+"/clear", "sandbox_authorization_clear", nil), 0, http.StatusOK)
	c.wantFigures(t, "two holds", 99_00, 15_00, 84_00)

	env.Clock.Advance(4*24*time.Hour + time.Minute) // old is 7 days and a minute old, young 4 days
	run := func() {
		t.Helper()
		if err := env.App.Maintenance.Run(context.Background(), emi.Job{}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	status := func(tok string) string {
		var s string
		if err := env.App.DB.Get(&s, `SELECT status FROM card_authorizations WHERE token = $1`, tok); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if status(old) != "expired" || status(young) != "approved" || status(cleared) != "cleared" {
		t.Fatalf("statuses %s %s %s", status(old), status(young), status(cleared))
	}
	c.wantFigures(t, "old hold released", 99_00, 5_00, 94_00)
	run() // idempotent
	c.wantFigures(t, "second run releases nothing", 99_00, 5_00, 94_00)
	apptest.Expect(t, "clear an expired one", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+old+"/clear", "sandbox_authorization_clear", nil),
		14007, http.StatusConflict)
	env.Clock.Advance(4 * 24 * time.Hour)
	if n, err := env.App.Authorizations.ExpireHolds(context.Background()); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	c.wantFigures(t, "all released", 99_00, 0, 99_00)
	checkLedgerInvariants(t, env)
}

func TestCardPaymentConcurrentClears(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 100_00, nil)
	for round := 0; round < 3; round++ {
		tok := c.decide(t, "pos", pos("10.00"), "00").Data["token"].(string)
		p0, _, _ := c.figures(t)
		const n = 8
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				path := "/v2/sandbox/authorizations/" + tok + "/clear"
				op := "sandbox_authorization_clear"
				if i%2 == 1 && round == 2 {
					path, op = "/v2/sandbox/authorizations/"+tok+"/reverse", "sandbox_authorization_reverse"
				}
				// Eight different requests at once: signed with version 2 and
				// a nonce each (call's clock step per request races between
				// goroutines and could sign two identical ones: a replay).
				r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: path, Operation: op,
					SignatureVersion: emi.SignatureV2, Nonce: fmt.Sprintf("settle-%d-%d", round, i)})
				if r.Status != http.StatusOK && !(r.Code == 14007 && r.Status == http.StatusConflict) {
					t.Errorf("concurrent settle: %s", r)
				}
				codes[i] = r.Status
			}()
		}
		wg.Wait()
		ok := 0
		for _, s := range codes {
			if s == http.StatusOK {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d settlements succeeded, want exactly one", round, ok)
		}
		if p1, h1, _ := c.figures(t); h1 != 0 || (p1 != p0 && p1 != p0-10_00) {
			t.Fatalf("round %d: posted %d -> %d, held %d", round, p0, p1, h1)
		}
	}
	checkLedgerInvariants(t, env)
}

// TestAccountTerminationWaitsForHolds: an account whose balance has card
// payments on hold cannot be terminated (13007), even with nothing posted.
func TestAccountTerminationWaitsForHolds(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	program(t, env, emi.Program{Code: "overdraft_cards", CardsAllowed: true, CardTypes: []string{"virtual"}, Overdraft: true,
		Groups: map[string][]string{"limits": {"limits_std"}}, Defaults: map[string]string{"limits": "limits_std"}})
	c := newPayCard(t, env, p, "overdraft_cards", 0, nil)
	c.decide(t, "on overdraft", pos("20.00"), "00")
	c.wantFigures(t, "held on overdraft", 0, 20_00, -20_00)
	apptest.Expect(t, "terminate with a hold", call(t, env, p, http.MethodDelete, "/v2/accounts/"+c.acc, "account_terminate", nil),
		13007, http.StatusConflict)
	var list []string
	_ = env.App.DB.Select(&list, `SELECT token::text FROM card_authorizations WHERE card = $1`, c.card)
	apptest.Expect(t, "reverse", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+list[0]+"/reverse", "sandbox_authorization_reverse", nil),
		0, http.StatusOK)
	apptest.Expect(t, "terminate without", call(t, env, p, http.MethodDelete, "/v2/accounts/"+c.acc, "account_terminate", nil), 0, http.StatusOK)
	checkLedgerInvariants(t, env)
}

// TestCardPaymentsAreSandboxOnly: in production the simulator's routes
// answer like unknown ones; the list stays.
func TestCardPaymentsAreSandboxOnly(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	c := newPayCard(t, env, p, "account_eur", 10_00, nil)
	apptest.Expect(t, "authorize", c.authorize(t, pos("1.00")), 10004, http.StatusNotFound)
	tok := kernel.NewToken()
	apptest.Expect(t, "clear", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+tok+"/clear", "sandbox_authorization_clear", nil),
		10004, http.StatusNotFound)
	apptest.Expect(t, "reverse", call(t, env, p, http.MethodPost, "/v2/sandbox/authorizations/"+tok+"/reverse", "sandbox_authorization_reverse", nil),
		10004, http.StatusNotFound)
	apptest.Expect(t, "list", call(t, env, p, http.MethodGet, "/v2/cards/"+c.card+"/authorizations/1/10", "card_authorizations", nil), 0, http.StatusOK)
}
