package api_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres"
)

// TestSandboxResetWithRacingWrites: a partner's reset leaves it an empty sandbox (its
// objects unknown, lists empty, the same e-mail and idempotency key free
// again, pending deliveries canceled) with its keys and webhook endpoints
// working; another partner is untouched; nothing is deleted (the archive
// partner holds every moved row, the ledger still balances); production
// has no reset.
func TestSandboxResetWithRacingWrites(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	a, b := newTenant(t, env, "Reset A"), newTenant(t, env, "Reset B")
	user := validUser(a.p)
	user["email"] = "same.every.run@example.com"
	first := call(t, env, a.p, http.MethodPost, "/v2/users", "user_create", user)
	apptest.Expect(t, "user with a fixed e-mail", first, 0, http.StatusCreated)
	apptest.Expect(t, "the same e-mail again", call(t, env, a.p, http.MethodPost, "/v2/users", "user_create", user),
		emi.ErrDuplicateUser.Code, http.StatusConflict)
	keyed := callKeyed(t, env, a.p, "/v1/aml", "aml_check", "run-1", amlBody())
	apptest.Expect(t, "keyed AML check", keyed, 0, http.StatusCreated)
	var pendingBefore int
	if err := env.App.DB.Get(&pendingBefore, `SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		WHERE e.partner_id = $1`, a.p.ID); err != nil {
		t.Fatal(err)
	}
	bBefore := partnerRows(t, env, b.p.ID)

	r := call(t, env, a.p, http.MethodPost, "/v2/sandbox/reset", "sandbox_reset", map[string]any{})
	apptest.Expect(t, "sandbox_reset", r, 0, http.StatusOK)
	moved, _ := r.Data["moved"].(map[string]any)
	for _, kind := range []string{"users", "accounts", "cards", "transfers", "applications", "aml_checks", "events"} {
		if n, _ := moved[kind].(float64); n < 1 {
			t.Errorf("moved %v: want some %s", moved, kind)
		}
	}

	// Every object is unknown to the partner now.
	for param, tok := range a.tok {
		path := map[string]string{"user": "/v2/users/", "account": "/v2/accounts/", "card": "/v2/cards/",
			"transfer": "/v2/transfers/", "application": "/v3/applications/",
			"information_request": "/v2/information_requests/"}[param]
		op := map[string]string{"user": "user_details", "account": "account_details", "card": "card_details",
			"transfer": "transfer_details", "application": "application_details",
			"information_request": "information_request_details"}[param]
		if path == "" {
			continue
		}
		apptest.Expect(t, param+" after the reset", call(t, env, a.p, http.MethodGet, path+tok, op, nil),
			notFound[param].Code, http.StatusNotFound)
	}
	apptest.Expect(t, "the AML check after the reset", call(t, env, a.p, http.MethodPost, "/v1/sandbox/aml/"+a.tok["aml"],
		"sandbox_aml_review", map[string]any{"outcome": "cleared"}), emi.ErrAPIAMLNotFound.Code, http.StatusNotFound)
	if rows := partnerRows(t, env, a.p.ID); len(rows) != 0 {
		t.Errorf("rows left with the partner: %v", rows)
	}
	if l := listEvents(t, env, a.p, "/v2/events/1/100"); len(must(itemIDs(t, l))) != 0 {
		t.Errorf("events after the reset: %s", l)
	}
	// The same run again gets the same answers.
	apptest.Expect(t, "the fixed e-mail after the reset", call(t, env, a.p, http.MethodPost, "/v2/users", "user_create", user),
		0, http.StatusCreated)
	again := callKeyed(t, env, a.p, "/v1/aml", "aml_check", "run-1", amlBody())
	apptest.Expect(t, "the idempotency key after the reset", again, 0, http.StatusCreated)
	if again.Data["token"] == keyed.Data["token"] {
		t.Errorf("the key replayed the archived check %v", keyed.Data["token"])
	}
	// The endpoint and the keys stay; no delivery of an archived event is
	// still pending.
	apptest.Expect(t, "webhook endpoints", call(t, env, a.p, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil), 0, http.StatusOK)
	var pending int
	if err := env.App.DB.Get(&pending, `SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		JOIN partners p ON p.id = e.partner_id WHERE p.name LIKE 'Reset A (sandbox reset %' AND d.state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if pendingBefore == 0 || pending != 0 {
		t.Errorf("deliveries: %d before the reset, %d of archived events still pending", pendingBefore, pending)
	}
	// The other partner is untouched.
	if bAfter := partnerRows(t, env, b.p.ID); !equalCounts(bBefore, bAfter) {
		t.Errorf("the other partner's rows changed: %v, then %v", bBefore, bAfter)
	}
	apptest.Expect(t, "the other partner's user", call(t, env, b.p, http.MethodGet, "/v2/users/"+b.tok["user"], "user_details", nil),
		0, http.StatusOK)
	checkLedgerInvariants(t, env)
	var audited int
	if err := env.App.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'sandbox.reset' AND partner_id = $1`, a.p.ID); err != nil {
		t.Fatal(err)
	}
	if audited != 1 {
		t.Errorf("sandbox.reset audited %d times", audited)
	}

	t.Run("racing writes", func(t *testing.T) {
		// Users created while the partner resets: each answer is a
		// success or a client error, never 500, and every user is either
		// archived or the partner's.
		var wg sync.WaitGroup
		answers := make(chan apptest.Response, 12)
		for i := range 12 {
			wg.Go(func() {
				if i == 6 {
					answers <- call(t, env, a.p, http.MethodPost, "/v2/sandbox/reset", "sandbox_reset", map[string]any{})
					return
				}
				answers <- call(t, env, a.p, http.MethodPost, "/v2/users", "user_create", validUser(a.p))
			})
		}
		wg.Wait()
		close(answers)
		for res := range answers {
			if res.Status >= 500 {
				t.Errorf("an answer under a racing reset: %s", res)
			}
		}
	})

	t.Run("production has no reset", func(t *testing.T) {
		prod := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
		q := prod.NewPartner(t, emi.PartnerCreate{Name: "Prod"})
		apptest.Expect(t, "sandbox_reset in production", call(t, prod, q, http.MethodPost, "/v2/sandbox/reset", "sandbox_reset",
			map[string]any{}), emi.ErrRouteNotFound.Code, http.StatusNotFound)
	})
}

// partnerRows counts, for each table the reset moves, the partner's rows
// (tables without any are absent).
func partnerRows(t *testing.T, env *apptest.Env, partnerID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range postgres.SandboxResetTables() {
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM `+table+` WHERE partner_id = $1`, partnerID); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	var merchants int
	if err := env.App.DB.Get(&merchants, `SELECT count(*) FROM merchants WHERE partner_id = $1 AND kind <> 'master'`, partnerID); err != nil {
		t.Fatal(err)
	}
	if merchants > 0 {
		out["merchants"] = merchants
	}
	return out
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// callKeyed is call with an Idempotency-Key.
func callKeyed(t *testing.T, env *apptest.Env, p *apptest.Partner, path, op, key string, body any) apptest.Response {
	t.Helper()
	env.Clock.Advance(time.Second)
	return p.Do(t, apptest.Request{Method: http.MethodPost, Path: path, Operation: op, JSON: body,
		Header: map[string]string{"Idempotency-Key": key}})
}

// must returns the first of two values.
func must[T, U any](v T, _ U) T { return v }
