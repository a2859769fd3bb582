package api_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
)

// TestAccountReadFunctionMatchesTheStatement: behind a transaction-mode
// pooler a non-locking account read runs the account_read function
// (migration 00093); prepared or locking, it runs the statement in
// internal/postgres/accounts.go. The two texts must read the same thing:
// for each kind of account (a merchant's, a user's, a virtual one, with
// two balances, blocked, terminated, another partner's, an unknown or
// malformed token) both give the same account or the same error, with the
// partner and without (the back office).
func TestAccountReadFunctionMatchesTheStatement(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	open := func(pl postgres.Pooler) *postgres.AccountStore {
		db, err := postgres.OpenWith(context.Background(), env.DBURL, postgres.Options{Pooler: pl, MaxOpen: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return postgres.NewAccountStore(db)
	}
	prepared, pooled := open(postgres.PoolerNone), open(postgres.PoolerTransaction)

	token := func(r apptest.Response) string { return r.Data["token"].(string) }
	user := createUser(t, env, p, validUser(p))
	mineR := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	mine := token(mineR)
	virtual := token(createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": mine}))
	merchant := token(createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": p.Merchant}))
	blocked := token(createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": p.Merchant}))
	apptest.Expect(t, "block", call(t, env, p, http.MethodPut, "/v2/accounts/"+blocked+"/status", "account_status", map[string]any{"status": "blocked"}), 0, http.StatusOK)
	ended := token(createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": p.Merchant}))
	apptest.Expect(t, "terminate", call(t, env, p, http.MethodDelete, "/v2/accounts/"+ended, "account_terminate", nil), 0, http.StatusOK)
	theirs := token(createAccount(t, env, other, map[string]any{"program": "account_eur", "merchant": other.Merchant}))
	env.Fund(t, mine, balancesOf(mineR)[0]["token"].(string), "EUR", 12345)

	tokens := []string{mine, virtual, merchant, blocked, ended, theirs, "6f0c5a2e-1d7b-4c3e-9a8f-0b1c2d3e4f50", "not-a-uuid"}
	found := 0
	for _, tok := range tokens {
		for _, partner := range []string{p.ID, ""} {
			want, wantErr := prepared.Account(context.Background(), partner, tok, false)
			got, gotErr := pooled.Account(context.Background(), partner, tok, false)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && !errors.Is(gotErr, wantErr)) {
				t.Errorf("account %s, partner %q: the statement answers %v, the function %v", tok, partner, wantErr, gotErr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("account %s, partner %q:\nstatement %+v\nfunction  %+v", tok, partner, want, got)
			}
			if wantErr == nil {
				found++
				if len(got.Balances) == 0 {
					t.Errorf("account %s read without its balances", tok)
				}
			}
		}
	}
	// 6 accounts read without a partner, 5 with P's (O's is not found).
	if found != 11 {
		t.Fatalf("%d reads found an account, want 11: the fixtures are not what this test thinks", found)
	}
}

// TestCardReadFunctionMatchesTheStatement is the card's counterpart: every
// card a lifecycle leaves (a customer's virtual card with a wallet token,
// 3-D Secure and groups, converted to plastic; an activated then
// terminated plastic card; a non-personalized one; another partner's),
// read through the card_read function and through the statement, with the
// partner and without, gives the same card or the same error.
func TestCardReadFunctionMatchesTheStatement(t *testing.T) {
	t.Parallel()
	c := newCardEnv(t)
	other := c.env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	open := func(pl postgres.Pooler) *postgres.CardStore {
		db, err := postgres.OpenWith(context.Background(), c.env.DBURL, postgres.Options{Pooler: pl, MaxOpen: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return postgres.NewCardStore(db)
	}
	prepared, pooled := open(postgres.PoolerNone), open(postgres.PoolerTransaction)

	ok := func(what string, r apptest.Response, status int) { t.Helper(); apptest.Expect(t, what, r, 0, status) }
	v := c.create(t, map[string]any{"account": c.acc, "type": "virtual", "emboss_name": "MARA VELIKOVA"}).Data["token"].(string)
	base := "/v2/cards/" + v
	ok("groups", c.do(t, http.MethodPut, base+"/groups", "card_groups", map[string]any{"limits": "limits_high", "usage": ""}), http.StatusOK)
	ok("3ds", c.do(t, http.MethodPost, base+"/3ds", "card_3ds_enrol", map[string]any{"otp_sms": "+46701234567", "biometric": true}), http.StatusOK)
	ok("wallet", c.do(t, http.MethodPost, base+"/wallets", "card_wallet_provision", map[string]any{"wallet": "google_pay", "device_name": "Pixel"}), http.StatusCreated)
	ok("convert", c.do(t, http.MethodPut, base+"/convert", "card_convert", map[string]any{"delivery_details": delivery()}), http.StatusOK)
	pl := c.create(t, map[string]any{"program": "card_eur", "type": "plastic", "delivery_details": delivery()}).Data["token"].(string)
	ok("activate", c.do(t, http.MethodPut, "/v2/cards/"+pl+"/activate", "card_activate", map[string]any{}), http.StatusOK)
	ok("terminate", c.do(t, http.MethodDelete, "/v2/cards/"+pl, "card_terminate", nil), http.StatusOK)
	c.create(t, map[string]any{"program": "card_eur", "type": "virtual"})
	theirs := call(t, c.env, other, http.MethodPost, "/v2/cards", "card_create", map[string]any{"program": "card_eur", "type": "virtual"})
	apptest.Expect(t, "their card", theirs, 0, http.StatusCreated)

	var tokens []string
	if err := c.env.App.DB.Select(&tokens, `SELECT token::text FROM cards ORDER BY created_at`); err != nil {
		t.Fatal(err)
	}
	tokens = append(tokens, "6f0c5a2e-1d7b-4c3e-9a8f-0b1c2d3e4f50", "not-a-uuid")
	found, wallets := 0, 0
	for _, tok := range tokens {
		for _, partner := range []string{c.p.ID, ""} {
			want, wantErr := prepared.Card(context.Background(), partner, tok, false)
			got, gotErr := pooled.Card(context.Background(), partner, tok, false)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && !errors.Is(gotErr, wantErr)) {
				t.Errorf("card %s, partner %q: the statement answers %v, the function %v", tok, partner, wantErr, gotErr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("card %s, partner %q:\nstatement %+v\nfunction  %+v", tok, partner, want, got)
			}
			if wantErr == nil {
				found++
				wallets += len(got.Wallets)
			}
		}
	}
	if n := len(tokens) - 2; found != 2*n-1 || wallets == 0 {
		t.Fatalf("%d reads found a card (want %d) with %d wallet tokens: the fixtures are not what this test thinks", found, 2*n-1, wallets)
	}
}
